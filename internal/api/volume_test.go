package api

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// volumeNodes are three nodes in the states Ironic's volume rules tell
// apart: powered off (any change), powered on and active (no change),
// powered on but manageable (deletion only).
func volumeNodes(e *env) (off, on, manageable *model.Node) {
	off = e.mustNode(&model.Node{Name: "vol-off", PowerState: "power off"})
	on = e.mustNode(&model.Node{Name: "vol-on", PowerState: "power on", ProvisionState: "active"})
	manageable = e.mustNode(&model.Node{Name: "vol-manageable", PowerState: "power on", ProvisionState: "manageable"})
	return off, on, manageable
}

func mustCreateVolume(t *testing.T, e *env, kind, body string) map[string]any {
	t.Helper()
	rec := e.do("POST", "/v1/volume/"+kind, body, latest)
	if rec.Code != 201 {
		t.Fatalf("create %s: %d %s", kind, rec.Code, rec.Body.String())
	}
	m := decode(t, rec)
	if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/volume/"+kind+"/"+m["uuid"].(string) {
		t.Errorf("Location %q", loc)
	}
	return m
}

// keysAre checks a document's keys, in any order.
func keysAre(t *testing.T, m map[string]any, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
}

func TestVolumeConnectors(t *testing.T) {
	e := newEnv(t)
	off, on, manageable := volumeNodes(e)
	const iqn = "iqn.2017-07.org.openstack:01:d9a51732c3f"
	c := mustCreateVolume(t, e, "connectors", `{"node_uuid": "`+off.UUID+`", "type": "iqn", "connector_id": "`+iqn+`"}`)
	keysAre(t, c, "uuid", "created_at", "updated_at", "connector_id", "extra", "type", "links", "node_uuid")
	if c["node_uuid"] != off.UUID || c["type"] != "iqn" || c["updated_at"] != nil || fmt.Sprint(c["extra"]) != "map[]" {
		t.Errorf("created %v", c)
	}
	id := c["uuid"].(string)
	// Ironic's API creates without the node's lock or a power check.
	onConn := mustCreateVolume(t, e, "connectors", `{"node_uuid": "`+on.UUID+`", "type": "wwpn", "connector_id": "50:00:00:00:00:00:00:01"}`)["uuid"].(string)
	mgConn := mustCreateVolume(t, e, "connectors", `{"node_uuid": "`+manageable.UUID+`", "type": "mac", "connector_id": "52:54:00:00:00:01"}`)["uuid"].(string)
	locked := e.mustNode(&model.Node{Name: "vol-locked", PowerState: "power off"})
	lockedConn := mustCreateVolume(t, e, "connectors", `{"node_uuid": "`+locked.UUID+`", "type": "ip", "connector_id": "10.0.0.9"}`)["uuid"].(string)
	if _, err := e.st.Nodes().ReserveNode(t.Context(), locked.UUID, "other"); err != nil {
		t.Fatal(err)
	}
	owned := e.mustNode(&model.Node{Name: "vol-owned", PowerState: "power off", Owner: "p1"})
	unknown := "11111111-2222-4333-8444-555555555555"
	runVCases(t, e, []vcase{
		{"before 1.32", "POST", "/v1/volume/connectors", `{}`, at(31), 404, "", nil},
		// Ironic's fix of CVE-2026-44918: no moving to another owner's node.
		{"patch onto another owner's node", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "replace", "path": "/node_uuid", "value": "` + owned.UUID + `"}]`,
			latest, 400, "Unable to apply the requested node_uuid '" + owned.UUID + "'. Requested value was invalid.", nil},
		{"patch under another's lock", "PATCH", "/v1/volume/connectors/" + lockedConn, `[{"op": "replace", "path": "/connector_id", "value": "10.0.0.8"}]`,
			latest, 409, "Node " + locked.UUID + " is locked by host other, please retry after the current operation is completed.", nil},
		{"delete under another's lock", "DELETE", "/v1/volume/connectors/" + lockedConn, "", latest, 409,
			"Node " + locked.UUID + " is locked by host other, please retry after the current operation is completed.", nil},
		{"duplicate type and id", "POST", "/v1/volume/connectors", `{"node_uuid": "` + on.UUID + `", "type": "iqn", "connector_id": "` + iqn + `"}`,
			latest, 409, "A volume connector with type iqn and connector ID " + iqn + " already exists.", nil},
		{"duplicate uuid", "POST", "/v1/volume/connectors", `{"uuid": "` + id + `", "node_uuid": "` + on.UUID + `", "type": "ip", "connector_id": "10.0.0.1"}`,
			latest, 409, "A volume connector with UUID " + id + " already exists.", nil},
		{"type not a string", "POST", "/v1/volume/connectors", `{"node_uuid": "` + off.UUID + `", "type": 5, "connector_id": "x"}`,
			latest, 400, "Schema error for connector: 5 is not of type 'string'", nil},
		{"type missing", "POST", "/v1/volume/connectors", `{"node_uuid": "` + off.UUID + `", "connector_id": "x"}`,
			latest, 400, "Schema error for connector: 'type' is a required property", nil},
		{"unknown property", "POST", "/v1/volume/connectors", `{"node_uuid": "` + off.UUID + `", "type": "ip", "connector_id": "x", "name": "n"}`,
			latest, 400, "Schema error for connector: Additional properties are not allowed ('name' was unexpected)", nil},
		{"node not a uuid", "POST", "/v1/volume/connectors", `{"node_uuid": "vol-off", "type": "ip", "connector_id": "x"}`,
			latest, 400, "Expected UUID for node_uuid: vol-off", nil},
		{"unknown node", "POST", "/v1/volume/connectors", `{"node_uuid": "` + unknown + `", "type": "ip", "connector_id": "x"}`,
			latest, 400, "Invalid input for field/attribute node_uuid. Value: '" + unknown + "'. ", nil},
		{"get", "GET", "/v1/volume/connectors/" + id + "?fields=type", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			keysAre(t, m, "type", "links")
		}},
		{"get bad field", "GET", "/v1/volume/connectors/" + id + "?fields=name", "", latest, 400, `Field(s) "name" are not valid`, nil},
		{"get not a uuid", "GET", "/v1/volume/connectors/nope", "", latest, 400, "Expected UUID for connector_uuid: nope", nil},
		{"get unknown", "GET", "/v1/volume/connectors/" + unknown, "", latest, 404, "Volume connector " + unknown + " could not be found.", nil},
		{"patch", "PATCH", "/v1/volume/connectors/" + id,
			`[{"op": "replace", "path": "/connector_id", "value": "iqn.new"}, {"op": "add", "path": "/extra/rack", "value": 4}]`,
			latest, 200, "", func(t *testing.T, m map[string]any) {
				if m["connector_id"] != "iqn.new" || fmt.Sprint(m["extra"]) != "map[rack:4]" || m["updated_at"] == nil || m["node_uuid"] != off.UUID {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch node powered on", "PATCH", "/v1/volume/connectors/" + onConn, `[{"op": "replace", "path": "/connector_id", "value": "x"}]`,
			latest, 400, `The requested action "volume connector update" can not be performed on node "` + on.UUID + `" while it is in state "power on".`, nil},
		{"patch onto a powered on node", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "replace", "path": "/node_uuid", "value": "` + on.UUID + `"}]`,
			latest, 400, `The requested action "volume connector update" can not be performed on node "` + on.UUID + `" while it is in state "power on".`, nil},
		{"patch uuid", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "replace", "path": "/uuid", "value": "` + unknown + `"}]`,
			latest, 400, "Cannot patch /uuid. Only the following can be updated: connector_id, extra, node_uuid, type", nil},
		{"patch node not a uuid", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "replace", "path": "/node_uuid", "value": "vol-on"}]`,
			latest, 400, "Expected a UUID for node_uuid, but received vol-on.", nil},
		{"patch unknown node", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "replace", "path": "/node_uuid", "value": "` + unknown + `"}]`,
			latest, 400, "Unable to apply the requested node_uuid '" + unknown + "'. Requested value was invalid.", nil},
		{"patch remove type", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "remove", "path": "/type"}]`,
			latest, 400, "Schema error for patch: 'type' is a required property", nil},
		{"patch into a duplicate", "PATCH", "/v1/volume/connectors/" + id, `[{"op": "replace", "path": "/type", "value": "wwpn"}, {"op": "replace", "path": "/connector_id", "value": "50:00:00:00:00:00:00:01"}]`,
			latest, 409, "A volume connector with type wwpn and connector ID 50:00:00:00:00:00:00:01 already exists.", nil},
		{"patch unknown", "PATCH", "/v1/volume/connectors/" + unknown, `[{"op": "replace", "path": "/type", "value": "ip"}]`,
			latest, 404, "Volume connector " + unknown + " could not be found.", nil},
		{"delete node powered on", "DELETE", "/v1/volume/connectors/" + onConn, "", latest, 400,
			`The requested action "volume connector deletion" can not be performed on node "` + on.UUID + `" while it is in state "power on".`, nil},
		{"delete manageable node's", "DELETE", "/v1/volume/connectors/" + mgConn, "", latest, 204, "", nil},
		{"delete", "DELETE", "/v1/volume/connectors/" + id, "", latest, 204, "", nil},
		{"delete again", "DELETE", "/v1/volume/connectors/" + id, "", latest, 404, "Volume connector " + id + " could not be found.", nil},
		{"type and id free again", "POST", "/v1/volume/connectors", `{"node_uuid": "` + off.UUID + `", "type": "iqn", "connector_id": "` + iqn + `"}`,
			latest, 201, "", nil},
	})
}

