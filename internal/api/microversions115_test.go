package api

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// The behaviour changes of 1.111 to 1.115 (Ironic master 63fefc3ce,
// 88ae57136, 882b345eb, a62522eaf, 8786b215d), each just below and at its
// version.

// isNull checks that key is present and null.
func isNull(key string) func(t *testing.T, m map[string]any) {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if v, ok := m[key]; !ok || v != nil {
			t.Errorf("%s = %#v (present %v), want null", key, v, ok)
		}
	}
}

// hasJSON checks a key's decoded value (lists too).
func hasJSON(key string, want any) func(t *testing.T, m map[string]any) {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if got, ok := m[key]; !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v (present %v), want %#v", key, got, ok, want)
		}
	}
}

// 1.111: a port's available_for_dynamic_portgroup (default true,
// user-editable) and a portgroup's dynamic_portgroup (read-only).
func TestMicroversionDynamicPortgroup(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "dp"})
	pg := &model.Portgroup{UUID: "8d4bd8b5-3a39-4f4e-9d53-1f8a1b3c0a01", NodeUUID: n.UUID, Name: "pg1"}
	if err := e.st.Ports().CreatePortgroup(context.Background(), pg); err != nil {
		t.Fatal(err)
	}
	old := &model.Port{UUID: "8d4bd8b5-3a39-4f4e-9d53-1f8a1b3c0a02", NodeUUID: n.UUID, Address: "52:54:00:00:11:01"}
	if err := e.st.Ports().CreatePort(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	port := func(addr, extra string) string {
		return `{"node_uuid":"` + n.UUID + `","address":"` + addr + `"` + extra + `}`
	}
	runVCases(t, e, []vcase{
		{"hidden at 1.110", "GET", "/v1/ports/" + old.UUID, "", at(110), 200, "", lacksKey("available_for_dynamic_portgroup")},
		{"true by default at 1.111", "GET", "/v1/ports/" + old.UUID, "", at(111), 200, "", hasKey("available_for_dynamic_portgroup", true)},
		{"fields at 1.110", "GET", "/v1/ports/" + old.UUID + "?fields=available_for_dynamic_portgroup", "", at(110), 406, "Request not acceptable.", nil},
		{"fields at 1.111", "GET", "/v1/ports/" + old.UUID + "?fields=available_for_dynamic_portgroup", "", at(111), 200, "",
			hasKey("available_for_dynamic_portgroup", true)},
		{"create with it at 1.110", "POST", "/v1/ports", port("52:54:00:00:11:02", `,"available_for_dynamic_portgroup":false`), at(110), 406, "", nil},
		{"create with false at 1.111", "POST", "/v1/ports", port("52:54:00:00:11:03", `,"available_for_dynamic_portgroup":false`), at(111), 201, "",
			hasKey("available_for_dynamic_portgroup", false)},
		{"create without it", "POST", "/v1/ports", port("52:54:00:00:11:04", ""), latest, 201, "", hasKey("available_for_dynamic_portgroup", true)},
		{"a boolean only", "POST", "/v1/ports", port("52:54:00:00:11:05", `,"available_for_dynamic_portgroup":"maybe"`), latest, 400,
			"Schema error for port: 'maybe' is not of type 'boolean'", nil},
		{"patch at 1.110", "PATCH", "/v1/ports/" + old.UUID, `[{"op":"replace","path":"/available_for_dynamic_portgroup","value":false}]`, at(110), 406, "", nil},
		{"patch at 1.111", "PATCH", "/v1/ports/" + old.UUID, `[{"op":"replace","path":"/available_for_dynamic_portgroup","value":false}]`, at(111), 200, "",
			hasKey("available_for_dynamic_portgroup", false)},
		{"kept by other patches", "PATCH", "/v1/ports/" + old.UUID, `[{"op":"add","path":"/extra/k","value":1}]`, latest, 200, "",
			hasKey("available_for_dynamic_portgroup", false)},
		{"patched back", "PATCH", "/v1/ports/" + old.UUID, `[{"op":"replace","path":"/available_for_dynamic_portgroup","value":true}]`, latest, 200, "",
			hasKey("available_for_dynamic_portgroup", true)},

		{"portgroup: hidden at 1.110", "GET", "/v1/portgroups/" + pg.UUID, "", at(110), 200, "", lacksKey("dynamic_portgroup")},
		{"portgroup: false at 1.111", "GET", "/v1/portgroups/" + pg.UUID, "", at(111), 200, "", hasKey("dynamic_portgroup", false)},
		{"portgroup: fields at 1.110", "GET", "/v1/portgroups/" + pg.UUID + "?fields=dynamic_portgroup", "", at(110), 406, "Request not acceptable.", nil},
		{"portgroup: fields at 1.111", "GET", "/v1/portgroups/" + pg.UUID + "?fields=dynamic_portgroup", "", at(111), 200, "", hasKey("dynamic_portgroup", false)},
		{"portgroup: list fields at 1.110", "GET", "/v1/portgroups?fields=dynamic_portgroup", "", at(110), 406, "Request not acceptable.", nil},
		{"portgroup: not settable", "POST", "/v1/portgroups", `{"node_uuid":"` + n.UUID + `","dynamic_portgroup":true}`, latest, 400,
			"Schema error for portgroup: Additional properties are not allowed ('dynamic_portgroup' was unexpected)", nil},
		{"portgroup: not patchable", "PATCH", "/v1/portgroups/" + pg.UUID, `[{"op":"replace","path":"/dynamic_portgroup","value":true}]`, latest, 400,
			"Cannot patch /dynamic_portgroup. Only the following can be updated: " + strings.Join(portgroupPatchAllowed, ", "), nil},
	})
}

