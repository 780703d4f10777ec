package api

import (
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBaremetalCLIVendorAndMore runs the real `baremetal` CLI's vendor
// passthru, inject NMI, console, boot mode and volume commands against the API (with ANVIL_BAREMETAL_CLI=1, as
// TestBaremetalCLI).
func TestBaremetalCLIVendorAndMore(t *testing.T) {
	bin := testbin.BaremetalCLI(t)
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--os-endpoint", srv.URL, "--os-auth-type", "none", "--max-retries", "0",
			"--os-baremetal-api-version", "latest"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(want string, args ...string) {
		t.Helper()
		out, err := run(args...)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("baremetal %s: %v\n%s\nwant %q", strings.Join(args, " "), err, out, want)
		}
	}
	fails := func(want string, args ...string) {
		t.Helper()
		out, err := run(args...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("baremetal %s should fail with %q: %v\n%s", strings.Join(args, " "), want, err, out)
		}
	}
	must("", "node", "create", "--driver", "fake-hardware", "--name", "cli-v")
	must("third_method_sync", "node", "passthru", "list", "cli-v")
	// FakeVendorB answers a bare true, which the CLI cannot print as a
	// table (the same against Ironic): its call reached the method.
	fails("'bool' object has no attribute 'items'", "node", "passthru", "call", "--arg", "bar=meow", "cli-v", "third_method_sync")
	must("", "node", "passthru", "call", "--arg", "bar=kazoo", "cli-v", "second_method")
	fails("Parameter 'bar' not passed to method 'third_method_sync'.", "node", "passthru", "call", "cli-v", "third_method_sync")
	fails("No handler for method x", "driver", "passthru", "call", "fake-hardware", "x")
	fails("Driver fake-hardware does not support inject_nmi", "node", "inject", "nmi", "cli-v")
	must("", "node", "console", "enable", "cli-v")
	must("True", "node", "console", "show", "cli-v")
	must("", "node", "boot", "mode", "set", "cli-v", "uefi")
	must("", "volume", "connector", "list")
}
