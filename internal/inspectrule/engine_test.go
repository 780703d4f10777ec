package inspectrule

// The cases below are ported from Ironic master's
// ironic/tests/unit/common/test_inspection_rule.py (TestOperators,
// TestActions, TestInterpolation, TestValidation, TestShallowMask), with
// the same inputs and expectations; Anvil-specific cases say so.

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// fixture is the inventory and plugin data of Ironic's TestInspectionRules.
func fixture() (map[string]any, map[string]any) {
	var inv, pd map[string]any
	mustJSON(`{"cpu": {"count": 4, "architecture": "x86_64"},
		"memory": {"total": 8192, "physical_mb": 8192},
		"interfaces": [{"name": "eth0", "mac_address": "2a:03:9c:53:4e:46"},
			{"name": "eth1", "mac_address": "a2:67:c1:b8:c1:bd"}],
		"disks": [{"name": "/dev/sda", "size": 1000000, "model": "test-disk-1"},
			{"name": "/dev/sdb", "size": 2000000, "model": "test-disk-2"}],
		"bmc_address": "192.168.1.100", "bmc_password": "secret"}`, &inv)
	mustJSON(`{"plugin": "data", "logs": "test logs", "password": "plugin_secret"}`, &pd)
	return inv, pd
}

func mustJSON(s string, v any) {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		panic(err)
	}
}

func testNode() *model.Node {
	return &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Driver: "fake-hardware",
		DriverInfo: model.JSON{}, Extra: model.JSON{}, ProvisionState: "inspecting"}
}

func newScope(n *model.Node, inv, pd map[string]any) *scope {
	e := &engine{t: &Target{Node: n, PluginData: pd}, inventory: inv}
	return e.scope(nil, false)
}

// TestOperators is test_rule_operators: each operator's true and false case.
func TestOperators(t *testing.T) {
	for _, tc := range []struct {
		op          string
		true, false string // the args, as JSON
	}{
		{"eq", `{"values": [5, 5]}`, `{"values": [5, 10]}`},
		{"ne", `{"values": [5, 10]}`, `{"values": [5, 5]}`},
		{"lt", `{"values": [5, 10]}`, `{"values": [10, 5]}`},
		{"le", `{"values": [5, 10]}`, `{"values": [10, 5]}`},
		{"gt", `{"values": [10, 5]}`, `{"values": [5, 10]}`},
		{"ge", `{"values": [10, 5]}`, `{"values": [5, 10]}`},
		{"is-empty", `{"value": ""}`, `{"value": "not empty"}`},
		{"in-net", `{"address": "192.168.1.5", "subnet": "192.168.1.0/24"}`, `{"address": "10.0.0.1", "subnet": "192.168.1.0/24"}`},
		{"matches", `{"value": "abc123", "regex": "abc\\d+"}`, `{"value": "xyz123", "regex": "abc\\d+"}`},
		{"contains", `{"value": "test-abc123-end", "regex": "abc\\d+"}`, `{"value": "test-xyz-end", "regex": "abc\\d+"}`},
		{"one-of", `{"value": "b", "values": ["a", "b", "c"]}`, `{"value": "z", "values": ["a", "b", "c"]}`},
		{"is-none", `{"value": null}`, `{"value": "something"}`},
		{"is-true", `{"value": true}`, `{"value": false}`},
		{"is-false", `{"value": false}`, `{"value": true}`},
	} {
		t.Run(tc.op, func(t *testing.T) {
			for want, args := range map[bool]string{true: tc.true, false: tc.false} {
				var a map[string]any
				mustJSON(args, &a)
				got, err := evaluate(tc.op, a)
				if err != nil || got != want {
					t.Errorf("%s %s = %v, %v; want %v", tc.op, args, got, err, want)
				}
			}
		})
	}
}

