package api

import (
	"fmt"
	"slices"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

func (e *env) createPortgroup(body string) map[string]any {
	e.t.Helper()
	rec := e.do("POST", "/v1/portgroups", body, latest)
	if rec.Code != 201 {
		e.t.Fatalf("create portgroup: %d %s", rec.Code, rec.Body.String())
	}
	return decode(e.t, rec)
}

func (e *env) createPort(body string) map[string]any {
	e.t.Helper()
	rec := e.do("POST", "/v1/ports", body, latest)
	if rec.Code != 201 {
		e.t.Fatalf("create port: %d %s", rec.Code, rec.Body.String())
	}
	return decode(e.t, rec)
}

func listUUIDs(t *testing.T, m map[string]any, key string) []string {
	t.Helper()
	var out []string
	for _, it := range m[key].([]any) {
		out = append(out, it.(map[string]any)["uuid"].(string))
	}
	return out
}

func TestPortgroupLifecycle(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("pgn"))
	other := e.mustNode(nodeFixture("other"))
	pg := e.createPortgroup(`{"node_uuid": "` + n.UUID + `", "address": "11:11:11:11:11:AA", "name": "bond0", "physical_network": "physnet1"}`)
	id := pg["uuid"].(string)
	for k, want := range map[string]any{"address": "11:11:11:11:11:aa", "mode": "active-backup",
		"standalone_ports_supported": true, "node_uuid": n.UUID, "physical_network": "physnet1", "category": nil} {
		if fmt.Sprint(pg[k]) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", k, pg[k], want)
		}
	}
	if got := decode(t, e.do("GET", "/v1/portgroups/bond0", "", latest)); got["uuid"] != id {
		t.Fatalf("get by name: %v", got)
	}
	// A port joins the group; one on another node cannot.
	port := e.createPort(`{"node_uuid": "` + n.UUID + `", "address": "52:54:00:00:00:01", "portgroup_uuid": "` + id + `"}`)
	if port["portgroup_uuid"] != id {
		t.Fatalf("port portgroup_uuid %v", port["portgroup_uuid"])
	}
	rec := e.do("POST", "/v1/ports", `{"node_uuid": "`+other.UUID+`", "address": "52:54:00:00:00:02", "portgroup_uuid": "`+id+`"}`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Port can not be added to a portgroup belonging to a different node." {
		t.Fatalf("port on other node: %d %q", rec.Code, msg)
	}
	rec = e.do("POST", "/v1/ports", `{"node_uuid": "`+n.UUID+`", "address": "52:54:00:00:00:03", "portgroup_uuid": "`+other.UUID+`"}`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Portgroup "+other.UUID+" could not be found." {
		t.Fatalf("unknown portgroup: %d %q", rec.Code, msg)
	}
	// The group's ports, the node's groups, the port filter.
	for _, path := range []string{"/v1/portgroups/" + id + "/ports", "/v1/portgroups/bond0/ports/detail", "/v1/ports?portgroup=bond0"} {
		if got := listUUIDs(t, decode(t, e.do("GET", path, "", latest)), "ports"); !slices.Equal(got, []string{port["uuid"].(string)}) {
			t.Errorf("%s = %v", path, got)
		}
	}
	for _, path := range []string{"/v1/nodes/pgn/portgroups", "/v1/nodes/" + n.UUID + "/portgroups/detail", "/v1/portgroups?node=pgn",
		"/v1/portgroups?address=11:11:11:11:11:aa", "/v1/portgroups/detail"} {
		if got := listUUIDs(t, decode(t, e.do("GET", path, "", latest)), "portgroups"); !slices.Equal(got, []string{id}) {
			t.Errorf("%s = %v", path, got)
		}
	}
	if got := decode(t, e.do("GET", "/v1/nodes/other/portgroups", "", latest)); len(got["portgroups"].([]any)) != 0 {
		t.Errorf("other node's portgroups: %v", got)
	}
	brief := decode(t, e.do("GET", "/v1/portgroups", "", latest))["portgroups"].([]any)[0].(map[string]any)
	if len(brief) != 4 || brief["name"] != "bond0" || brief["links"] == nil {
		t.Errorf("brief portgroup %v", brief)
	}
	// PATCH mode; moving to another node with a port is refused.
	rec = e.do("PATCH", "/v1/portgroups/"+id, `[{"op": "replace", "path": "/mode", "value": "802.3ad"}, {"op": "add", "path": "/properties/miimon", "value": "100"}]`, latest)
	if got := decode(t, rec); rec.Code != 200 || got["mode"] != "802.3ad" || fmt.Sprint(got["properties"]) != "map[miimon:100]" {
		t.Fatalf("patch: %d %v", rec.Code, got)
	}
	rec = e.do("PATCH", "/v1/portgroups/"+id, `[{"op": "replace", "path": "/physical_network", "value": "physnet2"}]`, latest)
	if rec.Code != 200 {
		t.Fatalf("patch physical_network: %d %s", rec.Code, rec.Body.String())
	}
	if got := decode(t, e.do("GET", "/v1/ports/"+port["uuid"].(string), "", latest))["physical_network"]; got != "physnet2" {
		t.Fatalf("member port physical_network %v, want the group's", got)
	}
	rec = e.do("PATCH", "/v1/portgroups/"+id, `[{"op": "replace", "path": "/node_uuid", "value": "`+other.UUID+`"}]`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Portgroup "+id+" can not be associated with node "+n.UUID+" because there are ports associated with this portgroup." {
		t.Fatalf("move with ports: %d %q", rec.Code, msg)
	}
	rec = e.do("PATCH", "/v1/portgroups/"+id, `[{"op": "remove", "path": "/mode"}]`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "'mode' is a mandatory attribute and can not be removed" {
		t.Fatalf("remove mode: %d %q", rec.Code, msg)
	}
	// A group with ports cannot be deleted; without, it can.
	rec = e.do("DELETE", "/v1/portgroups/"+id, "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Cannot complete the requested action because portgroup "+id+" contains ports." {
		t.Fatalf("delete with ports: %d %q", rec.Code, msg)
	}
	if rec := e.do("DELETE", "/v1/ports/"+port["uuid"].(string), "", latest); rec.Code != 204 {
		t.Fatalf("delete port: %d", rec.Code)
	}
	if rec := e.do("DELETE", "/v1/portgroups/bond0", "", latest); rec.Code != 204 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body.String())
	}
	rec = e.do("GET", "/v1/portgroups/"+id, "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 404 || msg != "Portgroup "+id+" could not be found." {
		t.Fatalf("get deleted: %d %q", rec.Code, msg)
	}
}

