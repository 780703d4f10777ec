package redfish_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// portNode is a node of machine m on its own BMC port.
func portNode(e *bmcemu.Emulator, m *bmcemu.Machine, password string) *model.Node {
	return &model.Node{UUID: m.UUID, Driver: "redfish", DriverInfo: model.JSON{
		"redfish_address": e.RedfishURL(m), "redfish_system_id": "/redfish/v1/Systems/" + m.ID,
		"redfish_username": "admin", "redfish_password": password, "redfish_auth_type": "session",
	}}
}

// Every operation on a BMC shares one session, however many run at once;
// an expired session is renewed once; Logout ends them all.
func TestOneSessionPerBMC(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 3, BMCPorts: true,
		Knobs: bmcemu.Knobs{MaxSessions: 1, Latency: 5 * time.Millisecond}})
	d := fastDriver()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for _, m := range e.Machines() {
		n := portNode(e, m, testPassword)
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := d.PowerState(ctx, &driver.Task{Node: n}); err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, m := range e.Machines() {
		if st := e.SessionStats(m.ID); st.Opened != 1 || st.MaxOpen != 1 || st.Refused != 0 {
			t.Fatalf("%s: %+v, want one session", m.ID, st)
		}
	}
	if got := d.Logout(ctx); got != 3 {
		t.Fatalf("logged out of %d sessions, want 3", got)
	}
	for _, m := range e.Machines() {
		if st := e.SessionStats(m.ID); st.Open != 0 {
			t.Fatalf("%s keeps %d sessions after Logout", m.ID, st.Open)
		}
	}
	// work that outlives the shutdown opens no new session
	m := e.Machines()[0]
	if _, err := d.PowerState(ctx, &driver.Task{Node: portNode(e, m, testPassword)}); err == nil {
		t.Fatal("a session-auth call after Logout succeeded")
	}
	if st := e.SessionStats(m.ID); st.Opened != 1 {
		t.Fatalf("a session was opened after Logout: %+v", st)
	}
}

// Logout from BMCs that are gone (their addresses refuse connections, as
// when a shutdown outlives the fleet) asks each once: a refused
// connection is not retried, so a thousand dead BMCs do not hold a
// shutdown for their retry waits.
func TestLogoutAsksAGoneBMCOnce(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 3, BMCPorts: true})
	var waits atomic.Int32
	d := redfish.New(redfish.Config{Attempts: 3, RetryInterval: 20 * time.Millisecond, Timeout: 5 * time.Second,
		Sleep: func(ctx context.Context, _ time.Duration) error { waits.Add(1); return ctx.Err() }})
	ctx := context.Background()
	for _, m := range e.Machines() {
		if _, err := d.PowerState(ctx, &driver.Task{Node: portNode(e, m, testPassword)}); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	waits.Store(0)
	if got := d.Logout(ctx); got != 3 {
		t.Fatalf("logged out of %d sessions, want 3", got)
	}
	if n := waits.Load(); n != 0 {
		t.Fatalf("Logout waited to retry %d times on BMCs that refuse connections, want 0", n)
	}
}

// A busy BMC's logout gets the retries of any call, past the few seconds
// three 503s with Retry-After: 1 take (a 3 s bound left a session of a
// 1,000-BMC fleet open now and then).
func TestLogoutRetriesABusyBMC(t *testing.T) {
	var deletes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/redfish/v1/SessionService/Sessions":
			w.Header().Set("X-Auth-Token", "tok-1")
			w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
			w.WriteHeader(http.StatusCreated)
		case r.Method == http.MethodDelete:
			if deletes.Add(1) <= 3 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/redfish/v1/":
			w.Write([]byte(`{"Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}}}`))
		default:
			w.Write([]byte(`{"@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "On"}`))
		}
	}))
	defer srv.Close()
	d := redfish.New(redfish.Config{Attempts: 5, RetryInterval: 20 * time.Millisecond, Timeout: 5 * time.Second})
	n := &model.Node{UUID: "u", Driver: "redfish", DriverInfo: model.JSON{"redfish_address": srv.URL,
		"redfish_system_id": "/redfish/v1/Systems/1", "redfish_username": "admin", "redfish_password": "pw-x", "redfish_auth_type": "session"}}
	if _, err := d.PowerState(context.Background(), &driver.Task{Node: n}); err != nil {
		t.Fatal(err)
	}
	if got := d.Logout(context.Background()); got != 1 {
		t.Fatalf("logged out of %d sessions, want 1", got)
	}
	if n := deletes.Load(); n != 4 {
		t.Fatalf("the BMC saw %d DELETEs, want 4 (three 503s, then the logout)", n)
	}
}