// TestOperatorEdgeCases is test_oneofoperator_edge_cases and
// test_is_true_false_operators_edge_cases, plus Python's comparison rules.
func TestOperatorEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name, op, args string
		want           bool
		err            string
	}{
		{"one-of empty", "one-of", `{"value": "test", "values": []}`, false, ""},
		{"one-of none", "one-of", `{"value": null, "values": ["a", "b"]}`, false, ""},
		{"one-of yes", "one-of", `{"value": "a", "values": ["a", "b"]}`, true, ""},
		{"one-of default values", "one-of", `{"value": "a"}`, false, ""},
		{"is-true yes", "is-true", `{"value": "yes"}`, true, ""},
		{"is-true TRUE", "is-true", `{"value": "TRUE"}`, true, ""},
		{"is-true no", "is-true", `{"value": "no"}`, false, ""},
		{"is-false no", "is-false", `{"value": "no"}`, true, ""},
		{"is-false FALSE", "is-false", `{"value": "FALSE"}`, true, ""},
		{"is-false yes", "is-false", `{"value": "yes"}`, false, ""},
		{"is-true 1", "is-true", `{"value": 1}`, true, ""},
		{"is-true 0.1", "is-true", `{"value": 0.1}`, true, ""},
		{"is-true 0", "is-true", `{"value": 0}`, false, ""},
		{"is-false 0", "is-false", `{"value": 0}`, true, ""},
		{"is-false 1", "is-false", `{"value": 1}`, false, ""},
		{"is-true none", "is-true", `{"value": null}`, false, ""},
		{"is-false none", "is-false", `{"value": null}`, true, ""},
		{"is-true dict", "is-true", `{"value": {}}`, false, ""},
		{"is-true list", "is-true", `{"value": []}`, false, ""},
		{"is-empty None string", "is-empty", `{"value": "None"}`, true, ""},
		{"is-empty list", "is-empty", `{"value": []}`, true, ""},
		{"is-empty dict", "is-empty", `{"value": {}}`, true, ""},
		{"is-empty zero", "is-empty", `{"value": 0}`, false, ""},
		{"eq one value", "eq", `{"values": [1]}`, true, ""},
		{"eq three", "eq", `{"values": [1, 1.0, true]}`, true, ""},
		{"eq str int", "eq", `{"values": ["1", 1]}`, false, ""},
		{"eq force strings", "eq", `{"values": ["1", 1], "force_strings": true}`, true, ""},
		{"lt chain", "lt", `{"values": [1, 2, 3]}`, true, ""},
		{"lt chain broken", "lt", `{"values": [1, 3, 2]}`, false, ""},
		{"lt strings", "lt", `{"values": ["a", "b"]}`, true, ""},
		// Anvil: Python's TypeError for an unorderable pair.
		{"gt str int", "gt", `{"values": ["2048", 1024]}`, false, "'>' not supported between instances of 'int' and 'str'"},
		{"lt str int", "lt", `{"values": ["2048", 1024]}`, false, "'<' not supported between instances of 'str' and 'int'"},
		{"eq not a list", "eq", `{"values": "not-a-list"}`, false,
			"Inspection rule condition check failed. Reason: Failed to check condition: 'eq' on values: not-a-list: Expected list for 'values', got: str"},
		{"in-net bad subnet", "in-net", `{"address": "192.168.1.1", "subnet": "invalid-subnet"}`, false,
			"Inspection rule execution failed. Reason: invalid value: invalid IPNetwork invalid-subnet"},
		{"in-net bare address", "in-net", `{"address": "10.0.0.1", "subnet": "10.0.0.1"}`, true, ""},
		{"in-net v6", "in-net", `{"address": "fe80::1", "subnet": "fe80::/64"}`, true, ""},
		{"in-net v4 in v6", "in-net", `{"address": "10.0.0.1", "subnet": "fe80::/64"}`, false, ""},
		{"matches bad regex", "matches", `{"value": "test", "regex": "[unclosed"}`, false,
			"Inspection rule execution failed. Reason: invalid regular expression"},
		{"contains bad regex", "contains", `{"value": "test", "regex": "[unclosed"}`, false,
			"Inspection rule execution failed. Reason: invalid regular expression"},
		{"matches anchors start", "matches", `{"value": "xabc", "regex": "abc"}`, false, ""},
		{"matches anchors end", "matches", `{"value": "abcx", "regex": "abc"}`, false, ""},
		{"matches ignore case", "matches", `{"value": "Dell Inc.", "regex": "(?i)dell.*"}`, true, ""},
		{"contains number", "contains", `{"value": 12345, "regex": "23"}`, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a map[string]any
			mustJSON(tc.args, &a)
			got, err := evaluate(tc.op, a)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err = %v, want prefix %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestInterpolation is test_variable_interpolation and
// test_simple_operator_interpolates_values.
func TestInterpolation(t *testing.T) {
	inv, pd := fixture()
	sc := newScope(testNode(), inv, pd)
	loop := newScope(testNode(), inv, pd)
	withSecrets := testNode()
	withSecrets.DriverInfo = model.JSON{"ipmi_password": "s3cret", "ipmi_username": "admin"}
	nodeSecrets := newScope(withSecrets, inv, pd)
	loop.inLoop, loop.item = true, map[string]any{"key": "value", "nested": map[string]any{"deep": "nested_value"}}
	for _, tc := range []struct {
		name  string
		sc    *scope
		value any
		op    string
		want  any
	}{
		{"inventory", sc, "{inventory[cpu][architecture]}", "", "x86_64"},
		{"list index", sc, "{inventory[interfaces][0][mac_address]}", "", "2a:03:9c:53:4e:46"},
		{"plugin data", sc, "{plugin_data[plugin]}", "", "data"},
		{"node", sc, "{node.driver}", "", "fake-hardware"},
		{"number", sc, "{inventory[cpu][count]}", "", "4"},
		{"item", loop, "{item}", "", "{'key': 'value', 'nested': {'deep': 'nested_value'}}"},
		{"item key", loop, "{item[key]}", "", "value"},
		{"item nested", loop, "{item[nested][deep]}", "", "nested_value"},
		{"mixed", loop, "CPU: {inventory[cpu][count]}, Item: {item[key]}", "", "CPU: 4, Item: value"},
		{"dict", loop, map[string]any{"normal_key": "normal_value", "interpolated_key": "{inventory[cpu][architecture]}",
			"nested": map[string]any{"item_key": "{item[key]}", "inventory_key": "{inventory[bmc_address]}"}}, "",
			map[string]any{"normal_key": "normal_value", "interpolated_key": "x86_64",
				"nested": map[string]any{"item_key": "value", "inventory_key": "192.168.1.100"}}},
		{"list", loop, []any{"normal_value", "{inventory[cpu][architecture]}", "{item[key]}",
			[]any{"{inventory[bmc_address]}", "{item[nested][deep]}"}}, "",
			[]any{"normal_value", "x86_64", "value", []any{"192.168.1.100", "nested_value"}}},
		{"missing stays", sc, "{inventory[missing][key]}", "", "{inventory[missing][key]}"},
		{"missing is-empty", sc, "{inventory[i.do.not.exist]}", "is-empty", nil},
		{"missing eq", sc, "{inventory[missing][key]}", "eq", "{inventory[missing][key]}"},
		// Anvil: masking (Ironic's ShallowMaskDict, mask_secrets=always).
		{"masked", sc, "{inventory[bmc_password]}", "", "***"},
		{"masked plugin data", sc, "{plugin_data[password]}", "", "***"},
		{"masked whole", sc, "{plugin_data}", "", "{'logs': 'test logs', 'password': '***', 'plugin': 'data'}"},
		// Anvil: the node's secrets are masked too (Ironic reads them).
		{"node secret", nodeSecrets, "{node.driver_info[ipmi_password]}", "", "******"},
		{"node secret dict", nodeSecrets, "{node.driver_info}", "", "{'ipmi_password': '******', 'ipmi_username': 'admin'}"},
		{"node plain", nodeSecrets, "{node.driver_info[ipmi_username]}", "", "admin"},
		// Anvil: Python's format grammar.
		{"escapes", sc, "{{literal}} {node.driver}", "", "{literal} fake-hardware"},
		{"repr", sc, "{node.driver!r}", "", "'fake-hardware'"},
		{"dict with dots", sc, "{inventory.cpu}", "", "{inventory.cpu}"},
		{"node brackets", sc, "{node[driver]}", "", "{node[driver]}"},
		{"unbalanced", sc, "{node.driver", "", "{node.driver"},
		{"positional", sc, "{}", "", "{}"},
		{"format spec", sc, "{node.driver:>20}", "", "{node.driver:>20}"},
		{"item outside loop", sc, "{item}", "", "{item}"},
		{"unset node field", sc, "{node.name}", "", "None"},
		{"node dict field", sc, "{node.properties}", "", "{}"},
		{"not a string", sc, 5.0, "", 5.0},
		{"loop double format", loop, "{item[key]}", "", "value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.sc.interpolate(tc.value, tc.op)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("interpolate(%v) = %#v, want %#v", tc.value, got, tc.want)
			}
		})
	}
	// Ironic's list loop: an item carrying a field is formatted twice.
	loop.item = map[string]any{"path": "driver_info/ipmi_address", "value": "{inventory[bmc_address]}"}
	if got := loop.interpolate("{item[value]}", "set-attribute"); got != "192.168.1.100" {
		t.Fatalf("item field = %v", got)
	}
}

