package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// The behaviour changes of 1.90 to 1.110, each just below and at its
// version. (Portgroup-only versions 1.102, 1.103 and 1.106 change nothing
// Anvil serves.)

// vcase is one request of a version table.
type vcase struct {
	name, method, path, body, version string
	status                            int
	msg                               string // exact faultstring, when set
	check                             func(t *testing.T, m map[string]any)
}

func runVCases(t *testing.T, e *env, cases []vcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code >= 400 {
				if _, msg := faultOf(t, rec); tc.msg != "" && msg != tc.msg {
					t.Errorf("message %q\nwant    %q", msg, tc.msg)
				}
			} else if tc.msg != "" {
				t.Fatalf("bad case: message given for status %d", rec.Code)
			}
			if tc.check != nil {
				tc.check(t, decode(t, rec))
			}
		})
	}
}

// hasKey and lacksKey check a rendered object.
func hasKey(key string, want any) func(t *testing.T, m map[string]any) {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		got, ok := m[key]
		if !ok || (want != nil && !equalJSON(got, want)) {
			t.Errorf("%s = %#v (present %v), want %#v", key, got, ok, want)
		}
	}
}

func lacksKey(key string) func(t *testing.T, m map[string]any) {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if v, ok := m[key]; ok {
			t.Errorf("%s shown (%#v) below its version", key, v)
		}
	}
}