func TestPortgroupBadInput(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("pgb"))
	e.createPortgroup(`{"node_uuid": "` + n.UUID + `", "address": "11:11:11:11:11:11", "name": "taken"}`)
	cases := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"no node", `{"address": "11:11:11:11:11:12"}`, 400, "Schema error for portgroup: 'node_uuid' is a required property"},
		{"unknown node", `{"node_uuid": "6d85703a-565d-469a-96ce-30b6de53079d"}`, 400, "Node 6d85703a-565d-469a-96ce-30b6de53079d could not be found."},
		{"bad mac", `{"node_uuid": "` + n.UUID + `", "address": "zz"}`, 400, "Expected valid MAC address for address: zz"},
		{"bad name", `{"node_uuid": "` + n.UUID + `", "name": "a b"}`, 400, "Cannot create portgroup with invalid name 'a b'"},
		{"unknown key", `{"node_uuid": "` + n.UUID + `", "ports": []}`, 400, "Schema error for portgroup: Additional properties are not allowed ('ports' was unexpected)"},
		{"bad bool", `{"node_uuid": "` + n.UUID + `", "standalone_ports_supported": "maybe"}`, 400,
			"Invalid standalone_ports_supported: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"},
		{"duplicate name", `{"node_uuid": "` + n.UUID + `", "name": "taken"}`, 409, "A portgroup with name taken already exists."},
		{"duplicate mac", `{"node_uuid": "` + n.UUID + `", "address": "11:11:11:11:11:11"}`, 409, "A portgroup with MAC address 11:11:11:11:11:11 already exists."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := e.do("POST", "/v1/portgroups", c.body, latest)
			if _, msg := faultOf(t, rec); rec.Code != c.status || msg != c.msg {
				t.Fatalf("%d %q, want %d %q", rec.Code, msg, c.status, c.msg)
			}
		})
	}
	if got := decode(t, e.do("GET", "/v1/portgroups", "", latest)); len(got["portgroups"].([]any)) != 1 {
		t.Fatalf("a refused create left a portgroup: %v", got)
	}
}

