package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

func TestPortCreate(t *testing.T) {
	tests := []struct {
		name, body, version string
		status              int
		msg                 string
	}{
		{"minimal", `{"address":"52:54:00:AA:BB:01","node_uuid":"%s"}`, latest, 201, ""},
		{"full", `{"address":"52:54:00:aa:bb:02","node_uuid":"%s","pxe_enabled":"false","name":"p1","physical_network":"physnet1",
			"local_link_connection":{"switch_id":"0A:1B:2C:3D:4E:5F","port_id":"Ethernet3/1","switch_info":"sw"},"is_smartnic":false,"extra":{"k":"v"}}`, latest, 201, ""},
		{"bad mac", `{"address":"not-a-mac","node_uuid":"%s"}`, latest, 400, "Expected valid MAC address for address: not-a-mac"},
		{"duplicate mac", `{"address":"52:54:00:aa:bb:ff","node_uuid":"%s"}`, latest, 409, "A port with MAC address 52:54:00:aa:bb:ff already exists."},
		{"unknown node", `{"address":"52:54:00:aa:bb:03","node_uuid":"0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"}`, latest, 400,
			"Node 0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3 could not be found."},
		{"node by name", `{"address":"52:54:00:aa:bb:03","node_uuid":"n1"}`, latest, 400, "Expected UUID for node_uuid: n1"},
		{"no node", `{"address":"52:54:00:aa:bb:03"}`, latest, 400, "Schema error for port: 'node_uuid' is a required property"},
		{"no address", `{"node_uuid":"%s"}`, latest, 400, "Schema error for port: 'address' is a required property"},
		{"unknown field", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","foo":1}`, latest, 400,
			"Schema error for port: Additional properties are not allowed ('foo' was unexpected)"},
		{"node_ident before 1.94", `{"address":"52:54:00:aa:bb:03","node_ident":"n1"}`, at(93), 406, "Request not acceptable."},
		{"pxe_enabled at 1.18", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","pxe_enabled":true}`, at(18), 406, "Request not acceptable."},
		{"name at 1.87", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","name":"x"}`, at(87), 406, "Request not acceptable."},
		{"description before 1.97", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","description":"x"}`, at(96), 406, "Request not acceptable."},
		{"portgroup", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","portgroup_uuid":"0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"}`, latest, 400,
			"Portgroup 0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3 could not be found."},
		{"smart nic without hostname", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","is_smartnic":true,"local_link_connection":{"port_id":"p","switch_id":"52:54:00:aa:bb:03"}}`, latest, 400,
			"Smart NIC port must have port_id and hostname in local_link_connection"},
		{"bad local link", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","local_link_connection":{"port_id":"p"}}`, latest, 400,
			"Schema error for local_link_connection"},
		{"bad switch id", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","local_link_connection":{"port_id":"p","switch_id":"zz"}}`, latest, 400,
			"Expected a MAC address or OpenFlow datapath ID but received zz."},
		{"empty physical network", `{"address":"52:54:00:aa:bb:03","node_uuid":"%s","physical_network":""}`, latest, 400,
			"A non-empty value is required when setting physical_network"},
		{"wrong types", `{"address":5,"node_uuid":"%s"}`, latest, 400, "Schema error for port: 5 is not of type 'string'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			n := e.mustNode(nodeFixture("n1"))
			_ = e.st.Ports().CreatePort(context.Background(), &model.Port{UUID: "11111111-2222-3333-4444-555555555555", Address: "52:54:00:aa:bb:ff", NodeUUID: n.UUID})
			body := tc.body
			if strings.Contains(body, "%s") {
				body = fmt.Sprintf(body, n.UUID)
			}
			rec := e.do("POST", "/v1/ports", body, tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code != 201 {
				if _, msg := faultOf(t, rec); !strings.Contains(msg, tc.msg) {
					t.Errorf("message %q\nwant    %q", msg, tc.msg)
				}
				return
			}
			p := decode(t, rec)
			if !strings.HasPrefix(p["address"].(string), "52:54:00:aa:bb:0") || p["node_uuid"] != n.UUID {
				t.Errorf("%v", p)
			}
			if rec.Header().Get("Location") != "http://"+testHost+"/v1/ports/"+p["uuid"].(string) {
				t.Errorf("Location %q", rec.Header().Get("Location"))
			}
		})
	}
}

func TestPortDefaultsAndShape(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("n1"))
	p := decode(t, e.do("POST", "/v1/ports", `{"address":"52:54:00:aa:bb:01","node_uuid":"`+n.UUID+`"}`, at(82)))
	want := []string{"uuid", "created_at", "updated_at", "address", "extra", "internal_info", "is_smartnic",
		"local_link_connection", "physical_network", "pxe_enabled", "node_uuid", "links", "portgroup_uuid"}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("keys at 1.82:\n got %v\nwant %v", keys, want)
	}
	if p["pxe_enabled"] != true || p["physical_network"] != nil || fmt.Sprint(p["local_link_connection"]) != "map[]" {
		t.Errorf("defaults: %v", p)
	}
	old := decode(t, e.do("GET", "/v1/ports/"+p["uuid"].(string), ""))
	if len(old) != 7 {
		t.Errorf("port at 1.1 has %d keys: %v", len(old), old)
	}
}

func TestPortListAndGet(t *testing.T) {
	e := newEnv(t)
	n1 := e.mustNode(nodeFixture("n1"))
	n2 := e.mustNode(nodeFixture("n2"))
	var uuids []string
	for i := range 5 {
		node := n1
		if i >= 3 {
			node = n2
		}
		p := &model.Port{UUID: fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", i), Address: fmt.Sprintf("52:54:00:00:00:0%d", i),
			NodeUUID: node.UUID, Name: fmt.Sprintf("port%d", i), PXEEnabled: true}
		_ = e.st.Ports().CreatePort(context.Background(), p)
		uuids = append(uuids, p.UUID)
	}
	tests := []struct {
		name, path, version string
		status              int
		count               int
		msg                 string
	}{
		{"all", "/v1/ports", latest, 200, 5, ""},
		{"by node name", "/v1/ports?node=n1", latest, 200, 3, ""},
		{"by node uuid", "/v1/ports?node_uuid=" + n2.UUID, latest, 200, 2, ""},
		{"node sub-resource", "/v1/nodes/n2/ports", latest, 200, 2, ""},
		{"node sub-resource detail", "/v1/nodes/n2/ports/detail", latest, 200, 2, ""},
		{"by address", "/v1/ports?address=52:54:00:00:00:03", latest, 200, 1, ""},
		{"by upper address", "/v1/ports?address=52:54:00:00:00:0A", latest, 200, 0, ""},
		{"detail", "/v1/ports/detail", latest, 200, 5, ""},
		{"detail flag", "/v1/ports?detail=true", latest, 200, 5, ""},
		{"limit", "/v1/ports?limit=2", latest, 200, 2, ""},
		{"marker", "/v1/ports?marker=" + uuids[3], latest, 200, 1, ""},
		{"bad address", "/v1/ports?address=zz", latest, 400, 0, "Expected valid MAC address for address: zz"},
		{"unknown node", "/v1/ports?node=nosuch", latest, 404, 0, "Node nosuch could not be found."},
		{"node name at 1.4", "/v1/ports?node=n1", at(4), 406, 0, ""},
		{"portgroup", "/v1/ports?portgroup=pg1", latest, 404, 0, "Portgroup pg1 could not be found."},
		{"unknown field", "/v1/ports?fields=uuid,bogus", latest, 400, 0, `Field(s) "bogus" are not valid`},
		{"field too new", "/v1/ports?fields=physical_network", at(33), 406, 0, ""},
		{"unsortable", "/v1/ports?sort_key=extra", latest, 400, 0, "The sort_key value extra is an invalid field for sorting"},
		{"unknown sort", "/v1/ports?sort_key=bogus", latest, 400, 0, `The sort_key value "bogus" is an invalid field for sorting`},
		{"unknown marker", "/v1/ports?marker=0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3", latest, 404, 0, ""},
		{"unknown param", "/v1/ports?foo=1", latest, 400, 0, "Unexpected arguments: foo"},
		{"fields on detail path", "/v1/ports/detail?fields=uuid", latest, 400, 0, "Unexpected arguments: fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code != 200 {
				if _, msg := faultOf(t, rec); !strings.Contains(msg, tc.msg) {
					t.Errorf("message %q, want %q", msg, tc.msg)
				}
				return
			}
			if got := len(decode(t, rec)["ports"].([]any)); got != tc.count {
				t.Errorf("%d ports, want %d", got, tc.count)
			}
		})
	}
	m := decode(t, e.do("GET", "/v1/ports?limit=2", "", latest))
	if m["next"] != "http://"+testHost+"/v1/ports?sort_key=id&sort_dir=asc&fields=uuid,address&limit=2&marker="+uuids[1] {
		t.Errorf("next %v", m["next"])
	}
	if keys := orderedKeys(t, []byte(strings.TrimPrefix(e.do("GET", "/v1/ports?limit=1", "", latest).Body.String(), `{"ports": [`))); !slices.Equal(keys[:3], []string{"uuid", "address", "links"}) {
		t.Errorf("brief keys %v", keys)
	}
	for _, tc := range []struct {
		path   string
		ver    string
		status int
	}{
		{"/v1/ports/" + uuids[0], latest, 200},
		{"/v1/ports/port0", latest, 200},
		{"/v1/ports/port0", at(87), 400},
		{"/v1/ports/bad%20name", latest, 400},
		{"/v1/ports/0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3", latest, 404},
		{"/v1/ports/" + uuids[0] + "?fields=address", latest, 200},
	} {
		if rec := e.do("GET", tc.path, "", tc.ver); rec.Code != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, rec.Code, tc.status)
		}
	}
}

