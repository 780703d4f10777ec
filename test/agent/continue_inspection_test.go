package agent_test

import (
	"net/http"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

func callVersion(t *testing.T, version, method, url string, body any) resp {
	t.Helper()
	return testbin.Call(t, version, method, url, body)
}

// TestContinueInspection: the test plays a ramdisk that pushes its inventory
// (POST /v1/continue_inspection, 1.84) for a node in inspect wait, found by
// the MACs of the inventory. Once the lookup issued a token, a post without
// it (or with a wrong one) is refused with 401 and changes nothing, as a
// heartbeat; with it the node returns to manageable with its properties, a
// new port, the stored inventory and the rest of the data as plugin_data.
// Before any lookup (IPA posts first, then looks up) a post needs no token,
// as in Ironic.
func TestContinueInspection(t *testing.T) {
	api := startServer(t)
	const mac1, mac2 = "52:54:00:ee:00:01", "52:54:00:ee:00:02"
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "push-node", "driver": "fake-hardware",
		"inspect_interface": "agent"}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": mac1})
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")

	data := map[string]any{
		"inventory": map[string]any{
			"cpu":        map[string]any{"count": 2, "architecture": "x86_64", "model_name": "Pushed CPU"},
			"memory":     map[string]any{"physical_mb": 4096, "total": int64(4096) << 20},
			"disks":      []any{map[string]any{"name": "/dev/vda", "size": int64(20) << 30, "rotational": false}},
			"interfaces": []any{map[string]any{"name": "eth0", "mac_address": mac1}, map[string]any{"name": "eth1", "mac_address": mac2}},
		},
		"extra_plugin_field": "x",
	}
	// Not inspecting: a plain 404.
	if r := callVersion(t, "1.84", "POST", api+"/v1/continue_inspection", data); r.Status != http.StatusNotFound {
		t.Fatalf("continue_inspection for a manageable node: HTTP %d: %s", r.Status, r.Body)
	}
	provision(t, api, node, "inspect")
	waitState(t, api, node, "inspect wait")
	if r := callVersion(t, "1.83", "POST", api+"/v1/continue_inspection", data); r.Status != http.StatusNotFound {
		t.Fatalf("continue_inspection at 1.83: HTTP %d, want 404", r.Status)
	}
	if r := callVersion(t, "1.84", "POST", api+"/v1/continue_inspection", map[string]any{"x": 1}); r.Status != http.StatusBadRequest {
		t.Fatalf("continue_inspection without an inventory: HTTP %d, want 400", r.Status)
	}
	// The agent looked up: its token is required from then on.
	refused := func(when string) {
		t.Helper()
		if r := callVersion(t, "1.84", "POST", api+"/v1/continue_inspection", data); r.Status != http.StatusUnauthorized {
			t.Fatalf("continue_inspection %s: HTTP %d: %s", when, r.Status, r.Body)
		}
	}
	lk := mustCall(t, 200, "GET", api+"/v1/lookup?addresses="+mac1, nil).JSON(t)
	token, _ := lk["config"].(map[string]any)["agent_token"].(string)
	refused("without a token after lookup")
	data["agent_token"] = token + "x"
	refused("with a wrong token")
	if got := getNode(t, api, node); got["provision_state"] != "inspect wait" || got["properties"].(map[string]any)["cpus"] != nil {
		t.Fatalf("a refused continue_inspection changed the node: %v %v", got["provision_state"], got["properties"])
	}
	if ports := mustCall(t, 200, "GET", api+"/v1/ports?node="+node, nil).JSON(t)["ports"].([]any); len(ports) != 1 {
		t.Fatalf("a refused continue_inspection created ports: %v", ports)
	}
	data["agent_token"] = token
	r := callVersion(t, "1.84", "POST", api+"/v1/continue_inspection", data)
	if r.Status != http.StatusAccepted || r.JSON(t)["uuid"] != node {
		t.Fatalf("continue_inspection: HTTP %d: %s", r.Status, r.Body)
	}
	got := waitState(t, api, node, "manageable")
	props := got["properties"].(map[string]any)
	if props["cpus"] != float64(2) || props["memory_mb"] != float64(4096) || props["local_gb"] != float64(19) || props["cpu_arch"] != "x86_64" {
		t.Errorf("properties after pushed inspection = %v", props)
	}
	ports := mustCall(t, 200, "GET", api+"/v1/ports?node="+node+"&fields=address", nil).JSON(t)["ports"].([]any)
	if len(ports) != 2 {
		t.Errorf("ports after pushed inspection = %v", ports)
	}
	stored := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/inventory", nil).JSON(t)
	inv := stored["inventory"].(map[string]any)
	if inv["cpu"].(map[string]any)["model_name"] != "Pushed CPU" {
		t.Errorf("stored inventory = %v", inv)
	}
	if pd, _ := stored["plugin_data"].(map[string]any); pd["extra_plugin_field"] != "x" || pd["agent_token"] != nil {
		t.Errorf("plugin_data = %v", stored["plugin_data"])
	}

	// IPA's order: the inventory first, without a token, then the lookup.
	provision(t, api, node, "inspect")
	waitState(t, api, node, "inspect wait")
	delete(data, "agent_token")
	data["inventory"].(map[string]any)["cpu"].(map[string]any)["count"] = 4
	if r := callVersion(t, "1.84", "POST", api+"/v1/continue_inspection", data); r.Status != http.StatusAccepted {
		t.Fatalf("continue_inspection before any lookup: HTTP %d: %s", r.Status, r.Body)
	}
	if got := waitState(t, api, node, "manageable"); got["properties"].(map[string]any)["cpus"] != float64(4) {
		t.Errorf("properties after IPA-order inspection = %v", got["properties"])
	}
}
