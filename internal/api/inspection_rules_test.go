package api

import (
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// ruleBody is Ironic's api-ref sample (inspection-rule-create-request.json).
const ruleBody = `{"description": "BMC credentials", "phase": "main", "priority": 100, "sensitive": true,
	"conditions": [{"op": "contains", "args": {"value": "{inventory[system_vendor][manufacturer]}", "regex": "(?i)dell"}},
		{"op": "is-true", "args": {"value": "{node.auto_discovered}"}}],
	"actions": [{"op": "set-attribute", "args": {"path": "/driver", "value": "idrac"}},
		{"op": "set-attribute", "args": {"path": "driver_info.redfish_address", "value": "https://{inventory[bmc_address]}"}},
		{"op": "set-attribute", "args": {"path": "/driver_info/redfish_username", "value": "admin"}},
		{"op": "set-attribute", "args": {"path": "/driver_info/redfish_password", "value": "password"}}]}`

const plainRule = `{"uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c201", "priority": 50,
	"conditions": [{"op": "eq", "args": {"values": ["{item}", "x"]}, "loop": ["x", "y"]}],
	"actions": [{"op": "add-trait", "args": ["CUSTOM_X"]}]}`

func TestInspectionRulesCRUD(t *testing.T) {
	e := newEnv(t)
	rec := e.do("POST", "/v1/inspection_rules", ruleBody, latest)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	created := decode(t, rec)
	id, _ := created["uuid"].(string)
	if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/inspection_rules/"+id {
		t.Errorf("Location %q", loc)
	}
	body := rec.Body.String()
	var order []string
	for _, k := range fieldNames(ruleFields) {
		order = append(order, k)
		if !strings.Contains(body, `"`+k+`"`) {
			t.Errorf("no %s in %s", k, body)
		}
	}
	for i := 1; i < len(order); i++ {
		if strings.Index(body, `"`+order[i-1]+`"`) > strings.Index(body, `"`+order[i]+`"`) {
			t.Errorf("%s after %s in %s", order[i-1], order[i], body)
		}
	}
	if created["conditions"] != nil || created["actions"] != nil || created["sensitive"] != true || created["priority"] != 100.0 ||
		created["updated_at"] != nil || created["description"] != "BMC credentials" {
		t.Errorf("sensitive rule shown as %v", created)
	}
	if rec := e.do("POST", "/v1/inspection_rules", plainRule, latest); rec.Code != 201 {
		t.Fatalf("create plain: %d %s", rec.Code, rec.Body.String())
	}
	plain := "1be26c0b-03f2-4d2e-ae87-c02d7f33c201"

	runVCases(t, e, []vcase{
		{"below 1.96 get", "GET", "/v1/inspection_rules", "", at(95), 404, "The API version does not allow inspection rules", nil},
		{"below 1.96 get one", "GET", "/v1/inspection_rules/" + id, "", at(95), 404, "The API version does not allow inspection rules", nil},
		{"below 1.96 post", "POST", "/v1/inspection_rules", plainRule, at(95), 405, "The API version does not allow inspection rules", nil},
		{"below 1.96 delete all", "DELETE", "/v1/inspection_rules", "", at(95), 405, "The API version does not allow inspection rules", nil},
		{"list: default fields", "GET", "/v1/inspection_rules", "", at(96), 200, "", func(t *testing.T, m map[string]any) {
			list := m["inspection_rules"].([]any)
			one := list[0].(map[string]any)
			if len(list) != 2 || len(one) != 5 || one["uuid"] != id || one["links"] == nil || one["priority"] != 100.0 {
				t.Errorf("list %v", m)
			}
		}},
		{"list detail: sensitive masked", "GET", "/v1/inspection_rules?detail=true", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			list := m["inspection_rules"].([]any)
			s, p := list[0].(map[string]any), list[1].(map[string]any)
			if len(s) != 10 || s["actions"] != nil || s["conditions"] != nil {
				t.Errorf("sensitive %v", s)
			}
			c := p["conditions"].([]any)[0].(map[string]any)
			if c["multiple"] != "any" || len(c["loop"].([]any)) != 2 || p["actions"].([]any)[0].(map[string]any)["args"].([]any)[0] != "CUSTOM_X" {
				t.Errorf("plain %v", p)
			}
		}},
		{"list sorted by priority", "GET", "/v1/inspection_rules?sort_key=priority", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if m["inspection_rules"].([]any)[0].(map[string]any)["uuid"] != plain {
				t.Errorf("sorted %v", m)
			}
		}},
		{"list page", "GET", "/v1/inspection_rules?limit=1", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if next, _ := m["next"].(string); !strings.Contains(next, "/v1/inspection_rules?") || !strings.Contains(next, "marker="+id) {
				t.Errorf("next %v", m["next"])
			}
		}},
		{"list by phase", "GET", "/v1/inspection_rules?phase=other", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if len(m["inspection_rules"].([]any)) != 0 {
				t.Errorf("phase filter %v", m)
			}
		}},
		{"list fields", "GET", "/v1/inspection_rules?fields=actions", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if one := m["inspection_rules"].([]any)[1].(map[string]any); len(one) != 2 || one["actions"] == nil {
				t.Errorf("fields %v", one)
			}
		}},
		{"list bad field", "GET", "/v1/inspection_rules?fields=nope", "", latest, 400, `Field(s) "nope" are not valid`, nil},
		{"list sort on actions", "GET", "/v1/inspection_rules?sort_key=actions", "", latest, 400,
			"The sort_key value actions is an invalid field for sorting", nil},
		{"list sort unknown", "GET", "/v1/inspection_rules?sort_key=nope", "", latest, 400,
			`The sort_key value "nope" is an invalid field for sorting`, nil},
		{"list unknown marker", "GET", "/v1/inspection_rules?marker=11111111-2222-4333-8444-555555555555", "", latest, 404,
			"Rule 11111111-2222-4333-8444-555555555555 could not be found.", nil},
		{"get plain", "GET", "/v1/inspection_rules/" + plain, "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if m["description"] != nil || m["phase"] != "main" || m["sensitive"] != false || len(m["actions"].([]any)) != 1 {
				t.Errorf("get %v", m)
			}
		}},
		{"get fields", "GET", "/v1/inspection_rules/" + plain + "?fields=priority", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if len(m) != 2 || m["priority"] != 50.0 {
				t.Errorf("fields %v", m)
			}
		}},
		{"get unknown", "GET", "/v1/inspection_rules/11111111-2222-4333-8444-555555555555", "", latest, 404,
			"Rule 11111111-2222-4333-8444-555555555555 could not be found.", nil},
		{"get not a uuid", "GET", "/v1/inspection_rules/nope", "", latest, 400, "Schema error: 'nope' is not a 'uuid'", nil},
		{"duplicate uuid", "POST", "/v1/inspection_rules", plainRule, latest, 409, "A rule with UUID " + plain + " already exists.", nil},
		{"patch", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/priority", "value": 75},
			{"op": "add", "path": "/actions/-", "value": {"op": "set-attribute", "args": {"path": "/properties/local_gb", "value": "{inventory[disks][0][size]}"}}},
			{"op": "replace", "path": "/conditions/0", "value": {"op": "is-true", "args": {"value": "{inventory[cpu][count]}"}}}]`,
			latest, 200, "", func(t *testing.T, m map[string]any) {
				c := m["conditions"].([]any)[0].(map[string]any)
				if m["priority"] != 75.0 || len(m["actions"].([]any)) != 2 || c["op"] != "is-true" || c["loop"] != nil || m["updated_at"] == nil {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch sets sensitive", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/sensitive", "value": true}]`,
			latest, 200, "", func(t *testing.T, m map[string]any) {
				if m["sensitive"] != true || m["actions"] != nil {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch unsets sensitive", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/sensitive", "value": false}]`,
			latest, 400, "Couldn't apply patch '[{'op': 'replace', 'path': '/sensitive', 'value': False}]'. Reason: Inspection rules cannot have the sensitive flag unset.", nil},
		{"patch bad op", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/actions/0/op", "value": "reboot"}]`,
			latest, 400, "Schema error for patch: 'reboot' is not one of ['fail', 'log', 'set-attribute', 'extend-attribute', 'del-attribute', " +
				"'set-capability', 'unset-capability', 'add-trait', 'remove-trait', 'set-plugin-data', 'extend-plugin-data', 'unset-plugin-data', " +
				"'set-port-attribute', 'extend-port-attribute', 'del-port-attribute', 'api-call']", nil},
		{"patch bad args", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/actions/0/args", "value": {}}]`,
			latest, 400, "missing required argument(s): name", nil},
		{"patch no actions", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/actions", "value": []}]`,
			latest, 400, "Schema error for patch: [] should be non-empty", nil},
		{"patch uuid", "PATCH", "/v1/inspection_rules/" + plain, `[{"op": "replace", "path": "/uuid", "value": "x"}]`, latest, 400,
			"Cannot patch /uuid. Only the following can be updated: description, priority, sensitive, phase, conditions, actions", nil},
		{"patch unknown", "PATCH", "/v1/inspection_rules/11111111-2222-4333-8444-555555555555", `[{"op": "replace", "path": "/priority", "value": 1}]`,
			latest, 404, "Rule 11111111-2222-4333-8444-555555555555 could not be found.", nil},
		{"delete", "DELETE", "/v1/inspection_rules/" + plain, "", latest, 204, "", nil},
		{"gone", "GET", "/v1/inspection_rules/" + plain, "", latest, 404, "Rule " + plain + " could not be found.", nil},
		{"delete gone", "DELETE", "/v1/inspection_rules/" + plain, "", latest, 404, "Rule " + plain + " could not be found.", nil},
		{"delete all", "DELETE", "/v1/inspection_rules", "", latest, 204, "", nil},
		{"none left", "GET", "/v1/inspection_rules", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if len(m["inspection_rules"].([]any)) != 0 {
				t.Errorf("after delete all %v", m)
			}
		}},
	})
}