func equalJSON(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		if len(am) != len(bm) {
			return false
		}
		for k, v := range am {
			if !equalJSON(v, bm[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// 1.90 / 1.105: OVN VTEP switches in local_link_connection.
func TestMicroversionOVNVTEP(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("v1"))
	vtep := `{"port_id":"p1","vtep-logical-switch":"ls","vtep-physical-switch":"ps"}`
	body := func(mac string) string {
		return `{"address":"` + mac + `","node_uuid":"` + n.UUID + `","local_link_connection":` + vtep + `}`
	}
	shown := hasKey("local_link_connection", map[string]any{"port_id": "p1", "vtep-logical-switch": "ls", "vtep-physical-switch": "ps"})
	hidden := hasKey("local_link_connection", map[string]any{})
	stored := &model.Port{UUID: "00000000-0000-0000-0000-0000000000f1", Address: "52:54:00:00:00:f1", NodeUUID: n.UUID,
		LocalLinkConnection: model.JSON{"port_id": "p1", "vtep-logical-switch": "ls", "vtep-physical-switch": "ps"}}
	if err := e.st.Ports().CreatePort(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	get := "/v1/ports/" + stored.UUID
	runVCases(t, e, []vcase{
		{"create at 1.89", "POST", "/v1/ports", body("52:54:00:00:01:01"), at(89), 406, "Request not acceptable.", nil},
		{"create at 1.90", "POST", "/v1/ports", body("52:54:00:00:01:02"), at(90), 201, "", shown},
		{"create at 1.104", "POST", "/v1/ports", body("52:54:00:00:01:03"), at(104), 201, "", shown},
		{"create at 1.105", "POST", "/v1/ports", body("52:54:00:00:01:04"), at(105), 406, "Request not acceptable.", nil},
		{"create at latest", "POST", "/v1/ports", body("52:54:00:00:01:05"), latest, 406, "Request not acceptable.", nil},
		{"one switch alone is invalid", "POST", "/v1/ports",
			`{"address":"52:54:00:00:01:06","node_uuid":"` + n.UUID + `","local_link_connection":{"port_id":"p","vtep-logical-switch":"ls"}}`,
			at(90), 400, "", nil},
		{"shown at 1.90", "GET", get, "", at(90), 200, "", shown},
		{"hidden at 1.89", "GET", get, "", at(89), 200, "", hidden},
		{"hidden at 1.105", "GET", get, "", at(105), 200, "", hidden},
		{"hidden in lists at 1.105", "GET", "/v1/ports/detail?address=52:54:00:00:01:02", "", at(105), 200, "", func(t *testing.T, m map[string]any) {
			if len(m["ports"].([]any)) != 1 {
				t.Fatalf("%v", m)
			}
			hidden(t, m["ports"].([]any)[0].(map[string]any))
		}},
		// Ironic checks only the paths of a PATCH, so VTEP keys can be set at
		// any version; they read {} there.
		{"patch at latest", "PATCH", get, `[{"op":"replace","path":"/local_link_connection","value":` + vtep + `}]`, latest, 200, "", hidden},
	})
}

// 1.91: ".json" at the end of a path.
func TestMicroversionJSONSuffix(t *testing.T) {
	e := newEnv(t)
	plain := e.mustNode(nodeFixture("n1"))
	dotted := nodeFixture("n2.json")
	dotted.DriverInternalInfo = model.JSON{"agent_secret_token": "tok-n2"} // its heartbeat is accepted with it
	e.mustNode(dotted)
	both := e.mustNode(nodeFixture("n3"))
	bothDotted := e.mustNode(nodeFixture("n3.json"))
	port := &model.Port{UUID: "00000000-0000-0000-0000-0000000000a1", Address: "52:54:00:00:00:a1", NodeUUID: plain.UUID}
	if err := e.st.Ports().CreatePort(context.Background(), port); err != nil {
		t.Fatal(err)
	}
	is := func(uuid string) func(t *testing.T, m map[string]any) { return hasKey("uuid", uuid) }
	std90 := "OpenStack-API-Version: baremetal 1.90"
	runVCases(t, e, []vcase{
		{"stripped at 1.90", "GET", "/v1/nodes/n1.json", "", at(90), 200, "", is(plain.UUID)},
		{"stripped with a slash", "GET", "/v1/nodes/n1.json/", "", at(90), 200, "", is(plain.UUID)},
		{"literal at 1.91", "GET", "/v1/nodes/n1.json", "", at(91), 404, "Node n1.json could not be found.", nil},
		{"literal at latest", "GET", "/v1/nodes/n2.json", "", latest, 200, "", is(dotted.UUID)},
		{"falls back to the suffix at 1.90", "GET", "/v1/nodes/n2.json", "", at(90), 200, "", is(dotted.UUID)},
		{"stripped name wins at 1.90", "GET", "/v1/nodes/n3.json", "", at(90), 200, "", is(both.UUID)},
		{"suffixed name at 1.91", "GET", "/v1/nodes/n3.json", "", at(91), 200, "", is(bothDotted.UUID)},
		{"unknown names the suffix", "GET", "/v1/nodes/ghost.json", "", at(90), 404, "Node ghost.json could not be found.", nil},
		{"by uuid at 1.90", "GET", "/v1/nodes/" + plain.UUID + ".json", "", at(90), 200, "", is(plain.UUID)},
		// Ironic reads only the legacy header here.
		{"standard header keeps the suffix", "GET", "/v1/nodes/n1.json", "", std90, 404, "Node n1.json could not be found.", nil},
		{"collection at 1.90", "GET", "/v1/nodes.json", "", at(90), 200, "", nil},
		{"collection at 1.91", "GET", "/v1/nodes.json", "", at(91), 404, "Resource could not be found.", nil},
		{"detail at 1.90", "GET", "/v1/nodes/detail.json", "", at(90), 200, "", nil},
		{"sub-resource at 1.90", "GET", "/v1/nodes/n1/states.json", "", at(90), 200, "", hasKey("provision_state", "enroll")},
		{"no fallback below the last segment", "GET", "/v1/nodes/n2/states.json", "", at(90), 404, "Node n2 could not be found.", nil},
		{"port at 1.90", "GET", "/v1/ports/" + port.UUID + ".json", "", at(90), 200, "", is(port.UUID)},
		{"port at 1.91", "GET", "/v1/ports/" + port.UUID + ".json", "", at(91), 404, "Port " + port.UUID + ".json could not be found.", nil},
		{"patch falls back", "PATCH", "/v1/nodes/n2.json", `[{"op":"add","path":"/extra/k","value":"v"}]`, at(90), 200, "", is(dotted.UUID)},
		{"heartbeat falls back", "POST", "/v1/heartbeat/n2.json", `{"callback_url":"http://x","agent_token":"tok-n2"}`, at(90), 202, "", nil},
		{"delete unknown names the suffix", "DELETE", "/v1/nodes/ghost.json", "", at(90), 404, "Node ghost.json could not be found.", nil},
		{"delete falls back", "DELETE", "/v1/nodes/n2.json", "", at(90), 204, "", nil},
	})
	if _, err := e.st.Nodes().GetNode(context.Background(), dotted.UUID); err == nil {
		t.Error("DELETE /v1/nodes/n2.json at 1.90 left node n2.json")
	}
}

// 1.92 (runbooks) below its version. (Virtual media, 1.89/1.93, is
// TestVmediaRefused's; runbooks from 1.92 are TestRunbooks*'s; inspection
// rules are TestInspectionRules*'s.)
func TestMicroversionUnsupportedEndpoints(t *testing.T) {
	e := newEnv(t)
	e.mustNode(nodeFixture("u1"))
	m := e.mustNode(&model.Node{Name: "m1", ProvisionState: fsm.Manageable})
	var cases []vcase
	for _, r := range []struct {
		method, path string
		status       int
	}{{"GET", "/v1/runbooks", 404}, {"POST", "/v1/runbooks", 405}, {"GET", "/v1/runbooks/rb1", 404},
		{"PATCH", "/v1/runbooks/rb1", 405}, {"DELETE", "/v1/runbooks/rb1", 405}} {
		cases = append(cases, vcase{r.method + " " + r.path + " at 1.91", r.method, r.path, "", at(91), r.status,
			"The API version does not allow runbooks", nil})
	}
	prov := "/v1/nodes/" + m.UUID + "/states/provision"
	steps := `"clean_steps":[{"interface":"deploy","step":"erase_devices"}]`
	cases = append(cases,
		vcase{"runbook at 1.91", "PUT", prov, `{"target":"clean","runbook":"rb1"}`, at(91), 406, "Request not acceptable.", nil},
		vcase{"unknown runbook at 1.92", "PUT", prov, `{"target":"clean","runbook":"rb1"}`, at(92), 404,
			"Runbook rb1 could not be found.", nil},
		vcase{"runbook not a name", "PUT", prov, `{"target":"clean","runbook":"a b"}`, latest, 400,
			"Expected a logical name or UUID but received a b.", nil},
		vcase{"runbook wrong type", "PUT", prov, `{"target":"clean","runbook":5}`, latest, 400,
			"Expected types <class 'NoneType'>, <class 'str'> for runbook: 5", nil},
		// Ironic ignores an empty or null runbook, at any version.
		vcase{"empty runbook at 1.91", "PUT", prov, `{"target":"clean","runbook":"",` + steps + `}`, at(91), 202, "", nil},
		vcase{"null runbook at latest", "PUT", prov, `{"target":"clean","runbook":null,` + steps + `}`, latest, 202, "", nil},
	)
	runVCases(t, e, cases)
}

// GET /v1 advertises each resource from its version on, as Ironic's
// VERSIONED_CONTROLLERS do, each with self and bookmark links.
func TestV1Resources(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		from   int
		follow string // a GET on the link answers 200 from that version
	}{
		{"portgroups", 23, "portgroups"}, {"volume", 32, "volume"}, {"conductors", 49, "conductors"},
		{"allocations", 52, "allocations"}, {"events", 54, ""}, {"deploy_templates", 55, "deploy_templates"},
		{"shards", 82, "shards"}, {"runbooks", 92, "runbooks"}, {"inspection_rules", 96, "inspection_rules"},
		{"continue_inspection", 84, ""},
	} {
		if _, ok := decode(t, e.do("GET", "/v1", "", at(tc.from-1)))[tc.name]; ok {
			t.Errorf("%s advertised at 1.%d", tc.name, tc.from-1)
		}
		links, _ := decode(t, e.do("GET", "/v1", "", at(tc.from)))[tc.name].([]any)
		if len(links) != 2 || links[0].(map[string]any)["href"] != "http://"+testHost+"/v1/"+tc.name+"/" {
			t.Errorf("%s at 1.%d: links %v", tc.name, tc.from, links)
			continue
		}
		if tc.follow != "" {
			if rec := e.do("GET", "/v1/"+tc.follow, "", at(tc.from)); rec.Code != 200 {
				t.Errorf("GET /v1/%s at 1.%d: %d %s", tc.follow, tc.from, rec.Code, rec.Body.String())
			}
		}
	}
}

// 1.94: a port's node by name (node_ident).
func TestMicroversionPortNodeIdent(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("n1"))
	ghost := "0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"
	onNode := hasKey("node_uuid", n.UUID)
	body := func(mac, node string) string {
		return `{"address":"` + mac + `",` + node + `}`
	}
	runVCases(t, e, []vcase{
		{"name at 1.93", "POST", "/v1/ports", body("52:54:00:00:02:01", `"node_ident":"n1"`), at(93), 406, "Request not acceptable.", nil},
		{"name at 1.94", "POST", "/v1/ports", body("52:54:00:00:02:02", `"node_ident":"n1"`), at(94), 201, "", onNode},
		{"uuid at 1.94", "POST", "/v1/ports", body("52:54:00:00:02:03", `"node_ident":"`+strings.ToUpper(n.UUID)+`"`), at(94), 201, "", onNode},
		{"node_uuid still works", "POST", "/v1/ports", body("52:54:00:00:02:04", `"node_uuid":"`+n.UUID+`"`), latest, 201, "", onNode},
		{"unknown name", "POST", "/v1/ports", body("52:54:00:00:02:05", `"node_ident":"ghost"`), latest, 400, "Node ghost could not be found.", nil},
		{"unknown uuid ident", "POST", "/v1/ports", body("52:54:00:00:02:06", `"node_ident":"`+ghost+`"`), latest, 400, "Node " + ghost + " could not be found.", nil},
		{"unknown node_uuid", "POST", "/v1/ports", body("52:54:00:00:02:07", `"node_uuid":"`+ghost+`"`), latest, 400, "Node " + ghost + " could not be found.", nil},
		{"invalid name", "POST", "/v1/ports", body("52:54:00:00:02:08", `"node_ident":"bad name"`), latest, 400,
			"Expected a logical name or UUID but received bad name.", nil},
		{"empty ident", "POST", "/v1/ports", body("52:54:00:00:02:09", `"node_ident":""`), latest, 400,
			"Expected a logical name or UUID but received None.", nil},
		{"wrong type", "POST", "/v1/ports", body("52:54:00:00:02:0a", `"node_ident":5`), latest, 400,
			"Schema error for port: 5 is not of type 'string'", nil},
		{"both", "POST", "/v1/ports", body("52:54:00:00:02:0b", `"node_ident":"n1","node_uuid":"`+n.UUID+`"`), latest, 400, "", nil},
		// The field is node_ident; "node" is not one.
		{"node is not a field", "POST", "/v1/ports", body("52:54:00:00:02:0c", `"node":"n1"`), latest, 400,
			"Schema error for port: Additional properties are not allowed ('node' was unexpected)", nil},
	})
	p, err := e.st.Ports().ListPorts(context.Background(), store.PortQuery{NodeUUID: n.UUID, Limit: 100})
	if err != nil || len(p) != 3 {
		t.Fatalf("stored ports of n1: %v %d", err, len(p))
	}
}

// 1.95: disable_power_off.
func TestMicroversionDisablePowerOff(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("d1"))
	on := e.mustNode(&model.Node{Name: "d2", DisablePowerOff: true, PowerState: fsm.PowerOn, ProvisionState: fsm.Manageable})
	other := e.mustNode(&model.Node{Name: "d3", PowerState: fsm.PowerOn, ProvisionState: fsm.Manageable})
	create := func(v string) string { return `{"driver":"fake-hardware","disable_power_off":` + v + `}` }
	patch := `[{"op":"replace","path":"/disable_power_off","value":true}]`
	power := "/v1/nodes/" + on.UUID + "/states/power"
	refused := "Failed to set node power state to power off."
	runVCases(t, e, []vcase{
		{"create at 1.94", "POST", "/v1/nodes", create("true"), at(94), 406, "Request not acceptable.", nil},
		{"create false at 1.94", "POST", "/v1/nodes", create("false"), at(94), 406, "Request not acceptable.", nil},
		{"create null at 1.94", "POST", "/v1/nodes", create("null"), at(94), 201, "", lacksKey("disable_power_off")},
		{"create at 1.95", "POST", "/v1/nodes", create("true"), at(95), 201, "", hasKey("disable_power_off", true)},
		{"create with a word", "POST", "/v1/nodes", create(`"yes"`), latest, 201, "", hasKey("disable_power_off", true)},
		{"create with a bad word", "POST", "/v1/nodes", create(`"maybe"`), latest, 400, "", nil},
		{"default", "GET", "/v1/nodes/" + n.UUID, "", at(95), 200, "", hasKey("disable_power_off", false)},
		{"hidden at 1.94", "GET", "/v1/nodes/" + on.UUID, "", at(94), 200, "", lacksKey("disable_power_off")},
		{"fields at 1.94", "GET", "/v1/nodes/" + n.UUID + "?fields=disable_power_off", "", at(94), 406, "Request not acceptable.", nil},
		{"fields at 1.95", "GET", "/v1/nodes/" + on.UUID + "?fields=disable_power_off", "", at(95), 200, "", hasKey("disable_power_off", true)},
		{"patch at 1.94", "PATCH", "/v1/nodes/" + n.UUID, patch, at(94), 406, "Request not acceptable.", nil},
		{"patch at 1.95", "PATCH", "/v1/nodes/" + n.UUID, patch, at(95), 200, "", hasKey("disable_power_off", true)},
		// The power check is Ironic's, at every version.
		{"power off at 1.94", "PUT", power, `{"target":"power off"}`, at(94), 409, refused, nil},
		{"power off", "PUT", power, `{"target":"power off"}`, latest, 409, refused, nil},
		{"soft power off", "PUT", power, `{"target":"soft power off"}`, latest, 409, "Failed to set node power state to soft power off.", nil},
		{"reboot allowed", "PUT", power, `{"target":"rebooting"}`, latest, 202, "", nil},
		{"power on allowed", "PUT", power, `{"target":"power on"}`, latest, 202, "", nil},
		{"other nodes power off", "PUT", "/v1/nodes/" + other.UUID + "/states/power", `{"target":"power off"}`, latest, 202, "", nil},
	})
}

// 1.97, 1.100, 1.101: port description, vendor and category.
func TestMicroversionPortFields(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("n1"))
	stored := &model.Port{UUID: "00000000-0000-0000-0000-0000000000c1", Address: "52:54:00:00:00:c1", NodeUUID: n.UUID,
		Description: "d", Vendor: "v", Category: "c"}
	if err := e.st.Ports().CreatePort(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	var cases []vcase
	mac := 0x10
	for _, f := range []struct {
		name  string
		minor int
		value string
		max   int
	}{{"description", 97, "d", 255}, {"vendor", 100, "v", 32}, {"category", 101, "c", 80}} {
		body := func(val string) string {
			mac++
			return `{"address":"52:54:00:00:03:` + fmt.Sprintf("%02x", mac) + `","node_uuid":"` + n.UUID + `","` + f.name + `":` + val + `}`
		}
		get := "/v1/ports/" + stored.UUID
		cases = append(cases,
			vcase{f.name + " create below", "POST", "/v1/ports", body(`"x"`), at(f.minor - 1), 406, "Request not acceptable.", nil},
			vcase{f.name + " null create below", "POST", "/v1/ports", body(`null`), at(f.minor - 1), 406, "Request not acceptable.", nil},
			vcase{f.name + " create at", "POST", "/v1/ports", body(`"x"`), at(f.minor), 201, "", hasKey(f.name, "x")},
			vcase{f.name + " too long", "POST", "/v1/ports", body(`"` + strings.Repeat("x", f.max+1) + `"`), latest, 400, "", nil},
			vcase{f.name + " longest", "POST", "/v1/ports", body(`"` + strings.Repeat("x", f.max) + `"`), latest, 201, "", nil},
			vcase{f.name + " hidden below", "GET", get, "", at(f.minor - 1), 200, "", lacksKey(f.name)},
			vcase{f.name + " shown at", "GET", get, "", at(f.minor), 200, "", hasKey(f.name, f.value)},
			vcase{f.name + " fields below", "GET", get + "?fields=" + f.name, "", at(f.minor - 1), 406, "Request not acceptable.", nil},
			vcase{f.name + " fields at", "GET", get + "?fields=" + f.name, "", at(f.minor), 200, "", hasKey(f.name, f.value)},
			vcase{f.name + " patch below", "PATCH", get, `[{"op":"replace","path":"/` + f.name + `","value":"y"}]`, at(f.minor - 1), 406, "Request not acceptable.", nil},
			vcase{f.name + " patch at", "PATCH", get, `[{"op":"replace","path":"/` + f.name + `","value":"` + f.value + `"}]`, at(f.minor), 200, "", hasKey(f.name, f.value)},
		)
	}
	runVCases(t, e, cases)
}

// 1.98: JSON pointer escapes (~0, ~1) in PATCH paths.
func TestMicroversionPatchEscapes(t *testing.T) {
	e := newEnv(t)
	n := nodeFixture("e1")
	n.Extra = model.JSON{"a/b": 1.0, "c~d": 2.0}
	e.mustNode(n)
	p := &model.Port{UUID: "00000000-0000-0000-0000-0000000000e1", Address: "52:54:00:00:00:e1", NodeUUID: n.UUID,
		Extra: model.JSON{"a/b": 1.0}}
	if err := e.st.Ports().CreatePort(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	node := "/v1/nodes/" + n.UUID
	extra := func(want map[string]any) func(t *testing.T, m map[string]any) { return hasKey("extra", want) }
	oldPattern := `'^(/[\\w-]+)+$'`
	newPattern := `'^(/([\\w-]|~[01])+)+$'`
	allowed := strings.Join(nodePatchAllowed, ", ")
	runVCases(t, e, []vcase{
		{"escaped slash at 1.97", "PATCH", node, `[{"op":"replace","path":"/extra/a~1b","value":5}]`, at(97), 400,
			"Schema error for patch: '/extra/a~1b' does not match " + oldPattern, nil},
		{"escaped slash at 1.98", "PATCH", node, `[{"op":"replace","path":"/extra/a~1b","value":5}]`, at(98), 200, "",
			extra(map[string]any{"a/b": 5.0, "c~d": 2.0})},
		{"escaped tilde", "PATCH", node, `[{"op":"replace","path":"/extra/c~0d","value":6}]`, latest, 200, "",
			extra(map[string]any{"a/b": 5.0, "c~d": 6.0})},
		{"add with both", "PATCH", node, `[{"op":"add","path":"/extra/~0x~1y~0","value":7}]`, latest, 200, "",
			extra(map[string]any{"a/b": 5.0, "c~d": 6.0, "~x/y~": 7.0})},
		{"remove", "PATCH", node, `[{"op":"remove","path":"/extra/~0x~1y~0"},{"op":"remove","path":"/extra/c~0d"}]`, latest, 200, "",
			extra(map[string]any{"a/b": 5.0})},
		{"unescaped slash is a path", "PATCH", node, `[{"op":"replace","path":"/extra/a/b","value":1}]`, latest, 400,
			"Couldn't apply patch '{'op': 'replace', 'path': '/extra/a/b', 'value': 1}'. Reason: member 'a' not found in {'a/b': 5}", nil},
		{"bad escape", "PATCH", node, `[{"op":"replace","path":"/extra/a~2b","value":1}]`, latest, 400,
			"Schema error for patch: '/extra/a~2b' does not match " + newPattern, nil},
		{"lone tilde", "PATCH", node, `[{"op":"replace","path":"/extra/a~","value":1}]`, latest, 400,
			"Schema error for patch: '/extra/a~' does not match " + newPattern, nil},
		{"root field is decoded", "PATCH", node, `[{"op":"replace","path":"/na~1me","value":"x"}]`, latest, 400,
			"Cannot patch /na~1me. Only the following can be updated: " + allowed, nil},
		{"port at 1.97", "PATCH", "/v1/ports/" + p.UUID, `[{"op":"remove","path":"/extra/a~1b"}]`, at(97), 400, "", nil},
		{"port at 1.98", "PATCH", "/v1/ports/" + p.UUID, `[{"op":"remove","path":"/extra/a~1b"}]`, at(98), 200, "", extra(map[string]any{})},
	})
}

// 1.99: conductor_groups filter of the port list.
func TestMicroversionPortConductorGroups(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ga := e.mustNode(&model.Node{Name: "ga", ConductorGroup: "ga", Shard: "s1"})
	gb := e.mustNode(&model.Node{Name: "gb", ConductorGroup: "gb"})
	none := e.mustNode(&model.Node{Name: "none"})
	for i, nd := range []*model.Node{ga, ga, gb, none} {
		p := &model.Port{UUID: "00000000-0000-0000-0000-00000000010" + string(rune('0'+i)),
			Address: "52:54:00:00:01:0" + string(rune('0'+i)), NodeUUID: nd.UUID}
		if err := e.st.Ports().CreatePort(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	count := func(want int) func(t *testing.T, m map[string]any) {
		return func(t *testing.T, m map[string]any) {
			t.Helper()
			if got := len(m["ports"].([]any)); got != want {
				t.Errorf("%d ports, want %d", got, want)
			}
		}
	}
	combined := "Filtering by conductor_groups cannot be combined with node_ident, portgroup_ident, or node address filters."
	runVCases(t, e, []vcase{
		{"at 1.98", "GET", "/v1/ports?conductor_groups=ga", "", at(98), 406, "Request not acceptable.", nil},
		{"at 1.99", "GET", "/v1/ports?conductor_groups=ga", "", at(99), 200, "", count(2)},
		{"several, any case", "GET", "/v1/ports?conductor_groups=GA,%20gb,ga", "", latest, 200, "", count(3)},
		{"unknown group", "GET", "/v1/ports?conductor_groups=nope", "", latest, 200, "", count(0)},
		{"empty is no filter", "GET", "/v1/ports?conductor_groups=", "", latest, 200, "", count(4)},
		{"detail", "GET", "/v1/ports/detail?conductor_groups=gb", "", latest, 200, "", count(1)},
		{"with node", "GET", "/v1/ports?conductor_groups=ga&node=ga", "", latest, 400, combined, nil},
		{"with node_uuid", "GET", "/v1/ports?conductor_groups=ga&node_uuid=" + ga.UUID, "", latest, 400, combined, nil},
		{"under a node", "GET", "/v1/nodes/ga/ports?conductor_groups=ga", "", latest, 400, combined, nil},
		{"with address", "GET", "/v1/ports?conductor_groups=ga&address=52:54:00:00:01:00", "", latest, 400, combined, nil},
		{"with portgroup", "GET", "/v1/ports?conductor_groups=ga&portgroup=pg1", "", latest, 400, combined, nil},
		// Ironic lists by shard and ignores the groups.
		{"with shard", "GET", "/v1/ports?conductor_groups=gb&shard=s1", "", latest, 200, "", count(2)},
		{"next link keeps the filter", "GET", "/v1/ports?conductor_groups=ga&limit=1", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			next, _ := m["next"].(string)
			if !strings.Contains(next, "conductor_groups=ga") {
				t.Errorf("next %q", next)
			}
		}},
	})
	uuids, _ := e.walkPorts("/v1/ports?conductor_groups=ga&limit=1", latest)
	if len(uuids) != 2 {
		t.Errorf("paged walk saw %v", uuids)
	}
}

// walkPorts follows the next links of a port list.
func (e *env) walkPorts(path string, headers ...string) (uuids []string, pages int) {
	e.t.Helper()
	for path != "" && pages < 20 {
		m := decode(e.t, e.do("GET", path, "", headers...))
		pages++
		for _, p := range m["ports"].([]any) {
			uuids = append(uuids, p.(map[string]any)["uuid"].(string))
		}
		path = ""
		if next, ok := m["next"].(string); ok {
			path = strings.TrimPrefix(next, "http://"+testHost)
		}
	}
	return uuids, pages
}

// 1.104: instance_name.
func TestMicroversionInstanceName(t *testing.T) {
	e := newEnv(t)
	named := e.mustNode(&model.Node{Name: "i1", InstanceName: "vm-1"})
	plain := e.mustNode(&model.Node{Name: "i2"})
	synced := e.mustNode(&model.Node{Name: "i3"})
	kept := e.mustNode(&model.Node{Name: "i4", InstanceName: "mine"})
	create := func(v string) string { return `{"driver":"fake-hardware","instance_name":` + v + `}` }
	names := func(want ...string) func(t *testing.T, m map[string]any) {
		return func(t *testing.T, m map[string]any) {
			t.Helper()
			var got []string
			for _, n := range m["nodes"].([]any) {
				got = append(got, n.(map[string]any)["name"].(string))
			}
			if !slices.Equal(got, want) {
				t.Errorf("nodes %v, want %v", got, want)
			}
		}
	}
	displayName := `[{"op":"add","path":"/instance_info/display_name","value":"nova-vm"}]`
	runVCases(t, e, []vcase{
		{"create at 1.103", "POST", "/v1/nodes", create(`"x"`), at(103), 406, "Request not acceptable.", nil},
		{"create null at 1.103", "POST", "/v1/nodes", create(`null`), at(103), 201, "", nil},
		{"create at 1.104", "POST", "/v1/nodes", create(`"x"`), at(104), 201, "", hasKey("instance_name", "x")},
		{"create empty", "POST", "/v1/nodes", create(`""`), latest, 400, "Schema error for node: '' is too short", nil},
		{"create too long", "POST", "/v1/nodes", create(`"` + strings.Repeat("x", 256) + `"`), latest, 400, "", nil},
		{"hidden at 1.103", "GET", "/v1/nodes/i1", "", at(103), 200, "", lacksKey("instance_name")},
		{"shown at 1.104", "GET", "/v1/nodes/i1", "", at(104), 200, "", hasKey("instance_name", "vm-1")},
		{"null when unset", "GET", "/v1/nodes/i2", "", latest, 200, "", hasKey("instance_name", nil)},
		{"fields at 1.103", "GET", "/v1/nodes/i1?fields=instance_name", "", at(103), 406, "Request not acceptable.", nil},
		{"fields at 1.104", "GET", "/v1/nodes/i1?fields=instance_name", "", at(104), 200, "", hasKey("instance_name", "vm-1")},
		{"filter at 1.103", "GET", "/v1/nodes?instance_name=vm-1", "", at(103), 406, "instance_name is not acceptable in this API version", nil},
		{"filter at 1.104", "GET", "/v1/nodes?instance_name=vm-1", "", at(104), 200, "", names("i1")},
		{"filter is exact", "GET", "/v1/nodes?instance_name=VM-1", "", latest, 200, "", names()},
		{"empty filter", "GET", "/v1/nodes?instance_name=", "", latest, 200, "", names()},
		{"patch at 1.103", "PATCH", "/v1/nodes/i2", `[{"op":"replace","path":"/instance_name","value":"vm-2"}]`, at(103), 406, "Request not acceptable.", nil},
		{"patch at 1.104", "PATCH", "/v1/nodes/i2", `[{"op":"replace","path":"/instance_name","value":"vm-2"}]`, at(104), 200, "", hasKey("instance_name", "vm-2")},
		{"remove", "PATCH", "/v1/nodes/i2", `[{"op":"remove","path":"/instance_name"}]`, latest, 200, "", hasKey("instance_name", nil)},
		// instance_info.display_name fills an empty instance_name, at any version.
		{"display_name syncs at 1.103", "PATCH", "/v1/nodes/i3", displayName, at(103), 200, "", lacksKey("instance_name")},
		{"display_name does not overwrite", "PATCH", "/v1/nodes/i4", displayName, latest, 200, "", hasKey("instance_name", "mine")},
		{"explicit name wins", "PATCH", "/v1/nodes/i2", `[{"op":"add","path":"/instance_info/display_name","value":"nova"},{"op":"add","path":"/instance_name","value":"own"}]`,
			latest, 200, "", hasKey("instance_name", "own")},
	})
	got, err := e.st.Nodes().GetNode(context.Background(), synced.UUID)
	if err != nil || got.InstanceName != "nova-vm" {
		t.Errorf("display_name not synced: %v %q", err, got.InstanceName)
	}
	_, _, _ = named, plain, kept
}

// 1.107: X-OpenStack-Request-Id mirrors Openstack-Request-Id, on every
// response whatever the version (as Ironic's middleware).
func TestMicroversionXRequestID(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, path, version string
		status              int
	}{
		{"no version", "/v1/nodes", "", 200},
		{"1.106", "/v1/nodes", at(106), 200},
		{"1.107", "/v1/nodes", at(107), 200},
		{"latest", "/v1/nodes", latest, 200},
		{"not found", "/v1/nodes/ghost", latest, 404},
		{"refused version", "/v1/nodes", at(MaxMinor + 1), 406},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d", rec.Code)
			}
			id, x := rec.Header().Get("Openstack-Request-Id"), rec.Header().Get("X-Openstack-Request-Id")
			if !reqIDRe.MatchString(id) || x != id {
				t.Errorf("request ids %q and %q", id, x)
			}
		})
	}
}

