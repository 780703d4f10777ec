package api

import (
	"fmt"
	"strings"
	"testing"
)

const raidStep = `{"interface": "raid", "step": "apply_configuration", "args": {"raid_config": {"logical_disks": []}, "password": "s3cret"}, "priority": "150"}`

func TestDeployTemplatesCRUD(t *testing.T) {
	e := newEnv(t)
	body := `{"name": "CUSTOM_RAID", "steps": [` + raidStep + `], "extra": {"k": "v"}}`
	rec := e.do("POST", "/v1/deploy_templates", body, latest)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	created := decode(t, rec)
	id, _ := created["uuid"].(string)
	if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/deploy_templates/"+id {
		t.Errorf("Location %q", loc)
	}
	keys := []string{}
	for _, k := range strings.Split(rec.Body.String(), `"`) {
		if _, ok := created[k]; ok && !strings.Contains(strings.Join(keys, ","), k) {
			keys = append(keys, k)
		}
	}
	if strings.Join(keys, ",") != "uuid,created_at,updated_at,name,extra,links,steps" || created["updated_at"] != nil {
		t.Errorf("template keys %v (updated_at %v), want Ironic's order", keys, created["updated_at"])
	}
	step := created["steps"].([]any)[0].(map[string]any)
	if step["priority"] != 150.0 || fmt.Sprint(step["args"]) != "map[password:****** raid_config:map[logical_disks:[]]]" {
		t.Errorf("step %v: want the priority as an integer and the password masked", step)
	}

	runVCases(t, e, []vcase{
		{"below 1.55 get", "GET", "/v1/deploy_templates", "", at(54), 404, "The API version does not allow deploy templates", nil},
		{"below 1.55 post", "POST", "/v1/deploy_templates", body, at(54), 405, "The API version does not allow deploy templates", nil},
		{"list: uuid and name", "GET", "/v1/deploy_templates", "", at(55), 200, "", func(t *testing.T, m map[string]any) {
			list := m["deploy_templates"].([]any)
			one := list[0].(map[string]any)
			if len(list) != 1 || len(one) != 3 || one["name"] != "CUSTOM_RAID" || one["links"] == nil {
				t.Errorf("list %v", m)
			}
		}},
		{"list detail", "GET", "/v1/deploy_templates?detail=true", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if one := m["deploy_templates"].([]any)[0].(map[string]any); len(one) != 7 {
				t.Errorf("detail %v", one)
			}
		}},
		{"list fields", "GET", "/v1/deploy_templates?fields=steps", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if one := m["deploy_templates"].([]any)[0].(map[string]any); len(one) != 2 || one["steps"] == nil {
				t.Errorf("fields %v", one)
			}
		}},
		{"list bad field", "GET", "/v1/deploy_templates?fields=nope", "", latest, 400, `Field(s) "nope" are not valid`, nil},
		{"list sort on steps", "GET", "/v1/deploy_templates?sort_key=steps", "", latest, 400, "The sort_key value steps is an invalid field for sorting", nil},
		{"list unknown marker", "GET", "/v1/deploy_templates?marker=11111111-2222-4333-8444-555555555555", "", latest, 404,
			"Deploy template 11111111-2222-4333-8444-555555555555 could not be found.", nil},
		{"get by name", "GET", "/v1/deploy_templates/CUSTOM_RAID", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if m["uuid"] != id || fmt.Sprint(m["extra"]) != "map[k:v]" {
				t.Errorf("get %v", m)
			}
		}},
		{"get fields", "GET", "/v1/deploy_templates/" + id + "?fields=name", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if len(m) != 2 {
				t.Errorf("fields %v", m)
			}
		}},
		{"get unknown", "GET", "/v1/deploy_templates/CUSTOM_NONE", "", latest, 404, "Deploy template CUSTOM_NONE could not be found.", nil},
		{"get bad ident", "GET", "/v1/deploy_templates/a%20b", "", latest, 400, "Expected UUID or name for template_ident: a b", nil},
		{"duplicate name", "POST", "/v1/deploy_templates", body, latest, 409, "A deploy template with name CUSTOM_RAID already exists.", nil},
		{"duplicate uuid", "POST", "/v1/deploy_templates", `{"uuid": "` + id + `", "name": "CUSTOM_OTHER", "steps": [` + raidStep + `]}`, latest, 409,
			"A deploy template with UUID " + id + " already exists.", nil},
		{"patch steps and name", "PATCH", "/v1/deploy_templates/CUSTOM_RAID",
			`[{"op": "replace", "path": "/name", "value": "CUSTOM_RAID2"}, {"op": "replace", "path": "/steps/0/priority", "value": 5}, {"op": "remove", "path": "/extra/k"}]`,
			latest, 200, "", func(t *testing.T, m map[string]any) {
				s := m["steps"].([]any)[0].(map[string]any)
				if m["name"] != "CUSTOM_RAID2" || s["priority"] != 5.0 || fmt.Sprint(m["extra"]) != "map[]" || m["updated_at"] == nil {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch uuid", "PATCH", "/v1/deploy_templates/" + id, `[{"op": "replace", "path": "/uuid", "value": "x"}]`, latest, 400,
			"Cannot patch /uuid. Only the following can be updated: extra, name, steps, description", nil},
		{"patch bad step", "PATCH", "/v1/deploy_templates/" + id, `[{"op": "replace", "path": "/steps/0/interface", "value": "vendor"}]`, latest, 400,
			"Schema error for patch: 'vendor' is not one of ['power', 'management', 'deploy', 'bios', 'raid']", nil},
		{"patch no steps", "PATCH", "/v1/deploy_templates/" + id, `[{"op": "remove", "path": "/steps/0"}]`, latest, 400,
			"Schema error for patch: [] should be non-empty", nil},
		{"delete", "DELETE", "/v1/deploy_templates/CUSTOM_RAID2", "", latest, 204, "", nil},
		{"gone", "GET", "/v1/deploy_templates/" + id, "", latest, 404, "Deploy template " + id + " could not be found.", nil},
		{"delete gone", "DELETE", "/v1/deploy_templates/" + id, "", latest, 404, "Deploy template " + id + " could not be found.", nil},
	})
}

