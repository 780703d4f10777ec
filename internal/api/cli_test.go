package api

import (
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBaremetalCLI runs the real `baremetal` CLI (python-ironicclient)
// against the API. It is slow (a Python start per command), so it runs only
// with ANVIL_BAREMETAL_CLI=1; it fails if the CLI is then missing.
func TestBaremetalCLI(t *testing.T) {
	bin := testbin.BaremetalCLI(t)
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--os-endpoint", srv.URL, "--os-auth-type", "none", "--max-retries", "0"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("baremetal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	mustRun("node", "create", "--driver", "fake-hardware", "--name", "cli-1", "--driver-info", "ipmi_password=pw")
	mustRun("node", "manage", "cli-1")
	mustRun("node", "provide", "cli-1")
	mustRun("node", "power", "on", "cli-1")
	mustRun("node", "set", "cli-1", "--extra", "rack=r1", "--description", "d")
	mustRun("node", "maintenance", "set", "cli-1", "--reason", "why")
	mustRun("node", "maintenance", "unset", "cli-1")
	mustRun("node", "validate", "cli-1")
	mustRun("node", "boot", "device", "show", "cli-1")
	uuid := strings.TrimSpace(mustRun("node", "show", "cli-1", "-f", "value", "-c", "uuid"))
	mustRun("port", "create", "52:54:00:aa:bb:01", "--node", uuid)
	mustRun("port", "list", "--long")
	mustRun("driver", "list")
	mustRun("conductor", "list")
	mustRun("node", "history", "list", "cli-1")
	var shown map[string]any
	if err := json.Unmarshal([]byte(mustRun("node", "show", "cli-1", "-f", "json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown["provision_state"] != "available" || shown["power_state"] != "power on" || shown["extra"].(map[string]any)["rack"] != "r1" {
		t.Errorf("node show: %v", shown)
	}
	if out := mustRun("node", "list", "-f", "value", "-c", "Provisioning State"); strings.TrimSpace(out) != "available" {
		t.Errorf("node list: %q", out)
	}
	out, err := run("node", "show", "nope")
	if err == nil || !strings.Contains(out, "Node nope could not be found. (HTTP 404)") {
		t.Errorf("missing node: %v %s", err, out)
	}
	out, err = run("node", "inspect", "cli-1")
	if err == nil || !strings.Contains(out, `can not be performed on node`) || !strings.Contains(out, "(HTTP 400)") {
		t.Errorf("inspect from available: %v %s", err, out)
	}
	mustRun("node", "deploy", "cli-1", "--config-drive", `{"meta_data":{"hostname":"h"}}`)
	mustRun("node", "undeploy", "cli-1")
	mustRun("node", "delete", "cli-1")
}