func TestPortPatchAndDelete(t *testing.T) {
	e := newEnv(t)
	n1 := e.mustNode(nodeFixture("n1"))
	n2 := e.mustNode(nodeFixture("n2"))
	p := &model.Port{UUID: "00000000-0000-0000-0000-000000000001", Address: "52:54:00:00:00:01", NodeUUID: n1.UUID, PXEEnabled: true}
	_ = e.st.Ports().CreatePort(context.Background(), p)
	_ = e.st.Ports().CreatePort(context.Background(), &model.Port{UUID: "00000000-0000-0000-0000-000000000002", Address: "52:54:00:00:00:02", NodeUUID: n1.UUID})
	tests := []struct {
		name, patch, version string
		status               int
		msg                  string
	}{
		{"address", `[{"op":"replace","path":"/address","value":"52:54:00:00:00:AA"}]`, latest, 200, ""},
		{"duplicate address", `[{"op":"replace","path":"/address","value":"52:54:00:00:00:02"}]`, latest, 409, "A port with MAC address 52:54:00:00:00:02 already exists."},
		{"bad address", `[{"op":"replace","path":"/address","value":"x"}]`, latest, 400, "Expected valid MAC address for address: x"},
		{"move node", `[{"op":"replace","path":"/node_uuid","value":"` + n2.UUID + `"}]`, latest, 200, ""},
		{"move to missing node", `[{"op":"replace","path":"/node_uuid","value":"0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"}]`, latest, 400,
			"Unable to apply the requested node_uuid '0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3'. Requested value was invalid."},
		{"read-only", `[{"op":"replace","path":"/uuid","value":"x"}]`, latest, 400, "Cannot patch /uuid."},
		{"pxe at 1.18", `[{"op":"replace","path":"/pxe_enabled","value":false}]`, at(18), 406, ""},
		{"remove physical network", `[{"op":"remove","path":"/physical_network"}]`, latest, 200, ""},
		{"extra", `[{"op":"add","path":"/extra/a","value":1}]`, latest, 200, ""},
		{"remove address", `[{"op":"remove","path":"/address"}]`, latest, 400, "'address' is a required property"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("PATCH", "/v1/ports/"+p.UUID, tc.patch, tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code != 200 {
				if _, msg := faultOf(t, rec); !strings.Contains(msg, tc.msg) {
					t.Errorf("message %q, want %q", msg, tc.msg)
				}
			}
		})
	}
	got, _ := e.st.Ports().GetPort(context.Background(), p.UUID)
	if got.Address != "52:54:00:00:00:aa" || got.NodeUUID != n2.UUID || got.Extra["a"] != float64(1) {
		t.Errorf("port %+v", got)
	}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/ports/zz", 400},
		{"/v1/ports/" + p.UUID, 204},
		{"/v1/ports/" + p.UUID, 404},
	} {
		if rec := e.do("DELETE", tc.path, "", latest); rec.Code != tc.status {
			t.Errorf("DELETE %s: %d, want %d", tc.path, rec.Code, tc.status)
		}
	}
}

