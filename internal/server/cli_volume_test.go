package server

import (
	"strings"
	"testing"
	"time"
)

// TestAnvilCLIVolumes drives a real server with `anvil volume connector`
// and `anvil volume target` (internal/cli, in process).
func TestAnvilCLIVolumes(t *testing.T) {
	s := serve(t)
	s.do("POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "vol-off"}`, 201)
	on := s.do("POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "vol-on"}`, 201)["uuid"].(string)
	for node, state := range map[string]string{"vol-off": "power off", "vol-on": "power on"} {
		s.do("PUT", "/v1/nodes/"+node+"/states/power", `{"target": "`+state+`"}`, 202)
		for deadline := time.Now().Add(testTimeout); s.do("GET", "/v1/nodes/"+node, "", 200)["power_state"] != state; {
			if time.Now().After(deadline) {
				t.Fatalf("%s never reached %s", node, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	env := map[string]string{"OS_ENDPOINT": s.base}
	run := func(args ...string) (string, string, error) {
		t.Helper()
		return runCLI(t, env, append([]string{"--retry-interval", "0"}, args...)...)
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("anvil %s: %v %s", strings.Join(args, " "), err, errOut)
		}
		return out
	}
	conn := strings.TrimSpace(mustRun("volume", "connector", "create", "--node", "vol-off", "--type", "iqn",
		"--connector-id", "iqn.1", "-f", "value", "-c", "uuid"))
	mustRun("volume", "connector", "set", conn, "--connector-id", "iqn.2", "--extra", "a=b")
	if out := mustRun("volume", "connector", "list", "--node", "vol-off", "--long", "-f", "value", "-c", "Connector ID", "-c", "Extra"); out != "iqn.2 a='b'\n" {
		t.Errorf("connector list: %q", out)
	}
	if _, errOut, err := run("volume", "connector", "set", conn, "--node", "vol-on"); err == nil ||
		!strings.Contains(errOut+err.Error(), `"volume connector update" can not be performed on node "`+on+`" while it is in state "power on". (HTTP 400)`) {
		t.Errorf("move to a powered-on node: %v %s", err, errOut)
	}
	target := strings.TrimSpace(mustRun("volume", "target", "create", "--node", "vol-off", "--type", "iscsi", "--boot-index", "0",
		"--volume-id", "v1", "--property", "auth_password=s3cret", "-f", "value", "-c", "uuid"))
	mustRun("volume", "target", "set", target, "--boot-index", "0", "--volume-id", "v2")
	if out := mustRun("volume", "target", "show", target, "-f", "value", "-c", "volume_id", "-c", "boot_index", "-c", "properties"); out != "0\n{'auth_password': '******'}\nv2\n" {
		t.Errorf("target show: %q", out)
	}
	mustRun("volume", "target", "unset", target, "--property", "auth_password")
	if out := mustRun("volume", "target", "delete", target); out != "Deleted volume target "+target+"\n" {
		t.Errorf("delete: %q", out)
	}
	mustRun("volume", "connector", "delete", conn)
	if out := mustRun("volume", "connector", "list", "-f", "value"); out != "" {
		t.Errorf("list after delete: %q", out)
	}
}
