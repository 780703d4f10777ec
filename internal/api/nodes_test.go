package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

func TestNodeCreate(t *testing.T) {
	tests := []struct {
		name    string
		version string
		body    string
		status  int
		msg     string
		state   any
	}{
		{"minimal at latest", latest, `{"driver":"fake-hardware"}`, 201, "", "enroll"},
		{"at 1.1 is available (shown null)", "", `{"driver":"fake-hardware"}`, 201, "", nil},
		{"at 1.10 is available", at(10), `{"driver":"fake-hardware"}`, 201, "", "available"},
		{"at 1.11 is enroll", at(11), `{"driver":"fake-hardware"}`, 201, "", "enroll"},
		{"name and secrets", latest, `{"driver":"fake-hardware","name":"n-1.x_y~z","driver_info":{"ipmi_password":"p"}}`, 201, "", "enroll"},
		{"name at 1.1", "", `{"driver":"fake-hardware","name":"n1"}`, 406, "Request not acceptable.", nil},
		{"null name at 1.1", "", `{"driver":"fake-hardware","name":null}`, 201, "", nil},
		{"bad name", latest, `{"driver":"fake-hardware","name":"bad name!"}`, 400, "Cannot create node with invalid name 'bad name!'", nil},
		{"uuid-like name", latest, `{"driver":"fake-hardware","name":"0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"}`, 400,
			"Cannot create node with invalid name '0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3'", nil},
		{"upper case name before 1.10", at(9), `{"driver":"fake-hardware","name":"Node_A"}`, 400, "Cannot create node with invalid name 'Node_A'", nil},
		{"reserved name", latest, `{"driver":"fake-hardware","name":"detail"}`, 400,
			`The word "detail" is reserved and can not be used as a node name. Reserved words are: maintenance, management, states, vendor_passthru, detail, validate.`, nil},
		{"unknown field", latest, `{"driver":"fake-hardware","foo":1}`, 400, "Schema error for node: Additional properties are not allowed ('foo' was unexpected)", nil},
		{"two unknown fields", latest, `{"driver":"fake-hardware","foo":1,"bar":2}`, 400, "Schema error for node: Additional properties are not allowed ('bar', 'foo' were unexpected)", nil},
		{"read-only field", latest, `{"driver":"fake-hardware","provision_state":"active"}`, 400, "Schema error for node: Additional properties are not allowed ('provision_state' was unexpected)", nil},
		{"driver wrong type", latest, `{"driver":5}`, 400, "Schema error for node: 5 is not of type 'string'", nil},
		{"extra wrong type", latest, `{"driver":"fake-hardware","extra":"str"}`, 400, "Schema error for node: 'str' is not of type 'object', 'null'", nil},
		{"missing driver", latest, `{}`, 400, "Schema error for node: 'driver' is a required property", nil},
		{"empty body", latest, ``, 400, "Schema error for node: 'driver' is a required property", nil},
		{"array body", latest, `[1]`, 400, "Schema error for node: [1] is not of type 'object'", nil},
		{"bad boolean", latest, `{"driver":"fake-hardware","maintenance":"maybe"}`, 400,
			"Invalid maintenance: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'", nil},
		{"bad uuid", latest, `{"driver":"fake-hardware","uuid":"nope"}`, 400, "Expected UUID for uuid: nope", nil},
		{"unknown driver", latest, `{"driver":"no-such-driver"}`, 400,
			`No valid host was found. Reason: No conductor service registered which supports driver no-such-driver for conductor group "".`, nil},
		{"field newer than version", at(20), `{"driver":"fake-hardware","resource_class":"x"}`, 406, "Request not acceptable.", nil},
		{"interface before 1.31", at(30), `{"driver":"fake-hardware","power_interface":"fake"}`, 406, "Request not acceptable.", nil},
		{"empty conductor group before 1.46", at(45), `{"driver":"fake-hardware","conductor_group":""}`, 201, "", "enroll"},
		{"description too long", latest, `{"driver":"fake-hardware","description":"` + strings.Repeat("x", 4097) + `"}`, 400, "", nil},
		{"chassis", latest, `{"driver":"fake-hardware","chassis_uuid":"0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"}`, 400,
			"Chassis 0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3 could not be found.", nil},
		{"missing parent", latest, `{"driver":"fake-hardware","parent_node":"ghost"}`, 400,
			"Unable to apply the requested parent_node 'ghost'. Requested value was invalid.", nil},
		{"instance_name before 1.104", at(103), `{"driver":"fake-hardware","instance_name":"x"}`, 406, "Request not acceptable.", nil},
		{"instance_name", latest, `{"driver":"fake-hardware","instance_name":"x"}`, 201, "", "enroll"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var headers []string
			if tc.version != "" {
				headers = append(headers, tc.version)
			}
			rec := e.do("POST", "/v1/nodes", tc.body, headers...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code != 201 {
				_, msg := faultOf(t, rec)
				if tc.msg != "" && msg != tc.msg {
					t.Errorf("message %q\nwant    %q", msg, tc.msg)
				}
				return
			}
			n := decode(t, rec)
			if n["provision_state"] != tc.state {
				t.Errorf("provision_state %v, want %v", n["provision_state"], tc.state)
			}
			if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/nodes/"+n["uuid"].(string) {
				t.Errorf("Location %q", loc)
			}
			if strings.Contains(rec.Body.String(), `"p"`) {
				t.Error("secret echoed")
			}
		})
	}
}

