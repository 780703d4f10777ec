package api

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/noop"
	"github.com/anvil-metal/anvil/internal/model"
)

// noopEnv is newEnv with the no-op interfaces registered too.
func noopEnv(t *testing.T) *env {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 12, 2, 12, 16, 3, 0, time.UTC)}
	st, fc := newTestBackendWith(t, "anvil-test", clock.Now, func(r *driver.Registry) { noop.Register(r) })
	return &env{t: t, h: New(Wire(Config{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, fc)),
		st: st, cond: fc, clock: clock}
}

// expect checks a response's status and, for errors, that the faultstring
// contains msg (for successes, that the body does).
func expect(t *testing.T, e *env, method, path, body, version string, status int, msg string) {
	t.Helper()
	rec := e.do(method, path, body, version)
	got := rec.Body.String()
	if rec.Code >= 400 {
		_, got = faultOf(t, rec)
	}
	if rec.Code != status || !strings.Contains(got, msg) {
		t.Errorf("%s %s: %d %s, want %d %q", method, path, rec.Code, got, status, msg)
	}
}

func TestConsoleState(t *testing.T) {
	e := noopEnv(t)
	e.createNode(`{"name":"c1","driver":"fake-hardware"}`)
	e.createNode(`{"name":"c2","driver":"fake-hardware","console_interface":"no-console"}`)
	expect(t, e, "GET", "/v1/nodes/c1/states/console", "", latest, 200, `{"console_enabled": false, "console_info": null}`)
	rec := e.do("PUT", "/v1/nodes/c1/states/console", `{"enabled": true}`, latest)
	if rec.Code != 202 || !strings.HasSuffix(rec.Header().Get("Location"), "/v1/nodes/c1/states/console") {
		t.Fatalf("enable: %d %v", rec.Code, rec.Header())
	}
	expect(t, e, "GET", "/v1/nodes/c1/states/console", "", latest, 200, `{"console_enabled": true, "console_info": {}}`)
	expect(t, e, "GET", "/v1/nodes/c1/states", "", latest, 200, `"console_enabled": true`)
	expect(t, e, "PUT", "/v1/nodes/c1/states/console", `{}`, latest, 400, "Missing mandatory parameter: enabled")
	expect(t, e, "PUT", "/v1/nodes/c1/states/console", `{"enabled":"maybe"}`, latest, 400, "enabled")
	expect(t, e, "GET", "/v1/nodes/c2/states/console", "", latest, 400, "Driver fake-hardware does not support console (disabled or not implemented).")
	expect(t, e, "PUT", "/v1/nodes/c2/states/console", `{"enabled": true}`, latest, 400, "does not support console")
}

func TestVolumeLinks(t *testing.T) {
	e := newEnv(t)
	n := e.createNode(`{"name":"v1","driver":"fake-hardware"}`)
	expect(t, e, "GET", "/v1/volume", "", latest, 200, `{"links": [{"href": "http://`+testHost+`/v1/volume/", "rel": "self"}, {"href": "http://`+testHost+`/volume/", "rel": "bookmark"}], "connectors": [{"href": "http://`+testHost+`/v1/volume/connectors", "rel": "self"}`)
	expect(t, e, "GET", "/v1/volume/connectors", "", latest, 200, `{"connectors": []}`)
	expect(t, e, "GET", "/v1/volume/targets", "", latest, 200, `{"targets": []}`)
	expect(t, e, "GET", "/v1/volume/targets/x1", "", latest, 400, "Expected UUID for target_uuid: x1")
	expect(t, e, "GET", "/v1/volume/connectors/x1", "", latest, 400, "Expected UUID for connector_uuid: x1")
	const unknown = "11111111-2222-4333-8444-555555555555"
	expect(t, e, "GET", "/v1/volume/targets/"+unknown, "", latest, 404, "Volume target "+unknown+" could not be found.")
	expect(t, e, "GET", "/v1/volume/connectors/"+unknown, "", latest, 404, "Volume connector "+unknown+" could not be found.")
	expect(t, e, "GET", "/v1/volume", "", at(31), 404, "")
	// the node document's volume link leads somewhere
	links, _ := n["volume"].([]any)
	if len(links) == 0 {
		t.Fatalf("node has no volume link: %v", n)
	}
	href := links[0].(map[string]any)["href"].(string)
	path := strings.TrimPrefix(href, "http://"+testHost)
	expect(t, e, "GET", path, "", latest, 200, `/v1/nodes/`+n["uuid"].(string)+`/volume/targets", "rel": "self"}`)
	expect(t, e, "GET", path+"/targets", "", latest, 200, `{"targets": []}`)
	expect(t, e, "GET", "/v1/nodes/nope/volume/connectors", "", latest, 404, "Node nope could not be found.")
}