func rule(t *testing.T, doc string) *model.InspectionRule {
	t.Helper()
	var r model.InspectionRule
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatal(err)
	}
	if r.UUID == "" {
		r.UUID = "00000000-0000-0000-0000-000000000001"
	}
	return &r
}

// TestConditionLoops is test_operator_with_loop: any, all, first and last.
func TestConditionLoops(t *testing.T) {
	inv, pd := fixture()
	conds := []string{
		`{"op": "eq", "args": {"values": [1, "{item}"]}, "loop": [1, 2, 3, 4], "multiple": "%s"}`,
		`{"op": "contains", "args": {"value": "{item}", "regex": "4"}, "loop": ["test4", "value5", "string6"], "multiple": "%s"}`,
		`{"op": "one-of", "args": {"value": "{inventory[cpu][architecture]}", "values": ["{item}"]}, "loop": ["x86_64", "aarch64", "ppc64le"], "multiple": "%s"}`,
	}
	want := map[string]bool{"any": true, "all": false, "first": true, "last": false}
	for multiple, w := range want {
		for _, c := range conds {
			r := rule(t, `{"conditions": [`+strings.ReplaceAll(c, "%s", multiple)+`], "actions": []}`)
			e := &engine{t: &Target{Node: testNode(), PluginData: pd}, inventory: inv, log: discard()}
			got, err := e.conditions(r)
			if err != nil || got != w {
				t.Errorf("%s %s: %v, %v; want %v", multiple, c, got, err, w)
			}
		}
	}
	// A dict loop is one iteration with the dict as item.
	r := rule(t, `{"conditions": [{"op": "eq", "args": {"values": ["{item[a]}", "1"]}, "loop": {"a": 1}, "multiple": "all"}], "actions": []}`)
	e := &engine{t: &Target{Node: testNode()}, inventory: inv, log: discard()}
	if got, err := e.conditions(r); err != nil || !got {
		t.Errorf("dict loop: %v, %v", got, err)
	}
}

