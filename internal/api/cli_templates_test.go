package api

import (
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBaremetalCLIDeployTemplates drives /v1/deploy_templates and
// /v1/chassis with the real `baremetal deploy template` and `baremetal
// chassis` commands (python-ironicclient).
func TestBaremetalCLIDeployTemplates(t *testing.T) {
	bin := testbin.BaremetalCLI(t)
	srv := httptest.NewServer(newEnv(t).h)
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
	steps := `[{"interface": "bios", "step": "apply_configuration", "args": {"settings": [{"name": "LogicalProc", "value": "Enabled"}]}, "priority": 150}]`
	mustRun("deploy", "template", "create", "CUSTOM_HYPERTHREADING_ON", "--steps", steps, "--extra", "a=b")
	var shown map[string]any
	if err := json.Unmarshal([]byte(mustRun("deploy", "template", "show", "CUSTOM_HYPERTHREADING_ON", "-f", "json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown["name"] != "CUSTOM_HYPERTHREADING_ON" || len(shown["steps"].([]any)) != 1 {
		t.Errorf("show: %v", shown)
	}
	mustRun("deploy", "template", "set", "CUSTOM_HYPERTHREADING_ON", "--name", "CUSTOM_HT")
	if out := mustRun("deploy", "template", "list", "-f", "value", "-c", "Name"); strings.TrimSpace(out) != "CUSTOM_HT" {
		t.Errorf("list: %q", out)
	}
	mustRun("deploy", "template", "list", "--long")
	out, err := run("deploy", "template", "create", "not-a-trait", "--steps", steps)
	if err == nil || !strings.Contains(out, "(HTTP 400)") {
		t.Errorf("bad name: %v %s", err, out)
	}
	mustRun("deploy", "template", "delete", "CUSTOM_HT")

	chassis := strings.TrimSpace(mustRun("chassis", "create", "--description", "rack 1", "-f", "value", "-c", "uuid"))
	mustRun("node", "create", "--driver", "fake-hardware", "--name", "racked", "--chassis-uuid", chassis)
	if out := mustRun("node", "list", "--chassis", chassis, "-f", "value", "-c", "Name"); strings.TrimSpace(out) != "racked" {
		t.Errorf("node list --chassis: %q", out)
	}
	mustRun("chassis", "set", chassis, "--description", "rack 2", "--extra", "row=a")
	if out := mustRun("chassis", "list", "-f", "value", "-c", "Description"); strings.TrimSpace(out) != "rack 2" {
		t.Errorf("chassis list: %q", out)
	}
	if out, err := run("chassis", "delete", chassis); err == nil || !strings.Contains(out, "contains nodes") {
		t.Errorf("delete a chassis with nodes: %v %s", err, out)
	}
	mustRun("node", "delete", "racked")
	mustRun("chassis", "delete", chassis)
	out, err = run("deploy", "template", "show", "CUSTOM_HT")
	if err == nil || !strings.Contains(out, "Deploy template CUSTOM_HT could not be found. (HTTP 404)") {
		t.Errorf("deleted: %v %s", err, out)
	}
}
