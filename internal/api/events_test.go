package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/records"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/pkg/events"
)

// streamTimeout bounds every wait of the stream tests; nothing waits for it
// to pass.
const streamTimeout = 20 * time.Second

// allTypes asks a stream for every node event, history included.
var allTypes = []string{events.TypeCreated, events.TypeUpdated, events.TypeDeleted, events.TypeHistory}

// streamEnv is the real API over the real SQLite store and a real conductor
// with the fake driver, the store publishing on a broker, behind an
// httptest server that counts requests by path.
type streamEnv struct {
	*env
	t        *testing.T
	srv      *httptest.Server
	b        *eventbus.Broker
	cond     *conductor.Conductor
	requests atomic.Int64 // requests other than streams
}

func newStreamEnv(t *testing.T, bcfg eventbus.Config, opts ...func(*Config)) *streamEnv {
	t.Helper()
	ctx := context.Background()
	raw, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	b := eventbus.NewBroker(bcfg)
	st := eventbus.Store(raw, b)
	reg := driver.NewRegistry()
	fake.New().Register(reg)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	cond, err := conductor.New(conductor.Config{Store: st, Drivers: reg, Host: "test-conductor",
		AutomatedClean: true, Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := cond.Start(cctx); err != nil {
		t.Fatal(err)
	}
	cfg := Wire(Config{Logger: discard}, st, cond, cond.Nodes(), cond.Allocations(), cond.Agents(), cond.Management(), cond.NodeRecords(), cond.Hardware(),
		records.New(st, nil, discard))
	for _, o := range opts {
		o(&cfg)
	}
	h := New(cfg)
	se := &streamEnv{env: &env{t: t, h: h, st: st}, t: t, b: b, cond: cond}
	se.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, events.StreamPath) {
			se.requests.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(se.srv.Close)
	t.Cleanup(b.Close) // runs first: open streams end, so the server can close
	return se
}

// provision sends a verb through the API and waits for the conductor.
func (e *streamEnv) provision(node, target string) {
	e.t.Helper()
	rec := e.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target": "`+target+`"}`, latest)
	if rec.Code != http.StatusAccepted {
		e.t.Fatalf("%s: %d %s", target, rec.Code, rec.Body.String())
	}
	e.cond.WaitIdle()
}

// sseMsg is one server-sent message; a heartbeat has event "heartbeat".
type sseMsg struct {
	id, event string
	data      []byte
}

// sseConn is an open stream whose messages a goroutine reads into msgs.
type sseConn struct {
	t      *testing.T
	resp   *http.Response
	msgs   chan sseMsg
	cancel context.CancelFunc
	cursor string // the last id line seen
}

// open starts a stream request; header is an optional Last-Event-ID.
func (e *streamEnv) open(query, lastEventID string) *sseConn {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+events.StreamPath+"?"+query, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		cancel()
		e.t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	c := &sseConn{t: e.t, resp: resp, msgs: make(chan sseMsg, 1024), cancel: cancel}
	go c.read()
	e.t.Cleanup(c.close)
	return c
}

func (c *sseConn) read() {
	defer close(c.msgs)
	sc := bufio.NewScanner(c.resp.Body)
	sc.Buffer(nil, 1<<20)
	var m sseMsg
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if m.event == "" && m.data == nil {
				m.event = "heartbeat"
			}
			c.msgs <- m
			m = sseMsg{}
		case strings.HasPrefix(line, ":") || strings.HasPrefix(line, "retry:"):
		case strings.HasPrefix(line, "id: "):
			m.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			m.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			m.data = []byte(strings.TrimPrefix(line, "data: "))
		}
	}
}

func (c *sseConn) close() {
	c.cancel()
	c.resp.Body.Close()
}

// next returns the next message, heartbeats included.
func (c *sseConn) next() sseMsg {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("stream ended")
		}
		if m.id != "" {
			c.cursor = m.id
		}
		return m
	case <-time.After(streamTimeout):
		c.t.Fatal("no message from the stream")
	}
	return sseMsg{}
}