func TestVolumeTargets(t *testing.T) {
	e := newEnv(t)
	off, on, manageable := volumeNodes(e)
	tg := mustCreateVolume(t, e, "targets", `{"node_uuid": "`+off.UUID+`", "volume_type": "iscsi", "boot_index": 0,
		"volume_id": "04452bed-5367-4202-8bf5-de4335ac56d2", "properties": {"target_lun": 0, "auth_password": "s3cret"}}`)
	keysAre(t, tg, "uuid", "created_at", "updated_at", "boot_index", "extra", "properties", "volume_id", "volume_type", "links", "node_uuid")
	if tg["boot_index"] != 0.0 || fmt.Sprint(tg["properties"]) != "map[auth_password:****** target_lun:0]" {
		t.Errorf("created %v", tg)
	}
	id := tg["uuid"].(string)
	onTarget := mustCreateVolume(t, e, "targets", `{"node_uuid": "`+on.UUID+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v"}`)["uuid"].(string)
	mgTarget := mustCreateVolume(t, e, "targets", `{"node_uuid": "`+manageable.UUID+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v"}`)["uuid"].(string)
	// The same volume at another index of the same node is Ironic's business.
	second := mustCreateVolume(t, e, "targets", `{"node_uuid": "`+off.UUID+`", "volume_type": "iscsi", "boot_index": 1, "volume_id": "04452bed-5367-4202-8bf5-de4335ac56d2"}`)["uuid"].(string)
	runVCases(t, e, []vcase{
		{"duplicate boot index", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": 0, "volume_id": "w"}`,
			latest, 409, "A volume target with boot index '0' for the same node already exists.", nil},
		{"boot index a string", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": "2", "volume_id": "w"}`,
			latest, 400, "Schema error for target: '2' is not of type 'integer'", nil},
		{"boot index a fraction", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": 2.5, "volume_id": "w"}`,
			latest, 400, "Schema error for target: 2.5 is not of type 'integer'", nil},
		{"boot index out of range", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": 1e12, "volume_id": "w"}`,
			latest, 400, "", nil},
		{"volume id missing", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": 3}`,
			latest, 400, "Schema error for target: 'volume_id' is a required property", nil},
		{"properties not an object", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": 3, "volume_id": "w", "properties": []}`,
			latest, 400, "Schema error for target: [] is not of type 'object', 'null'", nil},
		{"get masks properties", "GET", "/v1/volume/targets/" + id, "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if fmt.Sprint(m["properties"]) != "map[auth_password:****** target_lun:0]" {
				t.Errorf("properties %v", m["properties"])
			}
		}},
		{"get not a uuid", "GET", "/v1/volume/targets/nope", "", latest, 400, "Expected UUID for target_uuid: nope", nil},
		{"patch", "PATCH", "/v1/volume/targets/" + id,
			`[{"op": "replace", "path": "/boot_index", "value": 5}, {"op": "remove", "path": "/properties"}]`,
			latest, 200, "", func(t *testing.T, m map[string]any) {
				if m["boot_index"] != 5.0 || fmt.Sprint(m["properties"]) != "map[]" || m["updated_at"] == nil {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch into a duplicate", "PATCH", "/v1/volume/targets/" + id, `[{"op": "replace", "path": "/boot_index", "value": 1}]`,
			latest, 409, "A volume target with boot index '1' for the same node already exists.", nil},
		{"patch boot index a string", "PATCH", "/v1/volume/targets/" + id, `[{"op": "replace", "path": "/boot_index", "value": "1"}]`,
			latest, 400, "Schema error for patch: '1' is not of type 'integer'", nil},
		{"patch uuid", "PATCH", "/v1/volume/targets/" + id, `[{"op": "replace", "path": "/uuid", "value": "` + second + `"}]`,
			latest, 400, "Cannot patch /uuid. Only the following can be updated: boot_index, extra, node_uuid, properties, volume_id, volume_type", nil},
		{"patch node powered on", "PATCH", "/v1/volume/targets/" + onTarget, `[{"op": "replace", "path": "/volume_id", "value": "x"}]`,
			latest, 400, `The requested action "volume target update" can not be performed on node "` + on.UUID + `" while it is in state "power on".`, nil},
		{"patch manageable but powered on", "PATCH", "/v1/volume/targets/" + mgTarget, `[{"op": "replace", "path": "/volume_id", "value": "x"}]`,
			latest, 400, `The requested action "volume target update" can not be performed on node "` + manageable.UUID + `" while it is in state "power on".`, nil},
		{"delete node powered on", "DELETE", "/v1/volume/targets/" + onTarget, "", latest, 400,
			`The requested action "volume target deletion" can not be performed on node "` + on.UUID + `" while it is in state "power on".`, nil},
		{"delete manageable node's", "DELETE", "/v1/volume/targets/" + mgTarget, "", latest, 204, "", nil},
		{"delete", "DELETE", "/v1/volume/targets/" + second, "", latest, 204, "", nil},
		{"delete again", "DELETE", "/v1/volume/targets/" + second, "", latest, 404, "Volume target " + second + " could not be found.", nil},
	})
}

func TestVolumeLists(t *testing.T) {
	e := newEnv(t)
	off, on, _ := volumeNodes(e)
	var conns []string
	for i, node := range []string{off.UUID, on.UUID, off.UUID} {
		c := mustCreateVolume(t, e, "connectors", fmt.Sprintf(`{"node_uuid": "%s", "type": "iqn", "connector_id": "iqn.%c"}`, node, 'c'-i))
		conns = append(conns, c["uuid"].(string))
	}
	mustCreateVolume(t, e, "targets", `{"node_uuid": "`+off.UUID+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v", "properties": {"password": "p"}}`)
	uuids := func(t *testing.T, m map[string]any, key string) []string {
		t.Helper()
		var out []string
		for _, it := range m[key].([]any) {
			out = append(out, it.(map[string]any)["uuid"].(string))
		}
		return out
	}
	want := func(key string, ids ...string) func(t *testing.T, m map[string]any) {
		return func(t *testing.T, m map[string]any) {
			t.Helper()
			if got := uuids(t, m, key); !slices.Equal(got, ids) {
				t.Errorf("%s = %v, want %v", key, got, ids)
			}
		}
	}
	unknown := "11111111-2222-4333-8444-555555555555"
	runVCases(t, e, []vcase{
		{"root", "GET", "/v1/volume", "", latest, 200, "", func(t *testing.T, m map[string]any) { keysAre(t, m, "links", "connectors", "targets") }},
		{"before 1.32", "GET", "/v1/volume/connectors", "", at(31), 404, "", nil},
		{"all, brief", "GET", "/v1/volume/connectors", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			want("connectors", conns...)(t, m)
			keysAre(t, m["connectors"].([]any)[0].(map[string]any), "uuid", "node_uuid", "type", "connector_id", "links")
			if _, ok := m["next"]; ok {
				t.Errorf("next on a short page: %v", m["next"])
			}
		}},
		{"detail", "GET", "/v1/volume/connectors?detail=True", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			keysAre(t, m["connectors"].([]any)[0].(map[string]any), "uuid", "created_at", "updated_at", "connector_id", "extra", "type", "links", "node_uuid")
		}},
		{"detail before 1.43", "GET", "/v1/volume/connectors?detail=True", "", at(32), 200, "", nil},
		{"fields", "GET", "/v1/volume/targets?fields=uuid,properties", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			one := m["targets"].([]any)[0].(map[string]any)
			keysAre(t, one, "uuid", "properties", "links")
			if fmt.Sprint(one["properties"]) != "map[password:******]" {
				t.Errorf("properties not masked: %v", one)
			}
		}},
		{"fields and detail", "GET", "/v1/volume/connectors?fields=uuid&detail=True", "", latest, 400, "Can't fetch a subset of fields with 'detail' set", nil},
		{"bad field", "GET", "/v1/volume/connectors?fields=name", "", latest, 400, `Field(s) "name" are not valid`, nil},
		{"by node", "GET", "/v1/volume/connectors?node=vol-off", "", latest, 200, "", want("connectors", conns[0], conns[2])},
		{"under the node", "GET", "/v1/nodes/vol-on/volume/connectors", "", latest, 200, "", want("connectors", conns[1])},
		{"targets under the node", "GET", "/v1/nodes/" + on.UUID + "/volume/targets", "", latest, 200, "", want("targets")},
		{"under an unknown node", "GET", "/v1/nodes/nope/volume/connectors", "", latest, 404, "Node nope could not be found.", nil},
		{"unknown node filter", "GET", "/v1/volume/connectors?node=nope", "", latest, 404, "Node nope could not be found.", nil},
		{"sorted", "GET", "/v1/volume/connectors?sort_key=connector_id", "", latest, 200, "", want("connectors", conns[2], conns[1], conns[0])},
		{"sorted desc", "GET", "/v1/volume/connectors?sort_dir=desc", "", latest, 200, "", want("connectors", conns[2], conns[1], conns[0])},
		{"sort by extra", "GET", "/v1/volume/connectors?sort_key=extra", "", latest, 400, "The sort_key value extra is an invalid field for sorting", nil},
		{"sort by properties", "GET", "/v1/volume/targets?sort_key=properties", "", latest, 400, "The sort_key value properties is an invalid field for sorting", nil},
		{"sort by an unknown key", "GET", "/v1/volume/connectors?sort_key=name", "", latest, 400, `The sort_key value "name" is an invalid field for sorting`, nil},
		{"bad sort dir", "GET", "/v1/volume/connectors?sort_dir=up", "", latest, 400, "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'", nil},
		{"unknown marker", "GET", "/v1/volume/connectors?marker=" + unknown, "", latest, 404, "Volume connector " + unknown + " could not be found.", nil},
		{"unknown argument", "GET", "/v1/volume/targets?address=x", "", latest, 400, "Unexpected arguments: address", nil},
	})

	// Paging: each full page links to the next, with the list's filter.
	var got []string
	next := "/v1/volume/connectors?node=vol-off&limit=1"
	for range 5 {
		rec := e.do("GET", next, "", latest)
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", next, rec.Code, rec.Body.String())
		}
		m := decode(t, rec)
		got = append(got, uuids(t, m, "connectors")...)
		link, ok := m["next"].(string)
		if !ok {
			break
		}
		if want := "http://" + testHost + "/v1/volume/connectors?sort_key=id&sort_dir=asc&node=vol-off&fields=uuid,node_uuid,type,connector_id&limit=1&marker="; !strings.HasPrefix(link, want) {
			t.Fatalf("next %q, want prefix %q", link, want)
		}
		u, _ := url.Parse(link)
		next = u.RequestURI()
	}
	if !slices.Equal(got, []string{conns[0], conns[2]}) {
		t.Errorf("paged %v, want %v", got, []string{conns[0], conns[2]})
	}
}