// 1.112: runbook traits, description, any logical name, the traits
// sub-resource and the trait-based approval of a runbook for a node.
func TestMicroversionRunbookTraits(t *testing.T) {
	e := newEnv(t)
	step := `"steps":[` + biosStep("LogicalProc", "Enabled", 1) + `]`
	legacy := mustRunbookAt(t, e, 110, `{"name":"CUSTOM_OLD",`+step+`}`)
	if _, ok := legacy["traits"]; ok {
		t.Fatalf("traits shown at 1.110: %v", legacy)
	}
	rb := mustRunbookAt(t, e, 112, `{"name":"firmware-pass.v2","description":"BIOS pass",`+step+`}`)
	id := rb["uuid"].(string)
	if rb["description"] != "BIOS pass" || !reflect.DeepEqual(rb["traits"], []any{}) {
		t.Fatalf("created at 1.112: %v", rb)
	}
	if keys := orderedKeys(t, []byte(e.do("GET", "/v1/runbooks/"+id, "", latest).Body.String())); !slices.Equal(keys,
		[]string{"uuid", "created_at", "updated_at", "name", "extra", "public", "owner", "disable_ramdisk", "description", "links", "steps", "traits"}) {
		t.Errorf("keys at 1.112: %v", keys)
	}
	tr := "/v1/runbooks/" + id + "/traits"
	runVCases(t, e, []vcase{
		{"name must be a trait at 1.111", "POST", "/v1/runbooks", `{"name":"firmware-pass",` + step + `}`, at(111), 400,
			"Schema error for runbook: 'firmware-pass' is not valid under any of the given schemas. Possible root cause: 'firmware-pass' does not match '^CUSTOM_[A-Z0-9_]+$'", nil},
		{"no description at 1.111", "POST", "/v1/runbooks", `{"name":"CUSTOM_D","description":"x",` + step + `}`, at(111), 400,
			"Schema error for runbook: Additional properties are not allowed ('description' was unexpected)", nil},
		{"traits not settable on create", "POST", "/v1/runbooks", `{"name":"CUSTOM_T","traits":["CUSTOM_A"],` + step + `}`, latest, 400,
			"Schema error for runbook: Additional properties are not allowed ('traits' was unexpected)", nil},
		{"name pattern at 1.112", "POST", "/v1/runbooks", `{"name":"a b",` + step + `}`, latest, 400,
			`Schema error for runbook: 'a b' does not match '^[A-Za-z0-9\\-._~]+$'`, nil},
		{"description too long", "POST", "/v1/runbooks", `{"name":"long","description":"` + strings.Repeat("d", 256) + `",` + step + `}`, latest, 400, "", nil},
		{"hidden at 1.111", "GET", "/v1/runbooks/" + id, "", at(111), 200, "", func(t *testing.T, m map[string]any) {
			lacksKey("traits")(t, m)
			lacksKey("description")(t, m)
		}},
		{"fields=traits at 1.111", "GET", "/v1/runbooks/" + id + "?fields=traits", "", at(111), 400, `Field(s) "traits" are not valid`, nil},
		{"fields=traits at 1.112", "GET", "/v1/runbooks/" + id + "?fields=traits,description", "", at(112), 200, "", hasJSON("traits", []any{})},
		{"patch description at 1.111", "PATCH", "/v1/runbooks/" + id, `[{"op":"replace","path":"/description","value":"y"}]`, at(111), 400,
			"Cannot patch /description. Only the following can be updated: " + strings.Join(runbookPatchFields, ", "), nil},
		{"patch description at 1.112", "PATCH", "/v1/runbooks/" + id, `[{"op":"replace","path":"/description","value":"y"}]`, at(112), 200, "",
			hasKey("description", "y")},
		{"traits not patchable", "PATCH", "/v1/runbooks/" + id, `[{"op":"add","path":"/traits","value":["CUSTOM_A"]}]`, latest, 400, "", nil},
		{"sort by traits", "GET", "/v1/runbooks?sort_key=traits", "", latest, 400, "", nil},

		{"traits at 1.111", "GET", tr, "", at(111), 404, "The API version does not allow runbook traits", nil},
		{"put traits at 1.111", "PUT", tr, `{"traits":["CUSTOM_A"]}`, at(111), 404, "The API version does not allow runbook traits", nil},
		{"traits below runbooks", "GET", tr, "", at(91), 404, "", nil},
		{"none yet", "GET", tr, "", latest, 200, "", hasJSON("traits", []any{})},
		{"replace all", "PUT", tr, `{"traits":["CUSTOM_B","CUSTOM_A","CUSTOM_B"]}`, latest, 204, "", nil},
		{"listed once, in order", "GET", tr, "", latest, 200, "", hasJSON("traits", []any{"CUSTOM_A", "CUSTOM_B"})},
		{"shown on the runbook", "GET", "/v1/runbooks/" + id, "", latest, 200, "", hasJSON("traits", []any{"CUSTOM_A", "CUSTOM_B"})},
		{"add one", "PUT", tr + "/CUSTOM_C", "", latest, 204, "", nil},
		{"add one again", "PUT", tr + "/CUSTOM_C", "", latest, 204, "", nil},
		{"bad trait", "PUT", tr + "/lower", "", latest, 400,
			"Schema error for trait: 'lower' is not valid under any of the given schemas. Possible root cause: 'lower' does not match '^CUSTOM_[A-Z0-9_]+$'", nil},
		{"bad trait in the body", "PUT", tr, `{"traits":["lower"]}`, latest, 400, "", nil},
		{"unknown key in the body", "PUT", tr, `{"trait":["CUSTOM_A"]}`, latest, 400,
			"Schema error for body: Additional properties are not allowed ('trait' was unexpected)", nil},
		{"neither one nor a list", "PUT", tr, `{}`, latest, 400,
			"A single runbook trait may be added via PUT /v1/runbooks/<runbook identifier>/traits/<trait> with no body, or all runbook traits may be replaced via PUT /v1/runbooks/<runbook identifier>/traits with the list of traits specified in the request body.", nil},
		{"both one and a list", "PUT", tr + "/CUSTOM_D", `{"traits":["CUSTOM_A"]}`, latest, 400, "", nil},
		{"after adding", "GET", tr, "", latest, 200, "", hasJSON("traits", []any{"CUSTOM_A", "CUSTOM_B", "CUSTOM_C"})},
		{"delete one", "DELETE", tr + "/CUSTOM_B", "", latest, 204, "", nil},
		{"delete one it lacks", "DELETE", tr + "/CUSTOM_B", "", latest, 204, "", nil},
		{"after deleting", "GET", tr, "", latest, 200, "", hasJSON("traits", []any{"CUSTOM_A", "CUSTOM_C"})},
		{"by name", "GET", "/v1/runbooks/firmware-pass.v2/traits", "", latest, 200, "", hasJSON("traits", []any{"CUSTOM_A", "CUSTOM_C"})},
		{"unknown runbook", "GET", "/v1/runbooks/nope/traits", "", latest, 404, "Runbook nope could not be found.", nil},
	})
	rec := e.do("PUT", tr+"/CUSTOM_E", "", latest)
	if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/runbooks/"+id+"/traits/CUSTOM_E" {
		t.Errorf("Location %q", loc)
	}

	// Approval for a node: from 1.112 a trait in common, before it the name.
	m := e.mustNode(&model.Node{Name: "rbt", ProvisionState: fsm.Manageable, Traits: []string{"CUSTOM_OLD", "CUSTOM_C"}})
	m2 := e.mustNode(&model.Node{Name: "rbt2", ProvisionState: fsm.Manageable, Traits: []string{"CUSTOM_C"}})
	x := e.mustNode(&model.Node{Name: "rbx", ProvisionState: fsm.Manageable, Traits: []string{"CUSTOM_X"}})
	empty := mustRunbookAt(t, e, 112, `{"name":"empty",`+step+`}`)
	prov := func(n *model.Node) string { return "/v1/nodes/" + n.UUID + "/states/provision" }
	runVCases(t, e, []vcase{
		{"no traits at 1.112", "PUT", prov(m), `{"target":"clean","runbook":"empty"}`, at(112), 400,
			"Runbook " + empty["uuid"].(string) + " has no traits configured. Please ask an administrator to add traits to the runbook.", nil},
		{"no trait in common", "PUT", prov(x), `{"target":"clean","runbook":"firmware-pass.v2"}`, at(112), 400,
			"This runbook has not been approved for use on this node " + x.UUID + ". The node does not have any of the runbook's traits " +
				"['CUSTOM_A', 'CUSTOM_C', 'CUSTOM_E']. Please ask an administrator to add a matching trait to your node.", nil},
		{"the name is no trait at 1.111", "PUT", prov(m), `{"target":"clean","runbook":"firmware-pass.v2"}`, at(111), 400,
			"This runbook has not been approved for use on this node " + m.UUID + ". Please ask an administrator to add it to your node traits.", nil},
		{"a legacy runbook by name at 1.111", "PUT", prov(m), `{"target":"clean","runbook":"CUSTOM_OLD"}`, at(111), 202, "", nil},
		{"a trait in common at 1.112", "PUT", prov(m2), `{"target":"clean","runbook":"firmware-pass.v2"}`, at(112), 202, "", nil},
	})
	if req := e.cond.lastProvision(); req.Runbook != "firmware-pass.v2" || req.Minor != 112 {
		t.Errorf("request %+v", req)
	}
	wantBIOS(t, e, m2, "Enabled") // the runbook ran
}