func TestNodeCreateDuplicateName(t *testing.T) {
	e := newEnv(t)
	e.createNode(`{"driver":"fake-hardware","name":"dup"}`)
	rec := e.do("POST", "/v1/nodes", `{"driver":"fake-hardware","name":"dup"}`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 409 || msg != "A node with name dup already exists." {
		t.Fatalf("%d %q", rec.Code, msg)
	}
}

func TestNodeAtVersion1_1HasObservedKeys(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("old"))
	n.ProvisionState = "available"
	_ = e.st.Nodes().UpdateNode(context.Background(), n)
	rec := e.do("GET", "/v1/nodes/"+n.UUID, "")
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	want := []string{"uuid", "created_at", "updated_at", "console_enabled", "driver", "driver_info",
		"extra", "instance_info", "instance_uuid", "last_error", "maintenance", "maintenance_reason",
		"power_state", "properties", "provision_state", "provision_updated_at", "reservation",
		"target_power_state", "target_provision_state", "links", "chassis_uuid", "ports"}
	if got := orderedKeys(t, rec.Body.Bytes()); !slices.Equal(got, want) {
		t.Errorf("keys at 1.1:\n got %v\nwant %v", got, want)
	}
	if m := decode(t, rec); m["provision_state"] != nil {
		t.Errorf("available must read null at 1.1, got %v", m["provision_state"])
	}
}