func TestDeployTemplatesBadInput(t *testing.T) {
	e := newEnv(t)
	ok := `{"interface": "raid", "step": "x", "args": {}, "priority": 1}`
	post := func(body string) string { return body }
	cases := []struct{ name, body, msg string }{
		{"not an object", `[]`, "Schema error for template: [] is not of type 'object'"},
		{"no steps", `{"name": "CUSTOM_A"}`, "Schema error for template: 'steps' is a required property"},
		{"no name", `{"steps": [` + ok + `]}`, "Schema error for template: 'name' is a required property"},
		{"unknown key", `{"name": "CUSTOM_A", "steps": [` + ok + `], "foo": 1}`,
			"Schema error for template: Additional properties are not allowed ('foo' was unexpected)"},
		{"name not a trait", `{"name": "foo", "steps": [` + ok + `]}`,
			"Schema error for template: 'foo' is not valid under any of the given schemas. Possible root cause: 'foo' does not match '^CUSTOM_[A-Z0-9_]+$'"},
		{"no step", `{"name": "CUSTOM_A", "steps": []}`, "Schema error for template: [] should be non-empty"},
		{"bad interface", `{"name": "CUSTOM_A", "steps": [{"interface": "vendor", "step": "x", "args": {}, "priority": 1}]}`,
			"Schema error for template: 'vendor' is not one of ['power', 'management', 'deploy', 'bios', 'raid']"},
		{"negative priority", `{"name": "CUSTOM_A", "steps": [{"interface": "raid", "step": "x", "args": {}, "priority": -1}]}`,
			"Schema error for template: -1 is less than the minimum of 0"},
		{"word priority", `{"name": "CUSTOM_A", "steps": [{"interface": "raid", "step": "x", "args": {}, "priority": "high"}]}`,
			"Schema error for template: 'high' is not valid under any of the given schemas"},
		{"no args", `{"name": "CUSTOM_A", "steps": [{"interface": "raid", "step": "x", "priority": 1}]}`,
			"Schema error for template: 'args' is a required property"},
		{"args a list", `{"name": "CUSTOM_A", "steps": [{"interface": "raid", "step": "x", "args": [], "priority": 1}]}`,
			"Schema error for template: [] is not of type 'object'"},
		{"step key unknown", `{"name": "CUSTOM_A", "steps": [{"interface": "raid", "step": "x", "args": {}, "priority": 1, "order": 1}]}`,
			"Schema error for template: Additional properties are not allowed ('order' was unexpected)"},
		{"empty step name", `{"name": "CUSTOM_A", "steps": [{"interface": "raid", "step": "", "args": {}, "priority": 1}]}`,
			"Schema error for template: '' should be non-empty"},
		{"duplicate steps", `{"name": "CUSTOM_A", "steps": [` + ok + `, ` + ok + `]}`,
			"Deploy template invalid: Duplicate deploy steps. A deploy template cannot have multiple deploy steps with the same interface and step. Duplicates: interface: raid, step: x."},
		{"bad uuid", `{"name": "CUSTOM_A", "uuid": "nope", "steps": [` + ok + `]}`, "Expected UUID for uuid: nope"},
		{"extra a list", `{"name": "CUSTOM_A", "extra": [], "steps": [` + ok + `]}`, "Schema error for template: [] is not of type 'object', 'null'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("POST", "/v1/deploy_templates", post(tc.body), latest)
			if _, msg := faultOf(t, rec); rec.Code != 400 || msg != tc.msg {
				t.Fatalf("%d %q\nwant 400 %q", rec.Code, msg, tc.msg)
			}
		})
	}
	if list := decode(t, e.do("GET", "/v1/deploy_templates", "", latest))["deploy_templates"].([]any); len(list) != 0 {
		t.Fatalf("bad input stored templates: %v", list)
	}
}

