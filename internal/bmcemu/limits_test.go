package bmcemu_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// login opens a Redfish session on base and returns the reply (token in
// X-Auth-Token, session in Location).
func login(t *testing.T, base string) reply {
	t.Helper()
	return do(t, "POST", base+"/redfish/v1/SessionService/Sessions", "", "",
		fmt.Sprintf(`{"UserName": "admin", "Password": %q}`, pw))
}

func withToken(t *testing.T, method, url, tok string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return reply{status: resp.StatusCode, header: resp.Header}
}

// With BMCPorts every machine is a BMC of its own: its port shows its system
// only, and its sessions are its own.
func TestBMCPortsAreSeparateBMCs(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 2, BMCPorts: true})
	ms := e.Machines()
	a, b := e.RedfishURL(ms[0]), e.RedfishURL(ms[1])
	if a == b || a == e.URL() {
		t.Fatalf("machines share a BMC address: %s %s (shared %s)", a, b, e.URL())
	}
	list := do(t, "GET", a+"/redfish/v1/Systems", "admin", pw, "")
	if list.status != 200 || !strings.Contains(list.body, ms[0].ID) || strings.Contains(list.body, ms[1].ID) {
		t.Fatalf("systems on %s's port: %d %s", ms[0].ID, list.status, list.body)
	}
	if r := do(t, "GET", a+"/redfish/v1/Systems/"+ms[1].ID, "admin", pw, ""); r.status != 404 {
		t.Fatalf("another machine's system through this BMC: %d", r.status)
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/"+ms[1].ID, "admin", pw, ""); r.status != 200 {
		t.Fatalf("the shared address stops serving: %d", r.status)
	}
	s := login(t, a)
	if s.status != 201 {
		t.Fatalf("login: %d %s", s.status, s.body)
	}
	tok := s.header.Get("X-Auth-Token")
	if r := withToken(t, "GET", b+"/redfish/v1/Systems/"+ms[1].ID, tok); r.status != 401 {
		t.Fatalf("one BMC's session on another BMC: %d", r.status)
	}
	if st := e.SessionStats(ms[0].ID); st.Opened != 1 || st.Open != 1 {
		t.Fatalf("%s's counters: %+v", ms[0].ID, st)
	}
	if st := e.SessionStats(ms[1].ID); st.Opened != 0 {
		t.Fatalf("%s's counters: %+v", ms[1].ID, st)
	}
	nf, err := e.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		t.Fatal(err)
	}
	if got := nf.Nodes[1].DriverInfo["redfish_address"]; got != b {
		t.Fatalf("nodes file address of %s: %v, want %s", ms[1].ID, got, b)
	}
}

// MaxSessions: one login too many is refused as iDRAC refuses it (RAC0218);
// a logout frees a place; the counters say so.
func TestMaxSessions(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1, BMCPorts: true, Knobs: bmcemu.Knobs{MaxSessions: 2}})
	m := e.Machines()[0]
	base := e.RedfishURL(m)
	first, second := login(t, base), login(t, base)
	if first.status != 201 || second.status != 201 {
		t.Fatalf("logins: %d %d", first.status, second.status)
	}
	third := login(t, base)
	if third.status != 400 || !strings.Contains(third.body, "RAC0218") {
		t.Fatalf("login over the limit: %d %s", third.status, third.body)
	}
	if r := withToken(t, "DELETE", base+first.header.Get("Location"), first.header.Get("X-Auth-Token")); r.status != 204 {
		t.Fatalf("logout: %d", r.status)
	}
	if r := login(t, base); r.status != 201 {
		t.Fatalf("login after a logout: %d %s", r.status, r.body)
	}
	st := e.SessionStats(m.ID)
	want := bmcemu.SessionStats{Opened: 3, Open: 2, MaxOpen: 2, Refused: 1}
	if st != want {
		t.Fatalf("counters %+v, want %+v", st, want)
	}
	if s := m.Status().BMC; s == nil || *s != want {
		t.Fatalf("status shows %+v", s)
	}
	if f := e.FleetSessionStats(); f.Opened != 3 || f.MaxOpen != 2 {
		t.Fatalf("fleet counters %+v", f)
	}
}

// An idle session ends after SessionTimeout: its token is answered 401.
func TestSessionTimeout(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1, Knobs: bmcemu.Knobs{SessionTimeout: 50 * time.Millisecond}})
	s := login(t, e.URL())
	tok := s.header.Get("X-Auth-Token")
	sys := e.URL() + "/redfish/v1/Systems/" + e.Machines()[0].ID
	if r := withToken(t, "GET", sys, tok); r.status != 200 {
		t.Fatalf("fresh session: %d", r.status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for withToken(t, "GET", sys, tok).status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the idle session never expired")
		}
		time.Sleep(60 * time.Millisecond) // idle longer than the timeout
	}
	if st := e.SessionStats(""); st.Expired != 1 || st.Open != 0 {
		t.Fatalf("counters %+v", st)
	}
}

// RateLimit: calls beyond the rate are answered 503 with Retry-After.
func TestRateLimit(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1, BMCPorts: true, Knobs: bmcemu.Knobs{RateLimit: 0.5}})
	m := e.Machines()[0]
	sys := e.RedfishURL(m) + "/redfish/v1/Systems/" + m.ID
	if r := do(t, "GET", sys, "admin", pw, ""); r.status != 200 {
		t.Fatalf("first call: %d", r.status)
	}
	r := do(t, "GET", sys, "admin", pw, "")
	if r.status != 503 || r.header.Get("Retry-After") != "2" {
		t.Fatalf("call over the rate: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	if st := e.SessionStats(m.ID); st.RateLimited != 1 {
		t.Fatalf("counters %+v", st)
	}
}

// The knobs are settable through the control endpoint, and bad values are
// refused with the knob's name.
func TestLimitKnobsOverHTTP(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	r := do(t, "PATCH", e.URL()+"/emulator/machines", "", "",
		`{"max_sessions": 2, "session_timeout": "30s", "rate_limit": 20, "latency": "1s", "latency_jitter": "2s"}`)
	if r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	k := e.Machines()[0].Knobs()
	if k.MaxSessions != 2 || k.SessionTimeout != 30*time.Second || k.RateLimit != 20 || k.LatencyJitter != 2*time.Second {
		t.Fatalf("knobs %+v", k)
	}
	for _, bad := range []string{`{"max_sessions": -1}`, `{"rate_limit": -2}`, `{"latency_jitter": "soon"}`, `{"session_timeout": "-1s"}`} {
		if r := do(t, "PATCH", e.URL()+"/emulator/machines", "", "", bad); r.status != 400 {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
	}
}