// event returns the next event, skipping heartbeats.
func (c *sseConn) event() events.Event {
	c.t.Helper()
	for {
		m := c.next()
		if m.event == "heartbeat" {
			continue
		}
		var e events.Event
		if err := json.Unmarshal(m.data, &e); err != nil {
			c.t.Fatalf("bad event %s: %v", m.data, err)
		}
		if m.id != idString(e.ID) || m.event != e.Type {
			c.t.Fatalf("id/event lines %q %q disagree with %s", m.id, m.event, m.data)
		}
		return e
	}
}

// quiet reads up to the next heartbeat and fails on any event before it:
// the server writes everything queued before a heartbeat.
func (c *sseConn) quiet() {
	c.t.Helper()
	for {
		m := c.next()
		if m.event == "heartbeat" {
			return
		}
		c.t.Fatalf("unexpected event %s %s", m.event, m.data)
	}
}

func idString(id uint64) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// take drains a recorder subscription.
func take(s *eventbus.Subscription) []events.Event {
	evs, _, _ := s.Take(nil)
	return evs
}

// sameEvents compares events through their JSON encoding.
func sameEvents(t *testing.T, what string, got, want []events.Event) {
	t.Helper()
	enc := func(evs []events.Event) []string {
		out := make([]string, len(evs))
		for i, e := range evs {
			b, _ := json.Marshal(e)
			out[i] = string(b)
		}
		return out
	}
	g, w := enc(got), enc(want)
	if !slices.Equal(g, w) {
		t.Fatalf("%s:\n got  %d events %s\n want %d events %s", what, len(g), strings.Join(g, "\n      "),
			len(w), strings.Join(w, "\n      "))
	}
}