func TestNodeGet(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("node-1"))
	tests := []struct {
		name, path string
		headers    []string
		status     int
		msg        string
	}{
		{"by uuid", "/v1/nodes/" + n.UUID, []string{latest}, 200, ""},
		{"by upper-case uuid", "/v1/nodes/" + strings.ToUpper(n.UUID), []string{latest}, 200, ""},
		{"by name", "/v1/nodes/node-1", []string{latest}, 200, ""},
		{"unversioned bookmark", "/nodes/node-1", []string{latest}, 200, ""},
		{"trailing slash", "/v1/nodes/node-1/", []string{latest}, 200, ""},
		{"collection with slash", "/v1/nodes/", []string{latest}, 200, ""},
		{"by name at 1.1", "/v1/nodes/node-1", nil, 404, "Node node-1 could not be found."},
		{"unknown", "/v1/nodes/does-not-exist", []string{latest}, 404, "Node does-not-exist could not be found."},
		{"bad characters", "/v1/nodes/bad%20name%21", []string{latest}, 400, "Expected UUID or name for node: bad name!"},
		{"encoded slash", "/v1/nodes/a%2Fb", []string{latest}, 400, "Expected UUID or name for node: a/b"},
		{"very long", "/v1/nodes/" + strings.Repeat("a", 5000), []string{latest}, 400, ""},
		{"fields", "/v1/nodes/node-1?fields=name,provision_state", []string{latest}, 200, ""},
		{"fields at 1.7", "/v1/nodes/node-1?fields=name", []string{at(7)}, 406, "Request not acceptable."},
		{"field too new", "/v1/nodes/node-1?fields=owner", []string{at(49)}, 406, "Request not acceptable."},
		{"unknown field", "/v1/nodes/node-1?fields=name,bogus", []string{latest}, 400, "Field bogus is not a valid field."},
		{"unknown parameter", "/v1/nodes/node-1?foo=1", []string{latest}, 400, "Unexpected arguments: foo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", tc.headers...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if tc.msg != "" {
				if _, msg := faultOf(t, rec); msg != tc.msg {
					t.Errorf("message %q, want %q", msg, tc.msg)
				}
			}
		})
	}
	rec := e.do("GET", "/v1/nodes/node-1?fields=provision_state,name,conductor", "", latest)
	if got := orderedKeys(t, rec.Body.Bytes()); !slices.Equal(got, []string{"provision_state", "name", "links", "conductor"}) {
		t.Errorf("fields keys %v", got)
	}
	if m := decode(t, rec); m["conductor"] != e.cond.Host() {
		t.Errorf("conductor %v", m["conductor"])
	}
}

func TestNodeConductorFollowsHeartbeat(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("c"))
	if m := decode(t, e.do("GET", "/v1/nodes/"+n.UUID, "", latest)); m["conductor"] != "anvil-test" {
		t.Fatalf("alive conductor not shown: %v", m["conductor"])
	}
	e.clock.Advance(61e9)
	if m := decode(t, e.do("GET", "/v1/nodes/"+n.UUID, "", latest)); m["conductor"] != nil {
		t.Fatalf("dead conductor shown: %v", m["conductor"])
	}
	if _, ok := decode(t, e.do("GET", "/v1/nodes/"+n.UUID, "", at(48)))["conductor"]; ok {
		t.Fatal("conductor shown before 1.49")
	}
}

func TestNodeMasking(t *testing.T) {
	e := newEnv(t)
	secrets := []string{"hunter2", "tok-123", "privkey", "cd-data", "img-url", "snmp-k", "nested-pw", "listpw"}
	body := `{"driver":"fake-hardware","name":"m",
		"driver_info":{"ipmi_password":"hunter2","auth_token":"tok-123","ssh_private_key":"privkey",
			"snmp_auth_key":"snmp-k","nested":{"password":"nested-pw"},"list":[{"password":"listpw"}],"ipmi_username":"admin"},
		"instance_info":{"configdrive":"cd-data","image_url":"img-url"}}`
	created := e.do("POST", "/v1/nodes", body, latest)
	if created.Code != 201 {
		t.Fatalf("%d %s", created.Code, created.Body.String())
	}
	uuid := decode(t, created)["uuid"].(string)
	patch := e.do("PATCH", "/v1/nodes/m", `[{"op":"add","path":"/driver_internal_info","value":{"agent_secret_token":"tok-123"}}]`, latest)
	if patch.Code != 200 {
		t.Logf("patch driver_internal_info refused as expected: %d", patch.Code)
	}
	n, _ := e.st.Nodes().GetNode(context.Background(), uuid)
	n.DriverInternalInfo = model.JSON{"agent_secret_token": "tok-123"}
	_ = e.st.Nodes().UpdateNode(context.Background(), n)
	for _, path := range []string{"/v1/nodes/m", "/v1/nodes/detail", "/v1/nodes?detail=True",
		"/v1/nodes/m?fields=driver_info,instance_info,driver_internal_info"} {
		rec := e.do("GET", path, "", latest)
		raw := created.Body.String() + rec.Body.String() + patch.Body.String()
		for _, s := range secrets {
			if strings.Contains(raw, s) {
				t.Errorf("%s: secret %q appears in a response", path, s)
			}
		}
		if !strings.Contains(rec.Body.String(), `"ipmi_username": "admin"`) {
			t.Errorf("%s: non-secret masked", path)
		}
	}
	upd := e.do("PATCH", "/v1/nodes/m", `[{"op":"replace","path":"/driver_info/ipmi_password","value":"newpw"}]`, latest)
	if upd.Code != 200 || strings.Contains(upd.Body.String(), "newpw") {
		t.Fatalf("replace secret: %d %s", upd.Code, upd.Body.String())
	}
	stored, _ := e.st.Nodes().GetNode(context.Background(), uuid)
	if stored.DriverInfo["ipmi_password"] != "newpw" || stored.DriverInfo["auth_token"] != "tok-123" {
		t.Errorf("patch must work on real values: %v", stored.DriverInfo)
	}
}