func TestInspectionRulesBadInput(t *testing.T) {
	e := newEnv(t)
	act := `[{"op": "log", "args": {"msg": "x"}}]`
	cases := []struct{ name, body, msg string }{
		{"not an object", `[]`, "Schema error: [] is not of type 'object'"},
		{"no actions", `{"conditions": []}`, "Schema error: 'actions' is a required property"},
		{"unknown key", `{"actions": ` + act + `, "built_in": true}`, "Schema error: Additional properties are not allowed ('built_in' was unexpected)"},
		{"required before unknown", `{"scope": "x"}`, "Schema error: 'actions' is a required property"},
		{"empty actions", `{"actions": []}`, "Schema error: [] should be non-empty"},
		{"unknown action", `{"actions": [{"op": "reboot", "args": {}}]}`, "Schema error: 'reboot' is not one of ['fail', 'log', 'set-attribute', " +
			"'extend-attribute', 'del-attribute', 'set-capability', 'unset-capability', 'add-trait', 'remove-trait', 'set-plugin-data', " +
			"'extend-plugin-data', 'unset-plugin-data', 'set-port-attribute', 'extend-port-attribute', 'del-port-attribute', 'api-call']"},
		{"ge is not an operator", `{"conditions": [{"op": "ge", "args": ["{inventory[memory][physical_mb]}", 1024]}], "actions": ` + act + `}`,
			"Schema error: 'ge' is not one of ['eq', 'lt', 'gt', 'is-empty', 'in-net', 'matches', 'contains', 'one-of', 'is-none', 'is-true', " +
				"'is-false', '!eq', '!lt', '!gt', '!is-empty', '!in-net', '!matches', '!contains', '!one-of', '!is-none', '!is-true', '!is-false']"},
		{"no args", `{"actions": [{"op": "log"}]}`, "Schema error: 'args' is a required property"},
		{"args a string", `{"actions": [{"op": "log", "args": "x"}]}`, "Schema error: 'x' is not of type 'array', 'object'"},
		{"bad multiple", `{"conditions": [{"op": "eq", "args": {"values": []}, "loop": [1], "multiple": "most"}], "actions": ` + act + `}`,
			"Schema error: 'most' is not one of ['any', 'all', 'first', 'last']"},
		{"negative priority", `{"priority": -1, "actions": ` + act + `}`, "Schema error: -1 is less than the minimum of 0"},
		{"priority a string", `{"priority": "1", "actions": ` + act + `}`, "Schema error: '1' is not of type 'integer'"},
		{"priority too high", `{"priority": 10000, "actions": ` + act + `}`, "Priority must be between 0 and 9999 for user-defined rules."},
		{"bad phase", `{"phase": "early", "actions": ` + act + `}`, "Invalid phase: early. Valid phases are: main"},
		{"phase too long", `{"phase": "` + strings.Repeat("p", 17) + `", "actions": ` + act + `}`, "Schema error: '" + strings.Repeat("p", 17) + "' is too long"},
		{"description a number", `{"description": 5, "actions": ` + act + `}`, "Schema error: 5 is not of type 'string', 'null'"},
		{"shallow error first", `{"description": 5, "actions": [{"op": "nope", "args": {}}]}`, "Schema error: 5 is not of type 'string', 'null'"},
		{"missing argument", `{"conditions": [{"op": "contains", "args": {"value": "x"}}], "actions": ` + act + `}`,
			"missing required argument(s): regex"},
		{"unexpected argument", `{"actions": [{"op": "add-trait", "args": {"trait": "CUSTOM_X"}}]}`,
			"missing required argument(s): name; unexpected argument(s): trait"},
		{"too few positional", `{"actions": [{"op": "set-attribute", "args": ["/extra/a"]}]}`, "Not enough arguments provided. Missing: value"},
		{"api-call refused", `{"actions": [{"op": "api-call", "args": {"url": "http://127.0.0.1/hook"}}]}`,
			"Unsupported action 'api-call': Anvil's inspection rules make no network calls (Ironic's api-call sends an HTTP GET to any URL a rule names)."},
		{"port action refused", `{"actions": [{"op": "del-port-attribute", "args": {"port_id": "p", "path": "extra/a"}}]}`,
			"Unsupported action 'del-port-attribute': Anvil's inspection rules do not change ports; set port fields through the ports API."},
		{"bad uuid", `{"uuid": "nope", "actions": ` + act + `}`, "Expected UUID for uuid: nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("POST", "/v1/inspection_rules", tc.body, latest)
			if _, msg := faultOf(t, rec); rec.Code != 400 || msg != tc.msg {
				t.Fatalf("%d %q\nwant 400 %q", rec.Code, msg, tc.msg)
			}
		})
	}
	if list := decode(t, e.do("GET", "/v1/inspection_rules", "", latest))["inspection_rules"].([]any); len(list) != 0 {
		t.Fatalf("bad input stored rules: %v", list)
	}
}