// A session the BMC expired is replaced by one new login, and the call
// that found it expired succeeds.
func TestExpiredSessionRenewedOnce(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1, BMCPorts: true, Knobs: bmcemu.Knobs{SessionTimeout: 30 * time.Millisecond}})
	m := e.Machines()[0]
	d := fastDriver()
	n := portNode(e, m, testPassword)
	ctx := context.Background()
	if _, err := d.PowerState(ctx, &driver.Task{Node: n}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.SessionStats(m.ID).Open != 0 { // the listing expires idle sessions
		if time.Now().After(deadline) {
			t.Fatal("the session never expired")
		}
		time.Sleep(40 * time.Millisecond) // idle longer than the timeout
		probeSessions(t, e, m)
	}
	if _, err := d.PowerState(ctx, &driver.Task{Node: n}); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if st := e.SessionStats(m.ID); st.Opened != 2 || st.Open != 1 {
		t.Fatalf("counters %+v, want a second session", st)
	}
}

// probeSessions lists the BMC's sessions (which expires idle ones) with
// basic auth.
func probeSessions(t *testing.T, e *bmcemu.Emulator, m *bmcemu.Machine) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.RedfishURL(m)+"/redfish/v1/SessionService/Sessions", nil)
	req.SetBasicAuth("admin", testPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// A busy BMC's 503 or 429 is retried after its Retry-After, or with a
// doubling back-off capped at MaxRetryWait when it names none.
func TestBusyBMCBackOff(t *testing.T) {
	var answers atomic.Int32
	plan := []struct {
		status int
		after  string
	}{{503, "3"}, {429, ""}, {503, ""}, {503, "120"}, {200, ""}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redfish/v1/" {
			w.Write([]byte(`{}`))
			return
		}
		i := int(answers.Add(1)) - 1
		if i >= len(plan) {
			i = len(plan) - 1
		}
		p := plan[i]
		if p.after != "" {
			w.Header().Set("Retry-After", p.after)
		}
		w.WriteHeader(p.status)
		if p.status == 200 {
			w.Write([]byte(`{"@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "On"}`))
		}
	}))
	defer srv.Close()
	var waits []time.Duration
	d := redfish.New(redfish.Config{Attempts: 5, RetryInterval: time.Second, MaxRetryWait: 10 * time.Second,
		Sleep: func(_ context.Context, dur time.Duration) error { waits = append(waits, dur); return nil }})
	n := &model.Node{UUID: "u", Driver: "redfish", DriverInfo: model.JSON{"redfish_address": srv.URL,
		"redfish_system_id": "/redfish/v1/Systems/1", "redfish_username": "admin", "redfish_password": "pw-x", "redfish_auth_type": "basic"}}
	if _, err := d.PowerState(context.Background(), &driver.Task{Node: n}); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{3 * time.Second, 2 * time.Second, 4 * time.Second, 10 * time.Second}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
}

// At most MaxCallsPerBMC calls are in flight to one BMC address.
func TestCallsPerBMCBounded(t *testing.T) {
	var inFlight, most, served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := inFlight.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond) // a BMC taking its time
		inFlight.Add(-1)
		served.Add(1)
		w.Write([]byte(`{"@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "Off"}`))
	}))
	defer srv.Close()
	d := redfish.New(redfish.Config{MaxCallsPerBMC: 2})
	n := &model.Node{UUID: "u", Driver: "redfish", DriverInfo: model.JSON{"redfish_address": srv.URL,
		"redfish_system_id": "/redfish/v1/Systems/1", "redfish_username": "admin", "redfish_password": "pw-x", "redfish_auth_type": "basic"}}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.PowerState(context.Background(), &driver.Task{Node: n}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most.Load() > 2 || served.Load() < 20 {
		t.Fatalf("%d calls served, at most %d at once; want at most 2", served.Load(), most.Load())
	}
}