func TestShardsAndChildren(t *testing.T) {
	e := newEnv(t)
	p := e.mustNode(&model.Node{Name: "parent", Shard: "s1"})
	e.mustNode(&model.Node{Name: "kid1", Shard: "s1", ParentNode: p.UUID})
	e.mustNode(&model.Node{Name: "kid2", Shard: "s2", ParentNode: p.UUID})
	e.mustNode(&model.Node{Name: "alone"})
	expect(t, e, "GET", "/v1/shards", "", latest, 200,
		`{"shards": [{"name": "s1", "count": 2}, {"name": "None", "count": 1}, {"name": "s2", "count": 1}]}`)
	expect(t, e, "GET", "/v1/shards", "", at(81), 404, "")
	rec := e.do("GET", "/v1/nodes/parent/children", "", latest)
	body := rec.Body.String()
	kids, _ := decode(t, rec)["children"].([]any)
	if rec.Code != 200 || len(kids) != 2 || kids[0] == p.UUID || kids[1] == p.UUID || !strings.Contains(body, `"links": {"href": "http://`+testHost+`/v1/nodes?parent_node=`+p.UUID+`", "rel": "children"}`) {
		t.Errorf("children: %d %s", rec.Code, body)
	}
	expect(t, e, "GET", "/v1/nodes/alone/children", "", latest, 200, `"children": []`)
	expect(t, e, "GET", "/v1/nodes/parent/children", "", at(82), 404, "")
}

func TestNetworkEvents(t *testing.T) {
	e := newEnv(t)
	good := `{"events": [{"event": "network.bind_port", "port_id": "11111111-2222-3333-4444-555555555555",
		"mac_address": "52:54:00:12:34:56", "status": "ACTIVE", "device_id": null}]}`
	expect(t, e, "POST", "/v1/events", good, latest, 204, "")
	expect(t, e, "POST", "/v1/events", good, at(53), 404, "")
	for _, tt := range []struct{ body, msg string }{
		{`{}`, "Schema error for evts: 'events' is a required property"},
		{`{"events": []}`, "Schema error for evts: [] is too short"},
		{`{"events": [{"event": "compute.boom"}]}`, "'compute.boom' is not one of ['network.bind_port', 'network.unbind_port', 'network.delete_port']"},
		{`{"events": [{"event": "network.bind_port", "port_id": "x", "mac_address": "52:54:00:12:34:56"}]}`, "'status' is a required property"},
		{`{"events": [{"event": "network.bind_port", "port_id": "x", "mac_address": "52:54:00:12:34:56", "status": "a"}]}`, "Expected UUID for port_id: x"},
		{`{"events": [{"event": "network.bind_port", "port_id": "11111111-2222-3333-4444-555555555555", "mac_address": "nope", "status": "a"}]}`, "Expected valid MAC address for mac_address: nope"},
		{`{"events": [], "more": 1}`, "Additional properties are not allowed ('more' was unexpected)"},
	} {
		expect(t, e, "POST", "/v1/events", tt.body, latest, 400, tt.msg)
	}
}

func TestBootModeChange(t *testing.T) {
	e := newEnv(t)
	e.createNode(`{"name":"b1","driver":"fake-hardware"}`)
	expect(t, e, "PUT", "/v1/nodes/b1/states/boot_mode", `{"target":"uefi"}`, at(75), 404, "This endpoint is supported starting with the API version 1.76")
	expect(t, e, "PUT", "/v1/nodes/b1/states/boot_mode", `{"target":"efi"}`, latest, 400, "Invalid boot mode efi requested for node. Allowed boot modes are: bios, uefi")
	expect(t, e, "PUT", "/v1/nodes/b1/states/boot_mode", `{}`, latest, 400, "Missing mandatory parameter: target")
	expect(t, e, "PUT", "/v1/nodes/b1/states/secure_boot", `{"target":"x"}`, latest, 400, "target")
	// fake management has no boot mode (as Ironic's): the worker says so.
	expect(t, e, "PUT", "/v1/nodes/b1/states/boot_mode", `{"target":"uefi"}`, latest, 202, "")
	e.cond.WaitIdle()
	expect(t, e, "GET", "/v1/nodes/b1", "", latest, 200,
		`"last_error": "Failed to change boot mode to 'uefi: Driver fake-hardware does not support set_boot_mode (disabled or not implemented)."`)
	expect(t, e, "PUT", "/v1/nodes/b1/states/secure_boot", `{"target":true}`, latest, 202, "")
	e.cond.WaitIdle()
	expect(t, e, "GET", "/v1/nodes/b1", "", latest, 200,
		`"last_error": "Failed to change secure_boot state to 'True': Driver fake-hardware does not support set_secure_boot_state (disabled or not implemented)."`)
}

func TestIndicators(t *testing.T) {
	e := newEnv(t)
	e.createNode(`{"name":"i1","driver":"fake-hardware"}`)
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators", "", latest, 200,
		`{"indicators": [{"name": "led-0@chassis", "component": "chassis", "readonly": true, "states": ["off", "on"], "links": [{"href": "http://`+testHost+`/v1/nodes/i1/management/indicators/led-0@chassis", "rel": "self"}`)
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators", "", latest, 200, `{"name": "led@system", "component": "system", "readonly": false, "states": ["blinking", "off", "on"]`)
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators/led@system", "", latest, 200, `{"state": "on"}`)
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators/led@disk", "", latest, 400, "Invalid component disk specified.")
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators/fan@system", "", latest, 400, "Invalid indicator fan specified.")
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators/led", "", latest, 400, `Malformed indicator name "led"`)
	expect(t, e, "PUT", "/v1/nodes/i1/management/indicators/led@system", `{"state":"off"}`, latest, 400,
		"Driver fake-hardware does not support set_indicator_state (disabled or not implemented).")
	expect(t, e, "PUT", "/v1/nodes/i1/management/indicators/led@system", `{}`, latest, 400, "Missing mandatory parameter: state")
	expect(t, e, "GET", "/v1/nodes/i1/management/indicators", "", at(62), 404, "")
}