func mustRunbookAt(t *testing.T, e *env, minor int, body string) map[string]any {
	t.Helper()
	rec := e.do("POST", "/v1/runbooks", body, at(minor))
	if rec.Code != 201 {
		t.Fatalf("create runbook at 1.%d: %d %s", minor, rec.Code, rec.Body.String())
	}
	return decode(t, rec)
}

// 1.113 and 1.115: a history entry's project, then its state,
// target_provision_state and duration_seconds (detail only).
func TestMicroversionHistoryFields(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n := e.mustNode(&model.Node{Name: "hist"})
	full := &model.HistoryEvent{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c201", NodeUUID: n.UUID, Severity: "INFO", EventType: "provisioning",
		Event: "e1", Conductor: "c1", User: "u1", Project: "p1", State: "deploying", TargetProvisionState: "active", DurationSeconds: new(int64(42))}
	bare := &model.HistoryEvent{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c202", NodeUUID: n.UUID, Severity: "INFO", Event: "e2"}
	for _, ev := range []*model.HistoryEvent{full, bare} {
		if err := e.st.Nodes().AddHistory(ctx, ev, 0); err != nil {
			t.Fatal(err)
		}
	}
	one := "/v1/nodes/" + n.UUID + "/history/" + full.UUID
	runVCases(t, e, []vcase{
		{"no project at 1.112", "GET", one, "", at(112), 200, "", lacksKey("project")},
		{"project at 1.113", "GET", one, "", at(113), 200, "", func(t *testing.T, m map[string]any) {
			hasKey("project", "p1")(t, m)
			lacksKey("state")(t, m)
			lacksKey("target_provision_state")(t, m)
		}},
		{"state at 1.115", "GET", one, "", at(115), 200, "", func(t *testing.T, m map[string]any) {
			hasKey("state", "deploying")(t, m)
			hasKey("target_provision_state", "active")(t, m)
			hasKey("duration_seconds", 42.0)(t, m)
		}},
		{"nulls at 1.115", "GET", "/v1/nodes/" + n.UUID + "/history/" + bare.UUID, "", at(115), 200, "", func(t *testing.T, m map[string]any) {
			isNull("project")(t, m)
			isNull("state")(t, m)
			isNull("target_provision_state")(t, m)
			isNull("duration_seconds")(t, m)
		}},
		{"not in the short list", "GET", "/v1/nodes/" + n.UUID + "/history", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			ev := m["history"].([]any)[0].(map[string]any)
			lacksKey("project")(t, ev)
			lacksKey("state")(t, ev)
		}},
		{"in the detailed list", "GET", "/v1/nodes/" + n.UUID + "/history?detail=True", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			hasKey("project", "p1")(t, m["history"].([]any)[0].(map[string]any))
		}},
		{"sorted by state", "GET", "/v1/nodes/" + n.UUID + "/history?detail=True&sort_key=state&sort_dir=desc", "", latest, 200, "",
			func(t *testing.T, m map[string]any) {
				hasKey("uuid", full.UUID)(t, m["history"].([]any)[0].(map[string]any))
			}},
	})
	// Ironic's detail_fields order, then Anvil's transition keys.
	keys := orderedKeys(t, e.do("GET", one, "", latest).Body.Bytes())
	want := []string{"uuid", "created_at", "severity", "event_type", "event", "conductor", "user", "project", "state",
		"target_provision_state", "duration_seconds", "from_state", "to_state", "trigger", "links"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys at 1.115:\n got %v\nwant %v", keys, want)
	}
	// Below 1.115 the keys are as before.
	keys = orderedKeys(t, e.do("GET", one, "", at(110)).Body.Bytes())
	if want := []string{"uuid", "created_at", "severity", "event_type", "event", "conductor", "user", "from_state", "to_state",
		"trigger", "duration_seconds", "links"}; !slices.Equal(keys, want) {
		t.Errorf("keys at 1.110:\n got %v\nwant %v", keys, want)
	}
}

