package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// biosStep is a runbook step that sets one BIOS setting (the fake BIOS
// keeps what apply_configuration gives it, so a run is visible in
// GET /v1/nodes/{node}/bios).
func biosStep(name, value string, order int) string {
	return fmt.Sprintf(`{"interface": "bios", "step": "apply_configuration", "args": {"settings": [{"name": %q, "value": %q}]}, "order": %d}`,
		name, value, order)
}

const resetStep = `{"interface": "bios", "step": "factory_reset", "args": {}, "order": "2"}`

func mustRunbook(t testing.TB, e *env, body string) map[string]any {
	t.Helper()
	rec := e.do("POST", "/v1/runbooks", body, rbLegacy)
	if rec.Code != 201 {
		t.Fatalf("create runbook: %d %s", rec.Code, rec.Body.String())
	}
	return decode(t, rec)
}

func TestRunbooksCRUD(t *testing.T) {
	e := newEnv(t)
	body := `{"name": "CUSTOM_BIOS", "steps": [{"interface": "raid", "step": "create_configuration", "args": {"password": "s3cret"}, "order": 1}], "extra": {"k": "v"}}`
	rec := e.do("POST", "/v1/runbooks", body, at(92))
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	created := decode(t, rec)
	id, _ := created["uuid"].(string)
	if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/runbooks/"+id {
		t.Errorf("Location %q", loc)
	}
	var keys []string
	for _, k := range strings.Split(rec.Body.String(), `"`) {
		if _, ok := created[k]; ok && !strings.Contains(strings.Join(keys, ","), k) {
			keys = append(keys, k)
		}
	}
	if strings.Join(keys, ",") != "uuid,created_at,updated_at,name,extra,public,owner,disable_ramdisk,links,steps" {
		t.Errorf("runbook keys %v, want Ironic's order", keys)
	}
	if created["public"] != false || created["owner"] != nil || created["disable_ramdisk"] != false || created["updated_at"] != nil {
		t.Errorf("defaults: %v", created)
	}
	step := created["steps"].([]any)[0].(map[string]any)
	if step["order"] != 1.0 || fmt.Sprint(step["args"]) != "map[password:******]" || len(step) != 4 {
		t.Errorf("step %v: want interface, step, args (password masked) and order", step)
	}
	other := mustRunbook(t, e, `{"name": "CUSTOM_B", "steps": [`+resetStep+`], "public": true, "disable_ramdisk": true}`)
	if other["public"] != true || other["disable_ramdisk"] != true || other["steps"].([]any)[0].(map[string]any)["order"] != 2.0 {
		t.Errorf("public runbook %v (want the order \"2\" stored as 2)", other)
	}
	step2 := `{"interface": "deploy", "step": "erase_devices", "order": 1}`
	runVCases(t, e, []vcase{
		{"list: uuid and name", "GET", "/v1/runbooks", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			list := m["runbooks"].([]any)
			one := list[0].(map[string]any)
			if len(list) != 2 || len(one) != 3 || one["name"] != "CUSTOM_BIOS" || one["links"] == nil || m["next"] != nil {
				t.Errorf("list %v", m)
			}
		}},
		{"list detail", "GET", "/v1/runbooks?detail=true", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			if one := m["runbooks"].([]any)[0].(map[string]any); len(one) != 10 {
				t.Errorf("detail %v", one)
			}
		}},
		{"list fields", "GET", "/v1/runbooks?fields=owner,public", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			if one := m["runbooks"].([]any)[0].(map[string]any); len(one) != 3 || one["public"] != false {
				t.Errorf("fields %v", one)
			}
		}},
		{"list sorted by name desc", "GET", "/v1/runbooks?sort_key=name&sort_dir=desc", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			if first := m["runbooks"].([]any)[0].(map[string]any); first["name"] != "CUSTOM_BIOS" {
				t.Errorf("sorted %v", m)
			}
		}},
		{"list page", "GET", "/v1/runbooks?limit=1&sort_key=name", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			list := m["runbooks"].([]any)
			want := "http://" + testHost + "/v1/runbooks?sort_key=name&sort_dir=asc&limit=1&marker=" + other["uuid"].(string)
			if len(list) != 1 || list[0].(map[string]any)["name"] != "CUSTOM_B" || m["next"] != want {
				t.Errorf("page %v, want next %s", m, want)
			}
		}},
		{"list next page", "GET", "/v1/runbooks?limit=1&sort_key=name&marker=" + other["uuid"].(string), "", rbLegacy, 200, "",
			func(t *testing.T, m map[string]any) {
				if list := m["runbooks"].([]any); len(list) != 1 || list[0].(map[string]any)["uuid"] != id {
					t.Errorf("page 2 %v", m)
				}
			}},
		{"list project: its own and the public", "GET", "/v1/runbooks?project=p9", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			if list := m["runbooks"].([]any); len(list) != 1 || list[0].(map[string]any)["name"] != "CUSTOM_B" {
				t.Errorf("project list %v", m)
			}
		}},
		{"list bad field", "GET", "/v1/runbooks?fields=nope", "", rbLegacy, 400, `Field(s) "nope" are not valid`, nil},
		{"list sort on steps", "GET", "/v1/runbooks?sort_key=steps", "", rbLegacy, 400, "The sort_key value steps is an invalid field for sorting", nil},
		{"list bad sort dir", "GET", "/v1/runbooks?sort_dir=up", "", rbLegacy, 400,
			"Invalid sort direction: up. Acceptable values are 'asc' or 'desc'", nil},
		{"list bad limit", "GET", "/v1/runbooks?limit=0", "", rbLegacy, 400, "Limit must be positive", nil},
		{"list unknown marker", "GET", "/v1/runbooks?marker=11111111-2222-4333-8444-555555555555", "", rbLegacy, 404,
			"Runbook 11111111-2222-4333-8444-555555555555 could not be found.", nil},
		{"list unknown arg", "GET", "/v1/runbooks?node=x", "", rbLegacy, 400, "Unexpected arguments: node", nil},
		{"get by name", "GET", "/v1/runbooks/CUSTOM_BIOS", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			if m["uuid"] != id || fmt.Sprint(m["extra"]) != "map[k:v]" {
				t.Errorf("get %v", m)
			}
		}},
		{"get by uuid with fields", "GET", "/v1/runbooks/" + id + "?fields=name", "", rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
			if len(m) != 2 || m["name"] != "CUSTOM_BIOS" {
				t.Errorf("fields %v", m)
			}
		}},
		{"get unknown", "GET", "/v1/runbooks/CUSTOM_NONE", "", rbLegacy, 404, "Runbook CUSTOM_NONE could not be found.", nil},
		{"get bad ident", "GET", "/v1/runbooks/a%20b", "", rbLegacy, 400, "Expected UUID or name for runbook_ident: a b", nil},
		{"duplicate name", "POST", "/v1/runbooks", body, rbLegacy, 409, "A runbook with name CUSTOM_BIOS already exists.", nil},
		{"duplicate uuid", "POST", "/v1/runbooks", `{"uuid": "` + id + `", "name": "CUSTOM_OTHER", "steps": [` + step2 + `]}`, rbLegacy, 409,
			"A runbook with UUID " + id + " already exists.", nil},
		{"name not a trait", "POST", "/v1/runbooks", `{"name": "my-runbook", "steps": [` + step2 + `]}`, rbLegacy, 400,
			"Schema error for runbook: 'my-runbook' is not valid under any of the given schemas. Possible root cause: 'my-runbook' does not match '^CUSTOM_[A-Z0-9_]+$'", nil},
		{"no name", "POST", "/v1/runbooks", `{"steps": [` + step2 + `]}`, rbLegacy, 400, "Schema error for runbook: 'name' is a required property", nil},
		{"no steps", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": []}`, rbLegacy, 400, "Schema error for runbook: [] should be non-empty", nil},
		{"step without order", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [{"interface": "deploy", "step": "x"}]}`, rbLegacy, 400,
			"Schema error for runbook: 'order' is a required property", nil},
		{"step with priority", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [{"interface": "deploy", "step": "x", "order": 1, "priority": 1}]}`,
			rbLegacy, 400, "Schema error for runbook: Additional properties are not allowed ('priority' was unexpected)", nil},
		{"step bad interface", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [{"interface": "cpu", "step": "x", "order": 1}]}`, rbLegacy, 400,
			"Schema error for runbook: 'cpu' is not one of ['vendor', 'power', 'management', 'firmware', 'deploy', 'bios', 'raid']", nil},
		{"step negative order", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [{"interface": "deploy", "step": "x", "order": -1}]}`, rbLegacy, 400,
			"Schema error for runbook: -1 is less than the minimum of 0", nil},
		{"duplicate steps", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [` + step2 + `, ` + step2 + `]}`, rbLegacy, 400,
			"Deploy template invalid: Duplicate deploy steps. A template cannot have multiple deploy steps with the same interface and step. " +
				"Duplicates: interface: deploy, step: erase_devices.", nil},
		{"unknown property", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [` + step2 + `], "description": "d"}`, rbLegacy, 400,
			"Schema error for runbook: Additional properties are not allowed ('description' was unexpected)", nil},
		{"public not a boolean", "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "steps": [` + step2 + `], "public": "yes"}`, rbLegacy, 400,
			"Schema error for runbook: 'yes' is not of type 'boolean', 'null'", nil},
		{"bad uuid", "POST", "/v1/runbooks", `{"uuid": "nope", "name": "CUSTOM_X", "steps": [` + step2 + `]}`, rbLegacy, 400,
			"Expected UUID for uuid: nope", nil},
		{"patch name, steps, extra", "PATCH", "/v1/runbooks/CUSTOM_BIOS",
			`[{"op": "replace", "path": "/name", "value": "CUSTOM_BIOS2"}, {"op": "replace", "path": "/steps/0/order", "value": 5},
			  {"op": "add", "path": "/steps/0/priority", "value": 9}, {"op": "remove", "path": "/extra/k"},
			  {"op": "replace", "path": "/disable_ramdisk", "value": true}]`,
			rbLegacy, 200, "", func(t *testing.T, m map[string]any) {
				s := m["steps"].([]any)[0].(map[string]any)
				if m["name"] != "CUSTOM_BIOS2" || s["order"] != 5.0 || s["priority"] != nil || fmt.Sprint(m["extra"]) != "map[]" ||
					m["disable_ramdisk"] != true || m["updated_at"] == nil {
					t.Errorf("patched %v (a step's unknown key is dropped, as Ironic prunes it)", m)
				}
			}},
		{"patch name to a logical name", "PATCH", "/v1/runbooks/CUSTOM_BIOS2", `[{"op": "replace", "path": "/name", "value": "bios-rb"}]`,
			rbLegacy, 200, "", nil},
		{"patch name not a name", "PATCH", "/v1/runbooks/bios-rb", `[{"op": "replace", "path": "/name", "value": "a b"}]`, rbLegacy, 400,
			`Schema error for patch: 'a b' does not match '^[A-Za-z0-9\\-._~]+$'`, nil},
		{"patch name taken", "PATCH", "/v1/runbooks/bios-rb", `[{"op": "replace", "path": "/name", "value": "CUSTOM_B"}]`, rbLegacy, 409,
			"A runbook with name CUSTOM_B already exists.", nil},
		{"patch uuid", "PATCH", "/v1/runbooks/bios-rb", `[{"op": "replace", "path": "/uuid", "value": "` + id + `"}]`, rbLegacy, 400,
			"Cannot patch /uuid. Only the following can be updated: disable_ramdisk, extra, name, owner, public, steps", nil},
		{"patch owner of a public runbook", "PATCH", "/v1/runbooks/CUSTOM_B", `[{"op": "add", "path": "/owner", "value": "p1"}]`, rbLegacy, 400,
			"Couldn't apply patch '[{'op': 'add', 'path': '/owner', 'value': 'p1'}]'. Reason: There cannot be an owner for a public runbook", nil},
		{"patch owner and public", "PATCH", "/v1/runbooks/CUSTOM_B",
			`[{"op": "replace", "path": "/public", "value": false}, {"op": "add", "path": "/owner", "value": "p1"}]`, rbLegacy, 200, "",
			func(t *testing.T, m map[string]any) {
				if m["public"] != false || m["owner"] != "p1" {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch public clears the owner", "PATCH", "/v1/runbooks/CUSTOM_B", `[{"op": "replace", "path": "/public", "value": true}]`, rbLegacy, 200, "",
			func(t *testing.T, m map[string]any) {
				if m["public"] != true || m["owner"] != nil {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch empty steps", "PATCH", "/v1/runbooks/CUSTOM_B", `[{"op": "replace", "path": "/steps", "value": []}]`, rbLegacy, 400,
			"Schema error for patch: [] should be non-empty", nil},
		{"patch unknown", "PATCH", "/v1/runbooks/CUSTOM_NONE", `[{"op": "replace", "path": "/extra", "value": {}}]`, rbLegacy, 404,
			"Runbook CUSTOM_NONE could not be found.", nil},
		{"delete", "DELETE", "/v1/runbooks/CUSTOM_B", "", rbLegacy, 204, "", nil},
		{"delete again", "DELETE", "/v1/runbooks/CUSTOM_B", "", rbLegacy, 404, "Runbook CUSTOM_B could not be found.", nil},
		{"gone", "GET", "/v1/runbooks/" + other["uuid"].(string), "", rbLegacy, 404, "", nil},
	})
}

// TestRunbookProvision: {"target": "clean"|"service", "runbook": ...} runs
// the runbook's steps, in its order, as the manual clean or service steps
// of a node whose traits name the runbook; Ironic's refusals otherwise.
func TestRunbookProvision(t *testing.T) {
	e := newEnv(t)
	// apply then reset leaves no setting; the fake BIOS shows which ran last.
	mustRunbook(t, e, `{"name": "CUSTOM_SET", "steps": [`+biosStep("LogicalProc", "Enabled", 2)+`]}`)
	reset := mustRunbook(t, e, `{"name": "CUSTOM_RESET", "steps": [`+biosStep("LogicalProc", "Disabled", 1)+`, `+resetStep+`]}`)
	mustRunbook(t, e, `{"name": "CUSTOM_NOT_ON_NODE", "steps": [`+resetStep+`]}`)
	m := e.mustNode(&model.Node{Name: "rb1", ProvisionState: fsm.Manageable, Traits: []string{"CUSTOM_SET", "CUSTOM_RESET"}})
	a := e.mustNode(&model.Node{Name: "rb2", ProvisionState: fsm.Active, Traits: []string{"CUSTOM_SET"}})
	prov := func(n *model.Node) string { return "/v1/nodes/" + n.UUID + "/states/provision" }
	steps := `"clean_steps": [{"interface": "deploy", "step": "erase_devices"}]`
	runVCases(t, e, []vcase{
		{"clean by name", "PUT", prov(m), `{"target": "clean", "runbook": "CUSTOM_SET"}`, at(92), 202, "", nil},
	})
	wantBIOS(t, e, m, "Enabled")
	runVCases(t, e, []vcase{
		{"clean by uuid: steps in the runbook's order", "PUT", prov(m), `{"target": "clean", "runbook": "` + reset["uuid"].(string) + `"}`,
			rbLegacy, 202, "", nil},
	})
	wantBIOS(t, e, m, "")
	runVCases(t, e, []vcase{
		{"node lacks the trait", "PUT", prov(m), `{"target": "clean", "runbook": "CUSTOM_NOT_ON_NODE"}`, rbLegacy, 400,
			"This runbook has not been approved for use on this node " + m.UUID + ". Please ask an administrator to add it to your node traits.", nil},
		{"runbook and clean_steps", "PUT", prov(m), `{"target": "clean", "runbook": "CUSTOM_SET", ` + steps + `}`, rbLegacy, 400,
			`Please provide either "clean_steps" or a runbook, but not both.`, nil},
		{"runbook and service_steps", "PUT", prov(a), `{"target": "service", "runbook": "CUSTOM_SET", "service_steps": [{"interface": "bios", "step": "factory_reset"}]}`,
			rbLegacy, 400, `Please provide either "service_steps" or a runbook, but not both.`, nil},
		{"runbook with clean_steps on service", "PUT", prov(a), `{"target": "service", "runbook": "CUSTOM_SET", ` + steps + `}`, rbLegacy, 400,
			`"runbooks" is only valid when setting target provision state to any of ['clean', 'service']`, nil},
		{"runbook with another verb", "PUT", prov(m), `{"target": "provide", "runbook": "CUSTOM_SET"}`, rbLegacy, 400,
			"disable_ramdisk is supported only with manual cleaning or servicing", nil},
		{"service by runbook before 1.108", "PUT", prov(a), `{"target": "service", "runbook": "CUSTOM_SET"}`, at(107), 406,
			"disable_ramdisk is not acceptable in this API version", nil},
		{"the state machine first", "PUT", prov(a), `{"target": "clean", "runbook": "CUSTOM_NONE"}`, rbLegacy, 400,
			`The requested action "clean" can not be performed on node "` + a.UUID + `" while it is in state "active".`, nil},
		{"unknown runbook", "PUT", prov(m), `{"target": "clean", "runbook": "CUSTOM_NONE"}`, rbLegacy, 404, "Runbook CUSTOM_NONE could not be found.", nil},
	})
	rec := e.do("PUT", prov(a), `{"target": "service", "runbook": "CUSTOM_SET"}`, rbLegacy)
	if rec.Code != 202 {
		t.Fatalf("service by runbook: %d %s", rec.Code, rec.Body.String())
	}
	wantBIOS(t, e, a, "Enabled")
	if n, _ := e.st.Nodes().GetNode(t.Context(), a.UUID); n.ProvisionState != fsm.Active {
		t.Errorf("after servicing: %s", n.ProvisionState)
	}
}

// wantBIOS checks the fake BIOS of n after a runbook ran: LogicalProc is
// want ("": no setting), and the node is back in its state without error.
func wantBIOS(t *testing.T, e *env, n *model.Node, want string) {
	t.Helper()
	got, err := e.st.Nodes().GetNode(t.Context(), n.UUID)
	if err != nil || got.LastError != "" || got.ProvisionState != n.ProvisionState {
		t.Fatalf("after the runbook: %v state %q last_error %q", err, got.ProvisionState, got.LastError)
	}
	list, _ := decode(t, e.do("GET", "/v1/nodes/"+n.UUID+"/bios", "", rbLegacy))["bios"].([]any)
	switch {
	case want == "" && len(list) != 0:
		t.Errorf("bios after the runbook: %v, want none (factory_reset ran last)", list)
	case want != "" && (len(list) != 1 || list[0].(map[string]any)["value"] != want):
		t.Errorf("bios after the runbook: %v, want LogicalProc=%q", list, want)
	}
}

// TestRunbookStepErrorMasksSecrets: a runbook step the driver refuses
// fails the clean with the step in last_error, its secret arguments masked.
func TestRunbookStepErrorMasksSecrets(t *testing.T) {
	e := newEnv(t)
	mustRunbook(t, e, `{"name": "CUSTOM_PW", "steps": [{"interface": "bios", "step": "apply_configuration", "args": {"settings": [], "password": "s3cret-arg"}, "order": 1}]}`)
	n := e.mustNode(&model.Node{Name: "pw", ProvisionState: fsm.Manageable, Traits: []string{"CUSTOM_PW"}})
	if rec := e.do("PUT", "/v1/nodes/"+n.UUID+"/states/provision", `{"target": "clean", "runbook": "CUSTOM_PW"}`, rbLegacy); rec.Code != 202 {
		t.Fatalf("clean: %d %s", rec.Code, rec.Body.String())
	}
	got, err := e.st.Nodes().GetNode(t.Context(), n.UUID)
	if err != nil || got.ProvisionState != fsm.CleanFailed || !strings.Contains(got.LastError, "'password': '******'") ||
		strings.Contains(got.LastError, "s3cret-arg") {
		t.Errorf("after a refused step: %v %s %q", err, got.ProvisionState, got.LastError)
	}
}

// rbLegacy is the newest version before runbook traits: these tests are
// of runbooks as 1.92-1.111 serve them (1.112's are in
// microversions115_test.go).
var rbLegacy = at(minorRunbookTraits - 1)