// TestVolumesGoWithTheirNode: Ironic destroys a node's connectors and
// targets with it.
func TestVolumesGoWithTheirNode(t *testing.T) {
	e := newEnv(t)
	off, _, _ := volumeNodes(e)
	c := mustCreateVolume(t, e, "connectors", `{"node_uuid": "`+off.UUID+`", "type": "iqn", "connector_id": "iqn.x"}`)["uuid"].(string)
	tg := mustCreateVolume(t, e, "targets", `{"node_uuid": "`+off.UUID+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v"}`)["uuid"].(string)
	if rec := e.do("DELETE", "/v1/nodes/"+off.UUID, "", latest); rec.Code != 204 {
		t.Fatalf("delete node: %d %s", rec.Code, rec.Body.String())
	}
	for _, path := range []string{"/v1/volume/connectors/" + c, "/v1/volume/targets/" + tg} {
		if rec := e.do("GET", path, "", latest); rec.Code != 404 {
			t.Errorf("GET %s after the node's deletion: %d", path, rec.Code)
		}
	}
}

// TestGoldenVolumeShapes compares the documents with Ironic's API
// reference samples.
func TestGoldenVolumeShapes(t *testing.T) {
	e := newEnv(t)
	off, _, _ := volumeNodes(e)
	c := mustCreateVolume(t, e, "connectors", `{"node_uuid": "`+off.UUID+`", "type": "iqn", "connector_id": "iqn.2017-07.org.openstack:01:d9a51732c3f"}`)["uuid"].(string)
	tg := mustCreateVolume(t, e, "targets", `{"node_uuid": "`+off.UUID+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "04452bed-5367-4202-8bf5-de4335ac56d2"}`)["uuid"].(string)
	for _, tc := range []struct{ sample, method, path, body string }{
		{"volume-list-response.json", "GET", "/v1/volume", ""},
		{"node-volume-list-response.json", "GET", "/v1/nodes/" + off.UUID + "/volume", ""},
		{"volume-connector-create-response.json", "POST", "/v1/volume/connectors", `{"node_uuid": "` + off.UUID + `", "type": "ip", "connector_id": "192.168.1.10"}`},
		{"volume-connector-list-response.json", "GET", "/v1/volume/connectors", ""},
		{"volume-connector-list-detail-response.json", "GET", "/v1/volume/connectors?detail=True", ""},
		{"node-volume-connector-list-response.json", "GET", "/v1/nodes/" + off.UUID + "/volume/connectors", ""},
		{"node-volume-connector-detail-response.json", "GET", "/v1/nodes/" + off.UUID + "/volume/connectors?detail=True", ""},
		{"volume-connector-update-response.json", "PATCH", "/v1/volume/connectors/" + c, `[{"op": "replace", "path": "/connector_id", "value": "iqn.2017-07.org.openstack:02:10190a4153e"}]`},
		{"volume-target-create-response.json", "POST", "/v1/volume/targets", `{"node_uuid": "` + off.UUID + `", "volume_type": "iscsi", "boot_index": 1, "volume_id": "v2"}`},
		{"volume-target-list-response.json", "GET", "/v1/volume/targets", ""},
		{"volume-target-list-detail-response.json", "GET", "/v1/volume/targets?detail=True", ""},
		{"node-volume-target-list-response.json", "GET", "/v1/nodes/" + off.UUID + "/volume/targets", ""},
		{"node-volume-target-detail-response.json", "GET", "/v1/nodes/" + off.UUID + "/volume/targets?detail=True", ""},
		{"volume-target-update-response.json", "PATCH", "/v1/volume/targets/" + tg, `[{"op": "replace", "path": "/volume_id", "value": "v3"}]`},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, latest)
			if rec.Code >= 300 {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body.String())
			}
			compareShape(t, tc.sample, loadSample(t, tc.sample), decode(t, rec), shapeRules{})
		})
	}
}