// The conductor records the node's state and target with each entry
// (Ironic master's node_history_record).
func TestHistoryRecordsState(t *testing.T) {
	e := newEnv(t)
	n := e.createNode(`{"driver":"fake-hardware","name":"rec"}`)
	id := n["uuid"].(string)
	if rec := e.do("PUT", "/v1/nodes/"+id+"/maintenance", `{"reason":"look"}`, latest); rec.Code != 202 {
		t.Fatalf("maintenance: %d %s", rec.Code, rec.Body.String())
	}
	m := decode(t, e.do("GET", "/v1/nodes/"+id+"/history?detail=True", "", latest))
	evs := m["history"].([]any)
	if len(evs) == 0 {
		t.Fatal("no history")
	}
	last := evs[len(evs)-1].(map[string]any)
	if last["event_type"] != "maintenance" || last["state"] != "enroll" || last["project"] != nil {
		t.Errorf("entry %v", last)
	}
	if _, ok := last["target_provision_state"]; !ok {
		t.Errorf("no target_provision_state in %v", last)
	}
}

// 1.114: a firmware component's vendor, model and serial_number, checked
// against Ironic master's sample.
func TestMicroversionFirmwareIdentity(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "fw"})
	comps := []model.FirmwareComponent{{Component: "bios", CurrentVersion: "v1.0.0"},
		{Component: "bmc", CurrentVersion: "v1.0.0", Model: "iDRAC 9"},
		{Component: "NIC:ABC12345", CurrentVersion: "22.5.0", Vendor: "Intel Corporation", Model: "Intel(R) 25GbE 2P XXV710 Adptr", SerialNumber: "ABC12345"}}
	if err := e.st.Settings().SyncFirmwareComponents(context.Background(), n.UUID, comps); err != nil {
		t.Fatal(err)
	}
	path := "/v1/nodes/" + n.UUID + "/firmware"
	runVCases(t, e, []vcase{
		{"hidden at 1.113", "GET", path, "", at(113), 200, "", func(t *testing.T, m map[string]any) {
			for _, c := range m["firmware"].([]any) {
				lacksKey("vendor")(t, c.(map[string]any))
				lacksKey("serial_number")(t, c.(map[string]any))
			}
		}},
		{"fields at 1.113", "GET", path + "?fields=serial_number,vendor,component", "", at(113), 400,
			"Fields serial_number, vendor are not allowed in this API version. They require at least API version 1.114.", nil},
		{"fields at 1.110, unknown node first", "GET", "/v1/nodes/nope/firmware?fields=model", "", at(110), 404, "Node nope could not be found.", nil},
		{"fields at 1.114", "GET", path + "?fields=component,model", "", at(114), 200, "", func(t *testing.T, m map[string]any) {
			c := m["firmware"].([]any)[2].(map[string]any) // NIC:..., bios, bmc
			hasKey("model", "iDRAC 9")(t, c)
			lacksKey("vendor")(t, c)
		}},
	})
	rec := e.do("GET", path, "", at(114))
	var ours any
	if err := json.Unmarshal(rec.Body.Bytes(), &ours); err != nil {
		t.Fatal(err)
	}
	compareShape(t, "node-firmware-components-list-response.json", loadSample(t, "node-firmware-components-list-response.json"), ours, shapeRules{})
	fw := ours.(map[string]any)["firmware"].([]any)
	nic := fw[0].(map[string]any) // NIC:ABC12345 sorts first
	if nic["vendor"] != "Intel Corporation" || nic["serial_number"] != "ABC12345" || fw[1].(map[string]any)["serial_number"] != nil {
		t.Errorf("firmware at 1.114: %v", fw)
	}
}

// The advertised maximum is Ironic master's.
func TestMaxVersionIsMaster(t *testing.T) {
	if MaxMinor != 115 {
		t.Fatalf("MaxMinor %d, Ironic master (versions.py MINOR_MAX_VERSION) is 115", MaxMinor)
	}
	if !strings.Contains(e115Root(t), `"version": "1.115"`) {
		t.Errorf("GET /v1 does not advertise 1.115")
	}
}

func e115Root(t *testing.T) string {
	e := newEnv(t)
	return e.do("GET", "/v1/", "").Body.String()
}
