package inspectrule

import "testing"

// TestValidate covers Ironic's validate_rule after the schema (TestValidation
// and the API tests' invalid priority), and Anvil's refusals.
func TestValidate(t *testing.T) {
	for _, tc := range []struct{ name, rule, err string }{
		{"ok", `{"phase": "main", "priority": 10, "conditions": [{"op": "!eq", "args": {"values": [1, 1]}}],
			"actions": [{"op": "set-plugin-data", "args": {"path": "a", "value": 1}}]}`, ""},
		{"positional ok", `{"conditions": [{"op": "contains", "args": ["a", "b"]}], "actions": [{"op": "set-plugin-data", "args": ["a", 1]}]}`, ""},
		{"bad phase", `{"phase": "early", "actions": [{"op": "log", "args": {"msg": "x"}}]}`, "Invalid phase: early. Valid phases are: main"},
		{"priority", `{"priority": 10000, "actions": [{"op": "log", "args": {"msg": "x"}}]}`,
			"Priority must be between 0 and 9999 for user-defined rules."},
		{"both", `{"phase": "x", "priority": 10000, "actions": [{"op": "log", "args": {"msg": "x"}}]}`,
			"Multiple validation errors occurred: Invalid phase: x. Valid phases are: main; Priority must be between 0 and 9999 for user-defined rules."},
		{"unsupported operator", `{"conditions": [{"op": "!unknown", "args": {}}], "actions": [{"op": "log", "args": {"msg": "x"}}]}`,
			"Unsupported operator 'unknown'."},
		{"ge is not registered", `{"conditions": [{"op": "ge", "args": {"values": [1, 1]}}], "actions": [{"op": "log", "args": {"msg": "x"}}]}`,
			"Unsupported operator 'ge'."},
		{"unsupported action", `{"actions": [{"op": "noop", "args": {}}]}`, "Unsupported action 'noop'."},
		{"missing", `{"conditions": [{"op": "contains", "args": {"value": "x"}}], "actions": [{"op": "log", "args": {"msg": "x"}}]}`,
			"missing required argument(s): regex"},
		{"unexpected", `{"actions": [{"op": "log", "args": {"msg": "x", "lvl": "info", "a": 1}}]}`,
			"unexpected argument(s): a, lvl"},
		{"both kinds", `{"actions": [{"op": "add-trait", "args": {"trait": "X"}}]}`,
			"missing required argument(s): name; unexpected argument(s): trait"},
		{"too few positional", `{"actions": [{"op": "set-attribute", "args": ["/extra/a"]}]}`,
			"Not enough arguments provided. Missing: value"},
		{"args error before phase", `{"phase": "x", "actions": [{"op": "log", "args": {}}]}`, "missing required argument(s): msg"},
		{"api-call refused", `{"actions": [{"op": "api-call", "args": {"url": "http://example.com/"}}]}`,
			"Unsupported action 'api-call': Anvil's inspection rules make no network calls (Ironic's api-call sends an HTTP GET to any URL a rule names)."},
		{"port action refused", `{"actions": [{"op": "set-port-attribute", "args": {"port_id": "p", "path": "extra/a", "value": 1}}]}`,
			"Unsupported action 'set-port-attribute': Anvil's inspection rules do not change ports; set port fields through the ports API."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(rule(t, tc.rule))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("err = %v\nwant %s", err, tc.err)
			}
		})
	}
}