func TestPortgroupMicroversions(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("pgv"))
	pg := &model.Portgroup{NodeUUID: n.UUID, Name: "pg1", Mode: "active-backup", StandalonePortsSupported: true}
	if err := e.st.Ports().CreatePortgroup(t.Context(), pg); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path, body string
		minor, status      int
	}{
		{"GET", "/v1/portgroups", "", 22, 404},
		{"GET", "/v1/portgroups", "", 23, 200},
		{"GET", "/v1/portgroups/pg1", "", 22, 404},
		{"GET", "/v1/nodes/pgv/portgroups", "", 23, 404},
		{"GET", "/v1/nodes/pgv/portgroups", "", 24, 200},
		{"GET", "/v1/portgroups/pg1/ports", "", 23, 404},
		{"GET", "/v1/portgroups/pg1/ports", "", 24, 200},
		{"POST", "/v1/portgroups", `{"node_uuid": "` + n.UUID + `", "mode": "802.3ad"}`, 25, 406},
		{"PATCH", "/v1/portgroups/pg1", `[{"op": "replace", "path": "/mode", "value": "802.3ad"}]`, 25, 406},
		{"GET", "/v1/portgroups/pg1?fields=mode", "", 25, 406},
		{"GET", "/v1/ports?portgroup=pg1", "", 23, 406},
		{"GET", "/v1/ports?portgroup=pg1", "", 24, 200},
		{"GET", "/v1/portgroups?shard=a", "", 105, 406},
		{"GET", "/v1/portgroups?shard=a", "", 106, 200},
	}
	for _, c := range cases {
		if rec := e.do(c.method, c.path, c.body, at(c.minor)); rec.Code != c.status {
			t.Errorf("%s %s at 1.%d: %d, want %d: %s", c.method, c.path, c.minor, rec.Code, c.status, rec.Body.String())
		}
	}
	// Fields newer than the request are hidden.
	old := decode(t, e.do("GET", "/v1/portgroups/pg1", "", at(25)))
	for _, k := range []string{"mode", "properties", "physical_network", "category"} {
		if _, ok := old[k]; ok {
			t.Errorf("%s shown at 1.25", k)
		}
	}
	if _, ok := decode(t, e.do("GET", "/v1/portgroups/pg1", "", at(102)))["physical_network"]; !ok {
		t.Error("physical_network hidden at 1.102")
	}
}