// A template named by an allocation's traits (copied to instance_info)
// joins the deploy: with every fake deploy step failing, the first step
// run is the template's (priority 150, before deploy.deploy's 100).
func TestDeployTemplateAppliedThroughAllocation(t *testing.T) {
	e := newEnv(t)
	if rec := e.do("POST", "/v1/deploy_templates", `{"name": "CUSTOM_RAID", "steps": [`+raidStep+`]}`, latest); rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	n := nodeFixture("gold")
	n.ProvisionState, n.PowerState, n.ResourceClass, n.Traits = "available", "power off", "gpu", []string{"CUSTOM_RAID"}
	n.DriverInfo["fake_fail"] = "deploy"
	e.mustNode(n)
	e.allocate(`{"resource_class": "gpu", "traits": ["CUSTOM_RAID"]}`)
	if rec := e.do("PUT", "/v1/nodes/gold/states/provision", `{"target": "active"}`, latest); rec.Code != 202 {
		t.Fatalf("deploy: %d %s", rec.Code, rec.Body.String())
	}
	e.cond.WaitIdle()
	got := decode(t, e.do("GET", "/v1/nodes/gold", "", latest))
	want := "Node " + n.UUID + " failed step {'interface': 'raid', 'step': 'apply_configuration', 'args': {'password': '******', " +
		"'raid_config': {'logical_disks': []}}, 'priority': 150}: fake deploy failure requested by driver_info fake_fail"
	if got["provision_state"] != "deploy failed" || got["last_error"] != want {
		t.Fatalf("after deploy: %v %q\nwant last_error %q", got["provision_state"], got["last_error"], want)
	}
}