// TestEventStreamLifecycle follows a node through manage, provide and
// deploy: the stream carries every change and history entry in order;
// after a disconnect, resuming with Last-Event-ID yields exactly the events
// missed.
func TestEventStreamLifecycle(t *testing.T) {
	e := newStreamEnv(t, eventbus.Config{Heartbeat: 20 * time.Millisecond})
	node := e.createNode(`{"driver": "fake-hardware", "name": "web1"}`)
	uuid := node["uuid"].(string)
	// The recorder sees what the broker published for this node: the truth.
	truth := e.b.Subscribe(events.Filter{Nodes: []string{uuid}, Types: allTypes})
	defer truth.Close()

	c := e.open("node=web1&types="+strings.Join(allTypes, ","), "")
	if m := c.next(); m.event != "heartbeat" || m.id == "" {
		t.Fatalf("first message %+v, want the stream's position", m)
	}
	e.provision(uuid, "manage")
	want := take(truth)
	var got []events.Event
	for range want {
		got = append(got, c.event())
	}
	sameEvents(t, "manage", got, want)
	if states := provisionStates(got); !slices.Equal(states, []string{"verifying", "manageable"}) {
		t.Fatalf("manage went through %v", states)
	}

	c.close()
	cursor := c.cursor
	e.provision(uuid, "provide")
	e.provision(uuid, "active")
	missed := take(truth)
	if len(missed) == 0 {
		t.Fatal("nothing happened while disconnected")
	}
	r := e.open("node="+uuid+"&types="+strings.Join(allTypes, ","), cursor)
	var resumed []events.Event
	for range missed {
		resumed = append(resumed, r.event())
	}
	sameEvents(t, "resumed", resumed, missed)
	r.quiet()
	all := append(got, resumed...)
	if states := provisionStates(all); states[len(states)-1] != "active" {
		t.Fatalf("went through %v", states)
	}
	checkChain(t, all)
	// The history entries streamed are the node's history, in order.
	rec := e.do("GET", "/v1/nodes/"+uuid+"/history", "", latest)
	var hist struct {
		History []struct{ UUID string } `json:"history"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &hist); err != nil || rec.Code != 200 {
		t.Fatalf("history: %d %v", rec.Code, err)
	}
	var apiUUIDs, streamUUIDs []string
	for _, h := range hist.History {
		apiUUIDs = append(apiUUIDs, h.UUID)
	}
	for _, ev := range all {
		if ev.Type == events.TypeHistory {
			streamUUIDs = append(streamUUIDs, ev.History.UUID)
		}
	}
	// Entries written before the stream began (if any) come first.
	if len(streamUUIDs) == 0 || len(apiUUIDs) < len(streamUUIDs) ||
		!slices.Equal(apiUUIDs[len(apiUUIDs)-len(streamUUIDs):], streamUUIDs) {
		t.Fatalf("history: API %v, stream %v", apiUUIDs, streamUUIDs)
	}
}

// provisionStates lists the provision states updates moved to.
func provisionStates(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == events.TypeUpdated && slices.Contains(e.Changed, events.FieldProvisionState) {
			out = append(out, e.State.ProvisionState)
		}
	}
	return out
}

// checkChain checks that each update starts from the state the previous
// one ended in: no change was lost.
func checkChain(t *testing.T, evs []events.Event) {
	t.Helper()
	var prev *events.NodeState
	for _, e := range evs {
		if e.Type != events.TypeUpdated {
			continue
		}
		if prev != nil {
			a, b := *e.Previous, *prev
			a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
			if !a.ProvisionUpdatedAt.Equal(b.ProvisionUpdatedAt) {
				t.Fatalf("event %d: provision_updated_at %v after %v", e.ID, a.ProvisionUpdatedAt, b.ProvisionUpdatedAt)
			}
			a.ProvisionUpdatedAt, b.ProvisionUpdatedAt = time.Time{}, time.Time{}
			if a != b {
				t.Fatalf("event %d starts from %+v, the previous ended in %+v", e.ID, a, b)
			}
		}
		prev = e.State
	}
}

// TestEventStreamSnapshotAndReset: snapshot=true starts with the node's
// state; a resume from an event no longer kept answers reset, then the
// snapshot again.
func TestEventStreamSnapshotAndReset(t *testing.T) {
	e := newStreamEnv(t, eventbus.Config{Buffer: 4, Heartbeat: time.Hour})
	node := e.createNode(`{"driver": "fake-hardware", "name": "db1"}`)
	uuid := node["uuid"].(string)
	c := e.open("node=db1&snapshot=true", "")
	start := c.next()
	snap := c.event()
	if snap.Type != events.TypeSnapshot || idString(snap.ID) != start.id || snap.Node != uuid ||
		snap.Name != "db1" || snap.State.ProvisionState != "enroll" {
		t.Fatalf("snapshot %+v after position %q", snap, start.id)
	}
	c.close()
	e.provision(uuid, "manage") // more events than the ring keeps
	last := e.b.Stats().LastID

	r := e.open("node=db1&snapshot=true", start.id)
	reset := r.event()
	if reset.Type != events.TypeReset || reset.ID != last {
		t.Fatalf("got %+v, want a reset at %d", reset, last)
	}
	snap = r.event()
	if snap.Type != events.TypeSnapshot || snap.ID != last || snap.State.ProvisionState != "manageable" {
		t.Fatalf("snapshot after reset %+v", snap)
	}
	// A valid resume sends no snapshot.
	ok := e.open("node=db1&snapshot=true", idString(last))
	e.provision(uuid, "provide")
	if ev := ok.event(); ev.Type != events.TypeUpdated {
		t.Fatalf("resumed stream began with %+v", ev)
	}
}

// TestEventStreamResumeSyncs: a Last-Event-ID above this process's last
// event (one another process sharing the event log delivered) is served
// once the broker has caught up (Broker.Sync), not answered with a reset.
func TestEventStreamResumeSyncs(t *testing.T) {
	e := newStreamEnv(t, eventbus.Config{Heartbeat: time.Hour})
	last := e.b.Stats().LastID
	ahead := events.Event{ID: last + 10, Type: events.TypeUpdated, Node: "elsewhere", Changed: []string{events.FieldFault}}
	next := ahead
	next.ID = last + 11
	e.b.SetSync(func(context.Context) error {
		e.b.Relay(ahead)
		e.b.Relay(next)
		return nil
	})
	c := e.open("", idString(ahead.ID))
	if ev := c.event(); ev.Type != events.TypeUpdated || ev.ID != next.ID {
		t.Fatalf("resumed from %d: got %+v, want the event %d", ahead.ID, ev, next.ID)
	}
}

// TestEventStreamStalledReader: a stream nobody reads does not hold up the
// conductor, and other readers get every event.
func TestEventStreamStalledReader(t *testing.T) {
	e := newStreamEnv(t, eventbus.Config{Heartbeat: time.Hour})
	stalled := e.open("", "") // never read
	_ = stalled
	truth := e.b.Subscribe(events.Filter{})
	defer truth.Close()
	reader := e.open("", "")
	reader.next() // its position
	// Were a stalled stream able to hold up the conductor, this would block.
	for i := range 5 {
		n := e.createNode(`{"driver": "fake-hardware", "name": "n` + idString(uint64(i)) + `"}`)
		uuid := n["uuid"].(string)
		for _, verb := range []string{"manage", "provide", "active"} {
			e.provision(uuid, verb)
		}
	}
	want := take(truth)
	var got []events.Event
	for len(got) < len(want) {
		ev := reader.event()
		if ev.Type == events.TypeOverflow {
			t.Fatalf("the reader was cut off after %d events", len(got))
		}
		got = append(got, ev)
	}
	sameEvents(t, "reader", got, want)
}

// TestEventStreamRequests checks the answers that are not streams.
func TestEventStreamRequests(t *testing.T) {
	e := newStreamEnv(t, eventbus.Config{})
	tests := []struct {
		name    string
		env     *env
		method  string
		query   string
		header  string
		status  int
		message string
	}{
		{"unknown field", e.env, "GET", "?fields=driver_info", "", 400, `unknown field "driver_info"`},
		{"unknown type", e.env, "GET", "?types=node.burnt", "", 400, `unknown event type "node.burnt"`},
		{"unknown parameter", e.env, "GET", "?nodes=a", "", 400, "Unexpected arguments: nodes"},
		{"bad node", e.env, "GET", "?node=a%20b", "", 400, "Expected UUID or name for node: a b"},
		{"bad Last-Event-ID", e.env, "GET", "", "Last-Event-ID: abc", 400, `Invalid Last-Event-ID "abc"`},
		{"bad last_event_id", e.env, "GET", "?last_event_id=-1", "", 400, `Invalid Last-Event-ID "-1"`},
		{"method", e.env, "POST", "", "", 405, "The method POST is not allowed for this resource."},
		{"head", e.env, "HEAD", "", "", 200, ""},
		{"unknown node", e.env, "GET", "?node=nosuchnode", "", 404, "Node nosuchnode could not be found."},
		{"unknown node on resume (it may have been deleted)", e.env, "HEAD", "?node=gone", "Last-Event-ID: 0", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tt.env.with(t).do(tt.method, events.StreamPath+tt.query, "", tt.header)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body.String())
			}
			h := rec.Header()
			if h.Get(hdrMinVersion) == "" || h.Get(hdrMaxVersion) == "" || h.Get(hdrRequestID) == "" {
				t.Fatalf("standard headers missing: %v", h)
			}
			if tt.status == 200 {
				if h.Get("Content-Type") != events.ContentType || h.Get("Cache-Control") != "no-cache" || rec.Body.Len() != 0 {
					t.Fatalf("HEAD: %v %q", h, rec.Body.String())
				}
				return
			}
			if _, msg := faultOf(t, rec); !strings.Contains(msg, tt.message) {
				t.Fatalf("message %q, want %q", msg, tt.message)
			}
		})
	}
}

// nilBroker is a store whose broker was never created.
type nilBroker struct{ eventbus.Publisher }

func (nilBroker) Broker() *eventbus.Broker { return nil }

// TestNewRequiresBroker: a store without its broker is refused when the
// API is built (a store without a Broker method is refused by Wire), not
// answered with 404s later.
func TestNewRequiresBroker(t *testing.T) {
	e := newEnv(t)
	defer func() {
		if recover() == nil {
			t.Error("New accepted a store with a nil broker")
		}
	}()
	New(Wire(Config{}, nilBroker{e.st}, e.cond))
}

// TestEventClientWait waits for a failing deploy with events.Subscribe, as
// `anvil node wait` does: the failure and its last_error arrive, the
// connection dropped mid-way is resumed without loss, and waiting makes no
// request but the stream's.
func TestEventClientWait(t *testing.T) {
	e := newStreamEnv(t, eventbus.Config{Heartbeat: time.Hour})
	node := e.createNode(`{"driver": "fake-hardware", "name": "bad1", "driver_info": {"fake_fail": "deploy"}}`)
	uuid := node["uuid"].(string)
	e.provision(uuid, "manage")
	e.provision(uuid, "provide")
	f := events.Filter{Nodes: []string{"bad1"},
		Fields: []string{events.FieldProvisionState, events.FieldTargetProvisionState, events.FieldLastError}}
	truth := e.b.Subscribe(events.Filter{Nodes: []string{uuid}, Fields: f.Fields})
	defer truth.Close()
	before := e.requests.Load()

	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	f.Snapshot = true
	ch, err := (&events.Client{BaseURL: e.srv.URL, MinBackoff: time.Millisecond}).Subscribe(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	next := func() events.Event {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("stream closed")
			}
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return events.Event{}
	}
	if snap := next(); snap.Type != events.TypeSnapshot || snap.State.ProvisionState != "available" {
		t.Fatalf("snapshot %+v", snap)
	}
	e.srv.CloseClientConnections() // the client must resume
	rec := e.do("PUT", "/v1/nodes/"+uuid+"/states/provision", `{"target": "active"}`, latest)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("deploy: %d %s", rec.Code, rec.Body.String())
	}
	var got []events.Event
	for {
		ev := next()
		got = append(got, ev)
		if ev.State != nil && ev.State.ProvisionState == "deploy failed" {
			if !strings.Contains(ev.State.LastError, "fake deploy failure") {
				t.Fatalf("failure without its last_error: %+v", ev.State)
			}
			break
		}
	}
	e.cond.WaitIdle()
	sameEvents(t, "waited", got, take(truth)[:len(got)])
	if n := e.requests.Load() - before; n != 0 {
		t.Fatalf("waiting made %d requests besides the stream", n)
	}
}

// TestRedactEvent: the fields a Redactor hides are replaced in a copy of
// the event; the broker's event (shared by every reader) is untouched.
func TestRedactEvent(t *testing.T) {
	red := Redactor(func(n *model.Node, field string) (any, bool) {
		return "hidden " + field, n.Owner != "p1"
	})
	st := events.NodeState{LastError: "boom at conductor-7", Reservation: "conductor-7", Owner: "p2", Lessee: "p1"}
	e := &events.Event{Type: events.TypeUpdated, State: &st, Previous: &events.NodeState{Owner: "p2"}}
	e.Encode()
	out := redactEvent(e, red)
	var buf []byte
	buf = events.AppendSSE(buf, out)
	if strings.Contains(string(buf), "conductor-7") || !strings.Contains(string(buf), "hidden last_error") ||
		!strings.Contains(string(buf), "hidden reservation") {
		t.Errorf("redacted: %s", buf)
	}
	if e.State.LastError != "boom at conductor-7" {
		t.Error("the shared event was changed")
	}
	st.Owner = "p1"
	if redactEvent(e, red) != e {
		t.Error("an owner's event was copied")
	}
}
