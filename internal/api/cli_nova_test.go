package api

import (
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBaremetalCLINova runs the real `baremetal` CLI for traits,
// portgroups, VIFs and allocations (ANVIL_BAREMETAL_CLI=1, like
// TestBaremetalCLI).
func TestBaremetalCLINova(t *testing.T) {
	bin := testbin.BaremetalCLI(t)
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--os-endpoint", srv.URL, "--os-auth-type", "none",
			"--max-retries", "0", "--os-baremetal-api-version", "latest"}, args...)...)
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
	jsonOf := func(args ...string) map[string]any {
		t.Helper()
		var m map[string]any
		out := mustRun(append(args, "-f", "json")...)
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return m
	}
	n := e.availableNode("cli-n", "baremetal")
	mustRun("node", "set", "cli-n", "--network-interface", "flat")

	mustRun("node", "add", "trait", "cli-n", "CUSTOM_GOLD", "HW_CPU_X86_VMX")
	if out := mustRun("node", "trait", "list", "cli-n", "-f", "value"); out != "CUSTOM_GOLD\nHW_CPU_X86_VMX\n" {
		t.Errorf("trait list %q", out)
	}
	mustRun("node", "remove", "trait", "cli-n", "HW_CPU_X86_VMX")
	if out, err := run("node", "add", "trait", "cli-n", "not_a_trait"); err == nil || !strings.Contains(out, "(HTTP 400)") {
		t.Errorf("bad trait: %v %s", err, out)
	}

	pg := jsonOf("port", "group", "create", "--node", n.UUID, "--name", "bond0", "--address", "52:54:00:aa:00:00", "--mode", "802.3ad")
	if pg["mode"] != "802.3ad" || pg["name"] != "bond0" {
		t.Errorf("port group create %v", pg)
	}
	port := jsonOf("port", "create", "52:54:00:aa:00:01", "--node", n.UUID, "--port-group", pg["uuid"].(string))
	if out := mustRun("port", "list", "--port-group", "bond0", "-f", "value", "-c", "Address"); out != "52:54:00:aa:00:01\n" {
		t.Errorf("ports of group %q", out)
	}
	mustRun("port", "group", "set", "bond0", "--extra", "k=v")
	if out := mustRun("port", "group", "list", "--node", "cli-n", "-f", "value", "-c", "Name"); out != "bond0\n" {
		t.Errorf("port group list %q", out)
	}

	mustRun("node", "vif", "attach", "cli-n", "vif-1")
	if out := mustRun("node", "vif", "list", "cli-n", "-f", "value"); out != "vif-1\n" {
		t.Errorf("vif list %q", out)
	}
	mustRun("node", "vif", "detach", "cli-n", "vif-1")

	a := jsonOf("allocation", "create", "--resource-class", "baremetal", "--trait", "CUSTOM_GOLD", "--name", "cli-a", "--wait", "30")
	if a["state"] != "active" || a["node_uuid"] != n.UUID {
		t.Errorf("allocation %v", a)
	}
	if out := mustRun("allocation", "list", "-f", "value", "-c", "Name"); out != "cli-a\n" {
		t.Errorf("allocation list %q", out)
	}
	failed := jsonOf("allocation", "create", "--resource-class", "nothing", "--name", "cli-b")
	e.cond.WaitIdle()
	if got := jsonOf("allocation", "show", "cli-b"); got["state"] != "error" ||
		got["last_error"] != "Failed to process allocation "+failed["uuid"].(string)+": no available nodes match the resource class nothing." {
		t.Errorf("unsatisfiable allocation %v", got)
	}
	mustRun("allocation", "delete", "cli-a", "cli-b")
	mustRun("port", "delete", port["uuid"].(string))
	mustRun("port", "group", "delete", "bond0")
}