// 1.108: disable_ramdisk with the service verb.
func TestMicroversionServiceDisableRamdisk(t *testing.T) {
	e := newEnv(t)
	var cases []vcase
	body := `{"target":"service","service_steps":[{"interface":"bios","step":"apply_configuration"}],"disable_ramdisk":true}`
	for _, tc := range []struct {
		v      int
		status int
		msg    string
	}{{107, 406, "disable_ramdisk is not acceptable in this API version"}, {108, 202, ""}} {
		n := e.mustNode(&model.Node{Name: "s" + versionString(tc.v), ProvisionState: fsm.Active})
		cases = append(cases, vcase{"at " + versionString(tc.v), "PUT", "/v1/nodes/" + n.UUID + "/states/provision", body, at(tc.v), tc.status, tc.msg, nil})
	}
	runVCases(t, e, cases)
	req := e.cond.lastProvision()
	if req.DisableRamdisk == nil || !*req.DisableRamdisk || req.Minor != 108 {
		t.Errorf("request %+v", req)
	}
}

// 1.109: health (read-only).
func TestMicroversionHealth(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "h1", Health: "OK"})
	e.mustNode(&model.Node{Name: "h2"})
	allowed := strings.Join(nodePatchAllowed, ", ")
	runVCases(t, e, []vcase{
		{"hidden at 1.108", "GET", "/v1/nodes/h1", "", at(108), 200, "", lacksKey("health")},
		{"shown at 1.109", "GET", "/v1/nodes/h1", "", at(109), 200, "", hasKey("health", "OK")},
		{"null when unknown", "GET", "/v1/nodes/h2", "", latest, 200, "", hasKey("health", nil)},
		{"in detail lists", "GET", "/v1/nodes/detail", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			hasKey("health", "OK")(t, m["nodes"].([]any)[0].(map[string]any))
		}},
		{"fields at 1.108", "GET", "/v1/nodes/h1?fields=health", "", at(108), 406, "Request not acceptable.", nil},
		{"fields at 1.109", "GET", "/v1/nodes/h1?fields=health", "", at(109), 200, "", hasKey("health", "OK")},
		{"not settable on create", "POST", "/v1/nodes", `{"driver":"fake-hardware","health":"OK"}`, latest, 400,
			"Schema error for node: Additional properties are not allowed ('health' was unexpected)", nil},
		{"not patchable", "PATCH", "/v1/nodes/h1", `[{"op":"replace","path":"/health","value":"Critical"}]`, latest, 400,
			"Cannot patch /health. Only the following can be updated: " + allowed, nil},
		{"kept by other patches", "PATCH", "/v1/nodes/" + n.UUID, `[{"op":"add","path":"/extra/k","value":1}]`, latest, 200, "", hasKey("health", "OK")},
	})
}

