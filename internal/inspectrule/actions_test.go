package inspectrule

// Ported from Ironic master's TestActions
// (ironic/tests/unit/common/test_inspection_rule.py) and TestApplyRules.

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestActions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(n *model.Node, pd map[string]any)
		action string
		check  func(n *model.Node, pd map[string]any) any // returns what to compare
		want   any
	}{
		{"set-attribute slash", nil, `{"op": "set-attribute", "args": {"path": "driver_info/new", "value": {"new_key": "test_value"}}}`,
			func(n *model.Node, _ map[string]any) any { return n.DriverInfo["new"] }, map[string]any{"new_key": "test_value"}},
		{"set-attribute dot", nil, `{"op": "set-attribute", "args": {"path": "driver_info.next.nested.deeper", "value": {"next_key": "test_value"}}}`,
			func(n *model.Node, _ map[string]any) any { return n.DriverInfo["next"] },
			map[string]any{"nested": map[string]any{"deeper": map[string]any{"next_key": "test_value"}}}},
		{"set-attribute top level", nil, `{"op": "set-attribute", "args": {"path": "/resource_class", "value": "big"}}`,
			func(n *model.Node, _ map[string]any) any { return n.ResourceClass }, "big"},
		{"set-attribute interface", nil, `{"op": "set-attribute", "args": {"path": "/deploy_interface", "value": "direct"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Interfaces.Deploy }, "direct"},
		{"set-attribute interpolated", nil, `{"op": "set-attribute", "args": {"path": "/properties/cpu_arch", "value": "{inventory[cpu][architecture]}"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Properties["cpu_arch"] }, "x86_64"},
		{"set-attribute path not formatted", nil, `{"op": "set-attribute", "args": {"path": "/extra/{node.driver}", "value": 1}}`,
			func(n *model.Node, _ map[string]any) any { return n.Extra }, map[string]any{"{node.driver}": 1.0}},
		{"extend-attribute", func(n *model.Node, _ map[string]any) { n.Extra = model.JSON{"tags": []any{"existing"}} },
			`{"op": "extend-attribute", "args": {"path": "extra/tags", "value": "new_tag"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Extra["tags"] }, []any{"existing", "new_tag"}},
		{"extend-attribute unique", func(n *model.Node, _ map[string]any) { n.Extra = model.JSON{"tags": []any{"a"}} },
			`{"op": "extend-attribute", "args": {"path": "extra/tags", "value": "a", "unique": true}}`,
			func(n *model.Node, _ map[string]any) any { return n.Extra["tags"] }, []any{"a"}},
		{"extend-attribute new", nil, `{"op": "extend-attribute", "args": {"path": "extra/list", "value": 1}}`,
			func(n *model.Node, _ map[string]any) any { return n.Extra["list"] }, []any{1.0}},
		{"del-attribute", func(n *model.Node, _ map[string]any) { n.Extra = model.JSON{"to_delete": "value"} },
			`{"op": "del-attribute", "args": {"path": "extra/to_delete"}}`,
			func(n *model.Node, _ map[string]any) any { return len(n.Extra) }, 0},
		{"del-attribute field", func(n *model.Node, _ map[string]any) { n.Description = "x" },
			`{"op": "del-attribute", "args": {"path": "description"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Description }, ""},
		{"add-trait", nil, `{"op": "add-trait", "args": {"name": "CUSTOM_AWESOME_TRAIT"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Traits }, []string{"CUSTOM_AWESOME_TRAIT"}},
		{"add-trait twice", func(n *model.Node, _ map[string]any) { n.Traits = []string{"CUSTOM_A"} },
			`{"op": "add-trait", "args": ["CUSTOM_A"]}`,
			func(n *model.Node, _ map[string]any) any { return n.Traits }, []string{"CUSTOM_A"}},
		{"remove-trait", func(n *model.Node, _ map[string]any) { n.Traits = []string{"CUSTOM_A", "CUSTOM_AWESOME_TRAIT"} },
			`{"op": "remove-trait", "args": {"name": "CUSTOM_AWESOME_TRAIT"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Traits }, []string{"CUSTOM_A"}},
		{"remove-trait absent", nil, `{"op": "remove-trait", "args": {"name": "CUSTOM_X"}}`,
			func(n *model.Node, _ map[string]any) any { return len(n.Traits) }, 0},
		{"set-capability", nil, `{"op": "set-capability", "args": {"name": "boot_mode", "value": "uefi"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Properties["capabilities"] }, "boot_mode:uefi"},
		{"set-capability appends", func(n *model.Node, _ map[string]any) { n.Properties = model.JSON{"capabilities": "boot_mode:bios"} },
			`{"op": "set-capability", "args": {"name": "boot_mode", "value": "uefi"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Properties["capabilities"] }, "boot_mode:bios,boot_mode:uefi"},
		{"unset-capability", func(n *model.Node, _ map[string]any) {
			n.Properties = model.JSON{"capabilities": "boot_mode:uefi,other:value"}
		},
			`{"op": "unset-capability", "args": {"name": "boot_mode"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Properties["capabilities"] }, "other:value"},
		{"set-plugin-data", func(_ *model.Node, pd map[string]any) { pd["existing"] = "data" },
			`{"op": "set-plugin-data", "args": {"path": "test_key", "value": "test_value"}}`,
			func(_ *model.Node, pd map[string]any) any { return pd }, map[string]any{"existing": "data", "test_key": "test_value"}},
		{"set-plugin-data nested", nil, `{"op": "set-plugin-data", "args": {"path": "a.b", "value": "{inventory[cpu][count]}"}}`,
			func(_ *model.Node, pd map[string]any) any { return pd }, map[string]any{"a": map[string]any{"b": "4"}}},
		{"extend-plugin-data", func(_ *model.Node, pd map[string]any) { pd["test_list"] = []any{"item1"} },
			`{"op": "extend-plugin-data", "args": {"path": "test_list", "value": "item2"}}`,
			func(_ *model.Node, pd map[string]any) any { return pd }, map[string]any{"test_list": []any{"item1", "item2"}}},
		{"unset-plugin-data", func(_ *model.Node, pd map[string]any) { pd["to_remove"], pd["keep"] = "value", "value" },
			`{"op": "unset-plugin-data", "args": {"path": "to_remove"}}`,
			func(_ *model.Node, pd map[string]any) any { return pd }, map[string]any{"keep": "value"}},
		{"unset-plugin-data last nested key", func(_ *model.Node, pd map[string]any) { pd["a"], pd["k"] = map[string]any{"b": 1}, 1 },
			`{"op": "unset-plugin-data", "args": {"path": "a.b"}}`,
			func(_ *model.Node, pd map[string]any) any { return pd }, map[string]any{"k": 1}},
		{"list loop", nil, `{"op": "set-attribute", "args": {"path": "{item[path]}", "value": "{item[value]}"},
			"loop": [{"path": "driver_info/ipmi_username", "value": "cidadmin"},
				{"path": "driver_info/ipmi_password", "value": "cidpassword"},
				{"path": "driver_info/ipmi_address", "value": "{inventory[bmc_address]}"}]}`,
			func(n *model.Node, _ map[string]any) any { return n.DriverInfo },
			map[string]any{"ipmi_username": "cidadmin", "ipmi_password": "cidpassword", "ipmi_address": "192.168.1.100"}},
		{"dict loop", nil, `{"op": "set-attribute", "args": {"path": "{item[path]}", "value": "{item[value]}"},
			"loop": {"path": "driver_info/ipmi_address", "value": "{inventory[bmc_address]}"}}`,
			func(n *model.Node, _ map[string]any) any { return n.DriverInfo }, map[string]any{"ipmi_address": "192.168.1.100"}},
		{"masked secret", nil, `{"op": "set-attribute", "args": {"path": "extra/pw", "value": "{inventory[bmc_password]}"}}`,
			func(n *model.Node, _ map[string]any) any { return n.Extra["pw"] }, "***"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, pd := testNode(), map[string]any{}
			if tc.setup != nil {
				tc.setup(n, pd)
			}
			if err := applyOne(t, n, pd, tc.action); err != nil {
				t.Fatal(err)
			}
			if got := tc.check(n, pd); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
			if n.UUID != testNode().UUID || n.ProvisionState != "inspecting" {
				t.Fatalf("node identity changed: %+v", n)
			}
		})
	}
}

// TestActionErrors is test_action_error_cases and test_fail_action.
func TestActionErrors(t *testing.T) {
	for _, tc := range []struct{ name, action, err string }{
		{"fail", `{"op": "fail", "args": {"msg": "Test failure"}}`, "Failed to inspect hardware. Reason: Test failure"},
		{"fail not formatted", `{"op": "fail", "args": {"msg": "{node.driver}"}}`, "Failed to inspect hardware. Reason: {node.driver}"},
		{"set nested on a string", `{"op": "set-attribute", "args": {"path": "driver.some_key", "value": "test"}}`,
			"Inspection rule action execution failed. Reason: Failed to set attribute driver.some_key with value test: 'str' object does not support item assignment"},
		{"extend a string", `{"op": "extend-attribute", "args": {"path": "driver", "value": "new_item"}}`,
			"Inspection rule action execution failed. Reason: Failed to extend attribute driver: Inspection rule action execution failed. Reason: Cannot extend non-list attribute driver with value new_item"},
		{"del nested on a string", `{"op": "del-attribute", "args": {"path": "driver.nonexistent_key"}}`,
			"Inspection rule action execution failed. Reason: Failed to delete attribute at driver.nonexistent_key: 'str' object doesn't support item deletion"},
		{"del missing key", `{"op": "del-attribute", "args": {"path": "extra/nope"}}`,
			"Inspection rule action execution failed. Reason: Failed to delete attribute at extra/nope: 'nope'"},
		{"bad log level", `{"op": "log", "args": {"msg": "test message", "level": "invalid_level"}}`,
			"Inspection rule execution failed. Reason: Invalid log level: invalid_level. Choose from {'critical', 'debug', 'error', 'info', 'warning'}"},
		{"unknown field", `{"op": "set-attribute", "args": {"path": "/nope", "value": 1}}`,
			"Inspection rule action execution failed. Reason: Failed to set attribute /nope with value 1: 'Node' object has no attribute 'nope'"},
		{"extend a None field", `{"op": "extend-attribute", "args": {"path": "/name", "value": "x"}}`,
			"Inspection rule action execution failed. Reason: Failed to extend attribute /name: Inspection rule action execution failed. Reason: Cannot extend non-list attribute /name with value x"},
		// Anvil: the conductor's fields.
		{"conductor field", `{"op": "set-attribute", "args": {"path": "/provision_state", "value": "active"}}`,
			"Inspection rule action execution failed. Reason: Failed to set attribute /provision_state with value active: the conductor owns the node's provision_state"},
		{"wrong type", `{"op": "set-attribute", "args": {"path": "/name", "value": 5}}`,
			"Inspection rule action execution failed. Reason: Failed to set attribute /name with value 5: name: json: cannot unmarshal"},
		{"capability not a string", `{"op": "set-capability", "args": {"name": "cpus", "value": 4}}`,
			"Inspection rule action execution failed. Reason: Failed to set capability cpus: sequence item 1: expected str instance, int found"},
		{"condition error", `{"op": "log", "args": {"msg": "x"}}], "conditions": [{"op": "gt", "args": {"values": ["{inventory[memory][physical_mb]}", 1024]}}`,
			"Failed to apply rule 00000000-0000-0000-0000-000000000001 to node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123: '>' not supported between instances of 'int' and 'str'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			before := *n
			err := applyOne(t, n, map[string]any{}, tc.action)
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("err = %v\nwant prefix %s", err, tc.err)
			}
			if _, ok := err.(*Failure); !ok {
				t.Fatalf("%T is not a *Failure", err)
			}
			if n.Driver != before.Driver || n.ProvisionState != before.ProvisionState {
				t.Fatalf("node changed by a failed action: %+v", n)
			}
		})
	}
}

// TestApplyOrder is TestApplyRules: rules run by descending priority,
// ties in the given order; a rule whose conditions fail is skipped.
func TestApplyOrder(t *testing.T) {
	inv, _ := fixture()
	rules := []*model.InspectionRule{
		rule(t, `{"uuid": "r1", "priority": 10, "actions": [{"op": "extend-attribute", "args": {"path": "extra/order", "value": "r1"}}]}`),
		rule(t, `{"uuid": "r2", "priority": 90, "actions": [{"op": "extend-attribute", "args": {"path": "extra/order", "value": "r2"}}]}`),
		rule(t, `{"uuid": "r3", "priority": 10, "actions": [{"op": "extend-attribute", "args": {"path": "extra/order", "value": "r3"}}]}`),
		rule(t, `{"uuid": "r4", "priority": 99, "conditions": [{"op": "is-true", "args": {"value": "{node.maintenance}"}}],
			"actions": [{"op": "fail", "args": {"msg": "never"}}]}`),
		rule(t, `{"uuid": "r5", "priority": 50, "conditions": [{"op": "!is-true", "args": {"value": "{node.maintenance}"}}],
			"actions": [{"op": "extend-attribute", "args": {"path": "extra/order", "value": "{node.extra[order]}"}}]}`),
	}
	n := testNode()
	var logs bytes.Buffer
	err := Apply(context.Background(), rules, inv, &Target{Node: n, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"r2", "['r2']", "r1", "r3"}
	if !reflect.DeepEqual(n.Extra["order"], want) {
		t.Fatalf("order = %v, want %v", n.Extra["order"], want)
	}
	if !strings.Contains(logs.String(), "rule=r2") || strings.Contains(logs.String(), "rule=r4") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestApplyNoMutationOnFailure: a fail action ends the rules; later rules
// do not run.
func TestApplyStopsAtFailure(t *testing.T) {
	inv, _ := fixture()
	rules := []*model.InspectionRule{
		rule(t, `{"uuid": "a", "priority": 2, "actions": [{"op": "fail", "args": ["stop"]}]}`),
		rule(t, `{"uuid": "b", "priority": 1, "actions": [{"op": "add-trait", "args": ["CUSTOM_LATE"]}]}`),
	}
	n := testNode()
	err := Apply(context.Background(), rules, inv, &Target{Node: n})
	if err == nil || err.Error() != "Failed to inspect hardware. Reason: stop" || len(n.Traits) != 0 {
		t.Fatalf("err %v, traits %v", err, n.Traits)
	}
}