func TestVIFsFlat(t *testing.T) {
	e := newEnv(t)
	n := nodeFixture("vn")
	n.Interfaces.Network = "flat"
	e.mustNode(n)
	pxe := e.createPort(`{"node_uuid": "` + n.UUID + `", "address": "52:54:00:00:00:01"}`)
	plain := e.createPort(`{"node_uuid": "` + n.UUID + `", "address": "52:54:00:00:00:02", "pxe_enabled": false}`)
	pg := e.createPortgroup(`{"node_uuid": "` + n.UUID + `", "name": "bond"}`)
	member := e.createPort(`{"node_uuid": "` + n.UUID + `", "address": "52:54:00:00:00:03", "portgroup_uuid": "` + pg["uuid"].(string) + `"}`)
	_ = member
	vifs := func() string {
		t.Helper()
		rec := e.do("GET", "/v1/nodes/vn/vifs", "", latest)
		if rec.Code != 200 {
			t.Fatalf("list: %d %s", rec.Code, rec.Body.String())
		}
		return fmt.Sprint(decode(t, rec)["vifs"])
	}
	if got := vifs(); got != "[]" {
		t.Fatalf("no vifs: %s", got)
	}
	// A portgroup with ports is preferred, then PXE-enabled ports.
	for _, vif := range []string{"vif-a", "vif-b", "vif-c"} {
		if rec := e.do("POST", "/v1/nodes/vn/vifs", `{"id": "`+vif+`"}`, latest); rec.Code != 204 {
			t.Fatalf("attach %s: %d %s", vif, rec.Code, rec.Body.String())
		}
	}
	holder := func(path string) any {
		return decode(t, e.do("GET", path, "", latest))["internal_info"].(map[string]any)["tenant_vif_port_id"]
	}
	if got := []any{holder("/v1/portgroups/bond"), holder("/v1/ports/" + pxe["uuid"].(string)), holder("/v1/ports/" + plain["uuid"].(string))}; fmt.Sprint(got) != "[vif-a vif-b vif-c]" {
		t.Fatalf("VIF placement %v", got)
	}
	if got := vifs(); got != "[map[id:vif-b] map[id:vif-c] map[id:vif-a]]" {
		t.Fatalf("list (ports, then portgroups): %s", got)
	}
	rec := e.do("POST", "/v1/nodes/vn/vifs", `{"id": "vif-d"}`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Unable to attach VIF vif-d, not enough free physical ports." {
		t.Fatalf("no free port: %d %q", rec.Code, msg)
	}
	rec = e.do("POST", "/v1/nodes/vn/vifs", `{"id": "vif-b"}`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 409 || msg != "Unable to attach VIF because VIF vif-b is already attached to Ironic Port "+pxe["uuid"].(string) {
		t.Fatalf("attached twice: %d %q", rec.Code, msg)
	}
	if rec := e.do("DELETE", "/v1/nodes/vn/vifs/vif-a", "", latest); rec.Code != 204 {
		t.Fatalf("detach: %d %s", rec.Code, rec.Body.String())
	}
	if got := holder("/v1/portgroups/bond"); got != nil {
		t.Fatalf("detached VIF still on the portgroup: %v", got)
	}
	rec = e.do("DELETE", "/v1/nodes/vn/vifs/vif-a", "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Unable to detach VIF vif-a from node "+n.UUID+" because it is not attached to it." {
		t.Fatalf("detach twice: %d %q", rec.Code, msg)
	}
	// 1.67: a chosen port.
	if rec := e.do("DELETE", "/v1/nodes/vn/vifs/vif-c", "", latest); rec.Code != 204 {
		t.Fatalf("detach: %d", rec.Code)
	}
	rec = e.do("POST", "/v1/nodes/vn/vifs", `{"id": "vif-e", "port_uuid": "`+plain["uuid"].(string)+`", "portgroup_uuid": "`+pg["uuid"].(string)+`"}`, latest)
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Cannot specify both port_uuid and portgroup_uuid" {
		t.Fatalf("both: %d %q", rec.Code, msg)
	}
	if rec := e.do("POST", "/v1/nodes/vn/vifs", `{"id": "vif-e", "port_uuid": "`+plain["uuid"].(string)+`"}`, latest); rec.Code != 204 {
		t.Fatalf("attach to port: %d %s", rec.Code, rec.Body.String())
	}
	if got := holder("/v1/ports/" + plain["uuid"].(string)); got != "vif-e" {
		t.Fatalf("chosen port holds %v", got)
	}
}

func TestVIFsNoopAndBadInput(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("noopn"))
	if n.Interfaces.Network != "noop" {
		t.Fatalf("fixture network interface %q", n.Interfaces.Network)
	}
	e.createPort(`{"node_uuid": "` + n.UUID + `", "address": "52:54:00:00:00:09"}`)
	if rec := e.do("POST", "/v1/nodes/noopn/vifs", `{"id": "vif-a"}`, latest); rec.Code != 204 {
		t.Fatalf("noop attach: %d", rec.Code)
	}
	if got := fmt.Sprint(decode(t, e.do("GET", "/v1/nodes/noopn/vifs", "", latest))["vifs"]); got != "[]" {
		t.Fatalf("noop lists %s", got)
	}
	for _, c := range []struct {
		method, path, body string
		minor, status      int
		msg                string
	}{
		{"GET", "/v1/nodes/noopn/vifs", "", 27, 404, "Resource could not be found."},
		{"POST", "/v1/nodes/noopn/vifs", `{}`, 28, 400, "Schema error for vif: 'id' is a required property"},
		{"POST", "/v1/nodes/noopn/vifs", `{"id": 5}`, 28, 400, "Schema error for vif: 5 is not of type 'string'"},
		{"POST", "/v1/nodes/noopn/vifs", `{"id": "a b"}`, 28, 400, "Expected UUID or name for id: a b"},
		{"POST", "/v1/nodes/noopn/vifs", `[]`, 28, 400, "Schema error for vif: [] is not of type 'object'"},
		{"DELETE", "/v1/nodes/noopn/vifs/a%20b", "", 28, 400, "Expected UUID or name for vif_id: a b"},
		{"POST", "/v1/nodes/nope/vifs", `{"id": "x"}`, 28, 404, "Node nope could not be found."},
	} {
		rec := e.do(c.method, c.path, c.body, at(c.minor))
		if code, msg := faultOf(t, rec); rec.Code != c.status || msg != c.msg {
			t.Errorf("%s %s at 1.%d: %d %q (%s), want %d %q", c.method, c.path, c.minor, rec.Code, msg, code, c.status, c.msg)
		}
	}
}