// TestNegationAndListArgs covers "!" and the deprecated positional args
// (test_list_style_args_deprecated).
func TestNegationAndListArgs(t *testing.T) {
	inv, pd := fixture()
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{`{"op": "contains", "args": ["testvalue", "test"]}`, true},
		{`{"op": "!contains", "args": ["testvalue", "test"]}`, false},
		{`{"op": "! eq", "args": {"values": ["{node.driver}", "other"]}}`, true},
		{`{"op": "eq", "args": {"values": ["{node.driver}", "fake-hardware"]}}`, true},
		{`{"op": "eq", "args": {"values": ["{node.driver}", "other"]}}`, false},
		{`{"op": "!lt", "args": {"values": ["{inventory[memory][physical_mb]}", "1024"]}}`, true},
		{`{"op": "is-empty", "args": {"value": "{inventory[i.do.not.exist]}"}}`, true},
		{`{"op": "is-empty", "args": {"value": "{inventory[bmc_address]}"}}`, false},
	} {
		r := rule(t, `{"conditions": [`+tc.cond+`], "actions": []}`)
		e := &engine{t: &Target{Node: testNode(), PluginData: pd}, inventory: inv, log: discard()}
		got, err := e.conditions(r)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.cond, got, err, tc.want)
		}
	}
}

func applyOne(t *testing.T, n *model.Node, pd map[string]any, action string) error {
	t.Helper()
	inv, _ := fixture()
	r := rule(t, `{"actions": [`+action+`]}`)
	return Apply(context.Background(), []*model.InspectionRule{r}, inv, &Target{Node: n, PluginData: pd, Log: discard()})
}
