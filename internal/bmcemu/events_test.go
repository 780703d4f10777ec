package bmcemu_test

import (
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// TestEventService: subscriptions are created (checked as a BMC checks
// them), listed, read without their HttpHeaders and deleted.
func TestEventService(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	subs := e.URL() + "/redfish/v1/EventService/Subscriptions"
	if r := do(t, "GET", e.URL()+"/redfish/v1/", "", "", ""); !strings.Contains(r.body, `"/redfish/v1/EventService"`) {
		t.Fatalf("service root links no EventService: %s", r.body)
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/EventService", "", "", ""); r.status != 401 {
		t.Errorf("EventService without credentials: %+v", r)
	}
	svc := do(t, "GET", e.URL()+"/redfish/v1/EventService", "admin", pw, "")
	if svc.status != 200 || !strings.Contains(svc.body, `"EventTypesForSubscription"`) || !strings.Contains(svc.body, subs[len(e.URL()):]) {
		t.Fatalf("EventService: %+v", svc)
	}
	for _, bad := range []string{`{}`, `{"Destination":"ftp://x/y"}`, `{"Destination":"http://x/y","Protocol":"SNMPv2c"}`,
		`{"Destination":"http://x/y","EventTypes":["Nope"]}`, `not json`} {
		if r := do(t, "POST", subs, "admin", pw, bad); r.status != 400 {
			t.Errorf("POST %s: %+v", bad, r)
		}
	}
	r := do(t, "POST", subs, "admin", pw, `{"Destination":"https://hook.example/e","Context":"c1","HttpHeaders":[{"X-Token":"tok-123"}]}`)
	if r.status != 201 || strings.Contains(r.body, "tok-123") || !strings.Contains(r.body, `"EventTypes": ["Alert"]`) && !strings.Contains(r.body, `"EventTypes":["Alert"]`) {
		t.Fatalf("create: %+v", r)
	}
	list := e.Subscriptions()
	if len(list) != 1 || list[0].HTTPHeaders[0]["X-Token"] != "tok-123" || list[0].Context != "c1" {
		t.Fatalf("subscriptions = %+v", list)
	}
	one := subs + "/" + list[0].ID
	if r := do(t, "GET", one, "admin", pw, ""); r.status != 200 || strings.Contains(r.body, "tok-123") || !strings.Contains(r.body, "https://hook.example/e") {
		t.Errorf("get: %+v", r)
	}
	if r := do(t, "GET", subs, "admin", pw, ""); !strings.Contains(r.body, one[len(e.URL()):]) {
		t.Errorf("collection: %+v", r)
	}
	if r := do(t, "PATCH", one, "admin", pw, "{}"); r.status != 405 {
		t.Errorf("patch: %+v", r)
	}
	if r := do(t, "DELETE", one, "admin", pw, ""); r.status != 204 {
		t.Errorf("delete: %+v", r)
	}
	if r := do(t, "DELETE", one, "admin", pw, ""); r.status != 404 {
		t.Errorf("second delete: %+v", r)
	}
	if len(e.Subscriptions()) != 0 {
		t.Errorf("left %+v", e.Subscriptions())
	}
}

// TestHealthKnobAndNMI: the control endpoint sets Status.Health (and
// refuses other values); ComputerSystem.Reset Nmi is counted.
func TestHealthKnobAndNMI(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	m := e.Machines()[0]
	ctl := e.URL() + "/emulator/machines/" + m.ID
	if r := do(t, "PATCH", ctl, "", "", `{"health":"Broken"}`); r.status != 400 {
		t.Errorf("bad health: %+v", r)
	}
	if r := do(t, "PATCH", ctl, "", "", `{"health":"Warning"}`); r.status != 200 || !strings.Contains(r.body, `"health":"Warning"`) {
		t.Fatalf("set health: %+v", r)
	}
	sys := e.URL() + "/redfish/v1/Systems/" + m.ID
	if r := do(t, "GET", sys, "admin", pw, ""); !strings.Contains(r.body, `"Health":"Warning"`) {
		t.Errorf("system: %s", r.body)
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"Nmi"}`); r.status != 204 {
		t.Fatalf("Nmi: %+v", r)
	}
	if n := m.Status().NMIs; n != 1 {
		t.Errorf("NMIs = %d", n)
	}
}
