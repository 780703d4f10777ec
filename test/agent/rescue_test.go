package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// TestAgentRescue: an active node with rescue_interface "agent" is rescued:
// the agent receives the rescue password only as a SHA-512 crypt hash and
// stores it under its root directory; instance_info keeps only the hash; the
// plain password appears in no API response and no log. Unrescue boots from
// disk and returns the node to active.
func TestAgentRescue(t *testing.T) {
	api, server := startServerProc(t, "--log-level", "debug")
	const mac = "52:54:00:dd:00:01"
	const password = "Pl4in-Rescue-Secret-7f3a"
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "rescue-node", "driver": "fake-hardware",
		"rescue_interface": "agent"}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": mac})
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")
	provision(t, api, node, "active")
	waitState(t, api, node, "active")

	root := writeFixture(t, map[string]string{"sys/class/net/eth0/address": mac + "\n"})
	agent := startAgentRoot(t, api, root, tempDisk(t, mib, 0))
	var responses strings.Builder
	r := mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "rescue", "rescue_password": password})
	responses.Write(r.Body)
	got := waitState(t, api, node, "rescue")
	if got["last_error"] != nil {
		t.Fatalf("last_error after rescue: %v", got["last_error"])
	}
	for _, path := range []string{"/v1/nodes/" + node, "/v1/nodes/detail", "/v1/nodes/" + node + "/history?detail=true"} {
		responses.Write(mustCall(t, 200, "GET", api+path, nil).Body)
	}
	ii := getNode(t, api, node)["instance_info"].(map[string]any)
	if _, ok := ii["rescue_password"]; ok {
		t.Errorf("instance_info still holds rescue_password after hashing: %v", ii)
	}
	if _, ok := ii["hashed_rescue_password"]; !ok {
		t.Errorf("instance_info has no hashed_rescue_password: %v", ii)
	}

	b, err := os.ReadFile(filepath.Join(root, "etc", "anvil-rescue-password"))
	if err != nil {
		t.Fatalf("the agent stored no rescue password: %v", err)
	}
	hash := strings.TrimSpace(string(b))
	if !ipa.IsCryptHash(hash) || ipa.SHA512Crypt(password, hash[3:19]) != hash {
		t.Fatalf("stored rescue password %q is not the SHA-512 crypt hash of the password", hash)
	}
	if st, _ := os.Stat(filepath.Join(root, "etc", "anvil-rescue-password")); st.Mode().Perm() != 0o600 {
		t.Errorf("rescue password file mode %v, want 0600", st.Mode().Perm())
	}

	provision(t, api, node, "unrescue")
	got = waitState(t, api, node, "active")
	if got["last_error"] != nil {
		t.Fatalf("last_error after unrescue: %v", got["last_error"])
	}
	if ii := got["instance_info"].(map[string]any); ii["hashed_rescue_password"] != nil || ii["rescue_password"] != nil {
		t.Errorf("instance_info after unrescue = %v", ii)
	}
	if bd := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/management/boot_device", nil).JSON(t); bd["boot_device"] != "disk" {
		t.Errorf("boot device after unrescue = %v, want disk", bd["boot_device"])
	}
	if got["power_state"] != "power on" {
		t.Errorf("power_state after unrescue = %v", got["power_state"])
	}
	responses.Write(mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/history?detail=true", nil).Body)

	if strings.Contains(responses.String(), password) {
		t.Errorf("the plain rescue password appears in an API response")
	}
	agent.Stop(t)
	if strings.Contains(agent.Logs.String(), password) || strings.Contains(agent.Logs.String(), hash) {
		t.Errorf("the agent logged the rescue password or its hash")
	}
	if strings.Contains(server.Logs.String(), password) {
		t.Errorf("the server logged the plain rescue password")
	}
}
