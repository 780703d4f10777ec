package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNovaFlowWithBaremetalCLI is what Nova's ironic driver asks of a
// node, through the real `baremetal` CLI against the real `anvil serve`:
// traits, a port group with its port, an allocation by resource class and
// trait, a VIF, deploy, and undeploy releasing the allocation and the VIF.
func TestNovaFlowWithBaremetalCLI(t *testing.T) {
	requireBaremetal(t)
	base := startServer(t)
	bm := func(args ...string) string {
		t.Helper()
		res := run(t, base, "", "baremetal", append([]string{"--os-baremetal-api-version", "latest"}, args...)...)
		if res.code != 0 {
			t.Fatalf("baremetal %s: exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
		}
		return res.stdout
	}
	show := func(args ...string) map[string]any {
		t.Helper()
		var m map[string]any
		out := bm(append(args, "-f", "json")...)
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return m
	}
	node := show("node", "create", "--driver", "fake-hardware", "--name", "nova-1", "--resource-class", "baremetal",
		"--network-interface", "flat")
	uuid := node["uuid"].(string)
	bm("node", "manage", "nova-1", "--wait", "60")
	bm("node", "provide", "nova-1", "--wait", "60")
	bm("node", "power", "off", "nova-1", "--power-timeout", "60")
	bm("node", "add", "trait", "nova-1", "CUSTOM_GOLD")
	pg := show("port", "group", "create", "--node", uuid, "--name", "bond0", "--address", "52:54:00:aa:10:00")
	port := show("port", "create", "52:54:00:aa:10:01", "--node", uuid, "--port-group", pg["uuid"].(string))

	a := show("allocation", "create", "--resource-class", "baremetal", "--trait", "CUSTOM_GOLD", "--wait", "60")
	if a["state"] != "active" || a["node_uuid"] != uuid {
		t.Fatalf("allocation %v", a)
	}
	if got := show("node", "show", "nova-1"); got["instance_uuid"] != a["uuid"] || got["allocation_uuid"] != a["uuid"] {
		t.Fatalf("allocated node: instance %v allocation %v", got["instance_uuid"], got["allocation_uuid"])
	}
	bm("node", "vif", "attach", "nova-1", "nova-vif-1")
	if got := show("port", "group", "show", "bond0")["internal_info"].(map[string]any)["tenant_vif_port_id"]; got != "nova-vif-1" {
		t.Fatalf("VIF on the port group: %v", got)
	}
	bm("node", "deploy", "nova-1", "--wait", "120")
	bm("node", "undeploy", "nova-1", "--wait", "120")
	got := show("node", "show", "nova-1")
	if got["provision_state"] != "available" || got["instance_uuid"] != nil || got["allocation_uuid"] != nil {
		t.Fatalf("after undeploy: %v %v %v", got["provision_state"], got["instance_uuid"], got["allocation_uuid"])
	}
	if out := bm("node", "vif", "list", "nova-1", "-f", "value"); out != "" {
		t.Fatalf("VIFs left after undeploy: %q", out)
	}
	if out := bm("allocation", "list", "-f", "value", "-c", "UUID"); out != "" {
		t.Fatalf("allocations left after undeploy: %q", out)
	}
	bm("port", "delete", port["uuid"].(string))
	bm("port", "group", "delete", "bond0")
}
