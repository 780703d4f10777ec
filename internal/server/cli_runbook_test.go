package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAnvilCLIRunbook: `anvil node clean --runbook` against a real server
// cleans the node with the runbook's steps (the CLI raises its default
// microversion to the runbooks' 1.92 for that request).
func TestAnvilCLIRunbook(t *testing.T) {
	s := serveWith(t, nil)
	call := func(method, path, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("X-OpenStack-Ironic-API-Version", "1.92")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		return string(raw)
	}
	call("POST", "/v1/runbooks", `{"name": "CUSTOM_CLI", "steps": [{"interface": "bios", "step": "apply_configuration", "order": 1,
		"args": {"settings": [{"name": "LogicalProc", "value": "Enabled"}]}}]}`, 201)
	call("POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "cli-rb"}`, 201)
	call("PUT", "/v1/nodes/cli-rb/traits/CUSTOM_CLI", "", 204)
	env := map[string]string{"OS_ENDPOINT": s.base}
	for _, args := range [][]string{
		{"node", "manage", "cli-rb", "--wait", "30"},
		{"node", "clean", "cli-rb", "--runbook", "CUSTOM_CLI", "--wait", "30"},
	} {
		if _, errOut, err := runCLI(t, env, args...); err != nil {
			t.Fatalf("anvil %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
	}
	if bios := call("GET", "/v1/nodes/cli-rb/bios", "", 200); !strings.Contains(bios, `"name": "LogicalProc"`) ||
		!strings.Contains(bios, `"value": "Enabled"`) {
		t.Errorf("bios after clean by runbook: %s", bios)
	}
}