// TestPortgroupStandalonePorts: on the flat network a group without
// standalone port support takes no PXE-enabled port, and support cannot be
// turned off while such a port is a member (Ironic's port_changed and
// portgroup_changed).
func TestPortgroupStandalonePorts(t *testing.T) {
	e := newEnv(t)
	n := nodeFixture("flatn")
	n.Interfaces.Network = "flat"
	e.mustNode(n)
	strict := e.createPortgroup(`{"node_uuid": "` + n.UUID + `", "name": "strict", "standalone_ports_supported": false}`)["uuid"].(string)
	loose := e.createPortgroup(`{"node_uuid": "` + n.UUID + `", "name": "loose"}`)["uuid"].(string)
	port := e.createPort(`{"node_uuid": "` + n.UUID + `", "address": "52:54:00:00:00:21"}`)["uuid"].(string)
	rec := e.do("PATCH", "/v1/ports/"+port, `[{"op": "add", "path": "/portgroup_uuid", "value": "`+strict+`"}]`, latest)
	want := "Port group " + strict + " doesn't support standalone ports. This port " + port + " cannot be  a member of that port group because of: 'pxe_enabled' was set to True"
	if _, msg := faultOf(t, rec); rec.Code != 409 || msg != want {
		t.Fatalf("PXE port into strict group: %d %q", rec.Code, msg)
	}
	rec = e.do("PATCH", "/v1/ports/"+port, `[{"op": "add", "path": "/portgroup_uuid", "value": "`+strict+`"}, {"op": "replace", "path": "/pxe_enabled", "value": false}]`, latest)
	if rec.Code != 200 {
		t.Fatalf("non-PXE port into strict group: %d %s", rec.Code, rec.Body.String())
	}
	rec = e.do("PATCH", "/v1/ports/"+port, `[{"op": "replace", "path": "/portgroup_uuid", "value": "`+loose+`"}, {"op": "replace", "path": "/pxe_enabled", "value": true}]`, latest)
	if rec.Code != 200 {
		t.Fatalf("PXE port into loose group: %d %s", rec.Code, rec.Body.String())
	}
	rec = e.do("PATCH", "/v1/portgroups/loose", `[{"op": "replace", "path": "/standalone_ports_supported", "value": false}]`, latest)
	want = "standalone_ports_supported can not be set to False, because the port group " + loose + " contains port with 'pxe_enabled' is set to True"
	if _, msg := faultOf(t, rec); rec.Code != 409 || msg != want {
		t.Fatalf("turn off standalone with a PXE member: %d %q", rec.Code, msg)
	}
}