// TestInspectionRuleSecretsMasked: a rule that is not sensitive shows its
// actions, but never the secrets it writes (Anvil's rule for responses).
func TestInspectionRuleSecretsMasked(t *testing.T) {
	e := newEnv(t)
	body := `{"actions": [
		{"op": "set-attribute", "args": {"path": "/driver_info/redfish_password", "value": "s3cret-a"}},
		{"op": "set-attribute", "args": ["driver_info.ipmi_password", "s3cret-b"]},
		{"op": "set-attribute", "args": {"path": "{item[path]}", "value": "{item[value]}"},
			"loop": [{"path": "driver_info/ipmi_password", "value": "s3cret-c"}, {"path": "driver_info/ipmi_username", "value": "admin"}]},
		{"op": "log", "args": {"msg": "password=s3cret-d"}}]}`
	rec := e.do("POST", "/v1/inspection_rules", body, latest)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	id := decode(t, rec)["uuid"].(string)
	for _, r := range []string{rec.Body.String(), e.do("GET", "/v1/inspection_rules/"+id, "", latest).Body.String(),
		e.do("GET", "/v1/inspection_rules?detail=true", "", latest).Body.String()} {
		if strings.Contains(r, "s3cret") || !strings.Contains(r, "admin") || !strings.Contains(r, "redfish_password") {
			t.Errorf("secrets shown or rule hidden: %s", r)
		}
	}
	// The stored rule keeps the values: the engine writes them.
	stored, err := e.st.InspectionRules().GetInspectionRule(t.Context(), id)
	if err != nil || stored.Actions[0]["args"].(map[string]any)["value"] != "s3cret-a" {
		t.Fatalf("stored %v, %v", stored, err)
	}
}

// TestInspectionRulesNeedNewData: an inspection that stores no inventory
// (fake inspect) does not run the rules on the one a previous inspection
// left, as Ironic runs them only where inspection data is processed.
func TestInspectionRulesNeedNewData(t *testing.T) {
	e := newEnv(t)
	n := nodeFixture("stale")
	n.ProvisionState = "manageable"
	n.DriverInternalInfo = model.JSON{"inspection_inventory": map[string]any{"memory": map[string]any{"physical_mb": 4096.0}}}
	e.mustNode(n)
	if rec := e.do("POST", "/v1/inspection_rules", `{"actions": [{"op": "add-trait", "args": ["CUSTOM_STALE"]}]}`, latest); rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	if rec := e.do("PUT", "/v1/nodes/stale/states/provision", `{"target": "inspect"}`, latest); rec.Code != 202 {
		t.Fatalf("inspect: %d %s", rec.Code, rec.Body.String())
	}
	e.cond.WaitIdle()
	got := decode(t, e.do("GET", "/v1/nodes/stale", "", latest))
	if got["provision_state"] != "manageable" || len(got["traits"].([]any)) != 0 {
		t.Fatalf("after a fake inspection: %v, traits %v", got["provision_state"], got["traits"])
	}
}
