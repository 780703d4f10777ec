package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBootDnsmasqConfig runs `anvil boot dnsmasq-config` and has Debian's
// dnsmasq check what it prints (dnsmasq --test -C): the configuration the
// command hands an operator is one dnsmasq accepts, chaining to the given
// boot endpoint. A missing or bad flag is one line on stderr and a
// non-zero exit, with nothing on stdout.
func TestBootDnsmasqConfig(t *testing.T) {
	dnsmasq := testbin.Need(t, "dnsmasq", "dnsmasq-base")
	run := func(args ...string) (stdout, stderr string, err error) {
		var out, errOut bytes.Buffer
		cmd := exec.Command(anvilBin, append([]string{"boot", "dnsmasq-config"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}

	conf, stderr, err := run("--interface", "eth1", "--subnet", "10.0.2.0/24", "--http-url", "http://10.0.2.100:6385/boot")
	if err != nil {
		t.Fatalf("anvil boot dnsmasq-config: %v\n%s", err, stderr)
	}
	for _, want := range []string{"interface=eth1", "dhcp-range=10.0.2.0,proxy", "http://10.0.2.100:6385/boot/boot.ipxe"} {
		if !strings.Contains(conf, want) {
			t.Errorf("configuration lacks %q:\n%s", want, conf)
		}
	}
	path := filepath.Join(t.TempDir(), "anvil.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dnsmasq, "--test", "-C", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "syntax check OK") {
		t.Fatalf("dnsmasq --test -C: %v: %s\n%s", err, out, conf)
	}

	for _, bad := range []struct {
		name string
		args []string
		want string
	}{
		{"no --subnet", []string{"--http-url", "http://10.0.2.100:6385/boot"}, "subnet"},
		{"bad --subnet", []string{"--subnet", "10.0.2.0/99", "--http-url", "http://10.0.2.100:6385/boot"}, "10.0.2.0/99"},
		{"option smuggled in --interface", []string{"--interface", "eth1\ndhcp-script=/bin/sh", "--subnet", "10.0.2.0/24",
			"--http-url", "http://10.0.2.100:6385/boot"}, "invalid interface name"},
	} {
		stdout, stderr, err := run(bad.args...)
		if err == nil || stdout != "" {
			t.Errorf("%s: err %v, stdout %q", bad.name, err, stdout)
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(stderr, bad.want) {
			t.Errorf("%s: stderr is not one line naming %q: %q", bad.name, bad.want, stderr)
		}
	}
}