func TestNodeDelete(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("d"))
	active := e.mustNode(&model.Node{Name: "act", ProvisionState: "active"})
	tests := []struct {
		name, path string
		status     int
	}{
		{"enroll node", "/v1/nodes/d", 204},
		{"gone", "/v1/nodes/" + n.UUID, 404},
		{"active node", "/v1/nodes/" + active.UUID, 409},
		{"bad ident", "/v1/nodes/a%20b", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("DELETE", tc.path, "", latest)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code == 204 && rec.Body.Len() != 0 {
				t.Error("204 with a body")
			}
		})
	}
}

// orderedKeys returns the top-level keys of a JSON object in order.
func orderedKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	var keys []string
	depth := 0
	inStr, esc := false, false
	start := -1
	for i, c := range raw {
		switch {
		case esc:
			esc = false
		case inStr:
			if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
				if depth == 1 && start >= 0 {
					rest := strings.TrimLeft(string(raw[i+1:]), " ")
					if strings.HasPrefix(rest, ":") {
						keys = append(keys, string(raw[start+1:i]))
					}
				}
				start = -1
			}
		case c == '"':
			inStr = true
			start = i
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	if len(keys) == 0 {
		t.Fatalf("no keys in %s", raw)
	}
	return keys
}

func TestNodeLinks(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("l"))
	m := decode(t, e.do("GET", "/v1/nodes/"+n.UUID, "", latest))
	for _, k := range []string{"links", "ports", "states", "portgroups", "volume"} {
		links, _ := m[k].([]any)
		if len(links) != 2 {
			t.Fatalf("%s: %v", k, m[k])
		}
		suffix := "/" + n.UUID
		if k != "links" {
			suffix += "/" + k
		}
		self := links[0].(map[string]any)
		book := links[1].(map[string]any)
		if self["rel"] != "self" || self["href"] != "http://"+testHost+"/v1/nodes"+suffix {
			t.Errorf("%s self %v", k, self)
		}
		if book["rel"] != "bookmark" || book["href"] != "http://"+testHost+"/nodes"+suffix {
			t.Errorf("%s bookmark %v", k, book)
		}
	}
	if m["created_at"] != "2026-12-02T12:16:03.434301+00:00" {
		t.Errorf("timestamp format %v", m["created_at"])
	}
	for k, want := range map[string]any{"conductor_group": "", "traits": []any{}, "clean_step": map[string]any{},
		"description": nil, "allocation_uuid": nil, "properties": map[string]any{}} {
		if fmt.Sprint(m[k]) != fmt.Sprint(want) {
			t.Errorf("%s = %#v, want %#v", k, m[k], want)
		}
	}
}