// TestPortNodeLinkKeepsOwner: a port or portgroup is not moved to a node of
// another owner (Ironic's authorize_node_link, CVE-2026-44918), with the
// answer of an unknown node.
func TestPortNodeLinkKeepsOwner(t *testing.T) {
	e := newEnv(t)
	from := e.mustNode(&model.Node{Name: "from"})
	other := e.mustNode(&model.Node{Name: "other", Owner: "p1"})
	same := e.mustNode(&model.Node{Name: "same"})
	port := &model.Port{NodeUUID: from.UUID, Address: "52:54:00:00:00:31"}
	if err := e.st.Ports().CreatePort(t.Context(), port); err != nil {
		t.Fatal(err)
	}
	pg := &model.Portgroup{NodeUUID: from.UUID, Name: "pg-from", Mode: "active-backup"}
	if err := e.st.Ports().CreatePortgroup(t.Context(), pg); err != nil {
		t.Fatal(err)
	}
	move := func(to string) string { return `[{"op": "replace", "path": "/node_uuid", "value": "` + to + `"}]` }
	bad := "Unable to apply the requested node_uuid '" + other.UUID + "'. Requested value was invalid."
	runVCases(t, e, []vcase{
		{"port to another owner's node", "PATCH", "/v1/ports/" + port.UUID, move(other.UUID), latest, 400, bad, nil},
		{"portgroup to another owner's node", "PATCH", "/v1/portgroups/" + pg.UUID, move(other.UUID), latest, 400, bad, nil},
		{"port to the same owner's node", "PATCH", "/v1/ports/" + port.UUID, move(same.UUID), latest, 200, "", nil},
	})
}