// 1.110: abort from "wait call-back", through the real conductor (which
// holds the gate; the API passes the version on).
func TestMicroversionDeployWaitAbort(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st, c := e.st, e.cond
	n := e.createNode(`{"driver":"fake-hardware","name":"w1","driver_info":{"fake_wait":"deploy"}}`)
	prov := "/v1/nodes/w1/states/provision"
	state := func() string {
		c.WaitIdle()
		got, err := st.Nodes().GetNode(ctx, n["uuid"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return got.ProvisionState
	}
	for _, verb := range []string{"manage", "provide", "active"} {
		if rec := e.do("PUT", prov, `{"target":"`+verb+`"}`, latest); rec.Code != 202 {
			t.Fatalf("%s: %d %s", verb, rec.Code, rec.Body.String())
		}
		state()
	}
	if s := state(); s != fsm.DeployWait {
		t.Fatalf("parked in %q", s)
	}
	rec := e.do("PUT", prov, `{"target":"abort"}`, at(109))
	if _, msg := faultOf(t, rec); rec.Code != 406 || msg != "Request not acceptable." {
		t.Fatalf("abort at 1.109: %d %q", rec.Code, msg)
	}
	if s := state(); s != fsm.DeployWait {
		t.Fatalf("after a refused abort: %q", s)
	}
	if rec := e.do("PUT", prov, `{"target":"abort"}`, at(110)); rec.Code != 202 {
		t.Fatalf("abort at 1.110: %d %s", rec.Code, rec.Body.String())
	}
	if s := state(); s != fsm.DeployFailed {
		t.Fatalf("after abort at 1.110: %q", s)
	}
}
