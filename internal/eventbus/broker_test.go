package eventbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/pkg/events"
)

// testTimeout bounds every wait of these tests; nothing waits for it to pass.
const testTimeout = 10 * time.Second

func fixedNow() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }

func newTestBroker(cfg Config) *Broker {
	if cfg.IDBase == 0 {
		cfg.IDBase = 100
	}
	cfg.Now = fixedNow
	return NewBroker(cfg)
}

// publishN publishes n updates of node "n<i%nodes>" and returns them.
func publishN(b *Broker, n, nodes int) []events.Event {
	out := make([]events.Event, 0, n)
	for i := range n {
		node := fmt.Sprintf("n%d", i%nodes)
		out = append(out, b.Publish(events.Event{Type: events.TypeUpdated, Node: node, Changed: []string{events.FieldProvisionState},
			State: &events.NodeState{ProvisionState: fmt.Sprintf("s%d", i)}}))
	}
	return out
}

// drain takes everything queued on s.
func drain(t *testing.T, s *Subscription) ([]events.Event, uint64, error) {
	t.Helper()
	evs, pos, err := s.Take(nil)
	return evs, pos, err
}

func ids(evs []events.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestResume(t *testing.T) {
	tests := []struct {
		name      string
		buffer    int
		published int
		after     func(pub []events.Event) uint64
		filter    events.Filter
		wantOK    bool
		want      func(pub []events.Event) []events.Event // replayed backlog
	}{
		{name: "from the middle replays the rest", buffer: 100, published: 10,
			after: func(p []events.Event) uint64 { return p[4].ID }, wantOK: true,
			want: func(p []events.Event) []events.Event { return p[5:] }},
		{name: "from the last event replays nothing", buffer: 100, published: 10,
			after: func(p []events.Event) uint64 { return p[9].ID }, wantOK: true,
			want: func([]events.Event) []events.Event { return nil }},
		{name: "from the event before the oldest kept replays the whole ring", buffer: 5, published: 10,
			after: func(p []events.Event) uint64 { return p[4].ID }, wantOK: true,
			want: func(p []events.Event) []events.Event { return p[5:] }},
		{name: "from an event no longer kept is a reset", buffer: 5, published: 10,
			after: func(p []events.Event) uint64 { return p[3].ID }, wantOK: false,
			want: func([]events.Event) []events.Event { return nil }},
		{name: "from an ID of a later run is a reset", buffer: 100, published: 3,
			after: func(p []events.Event) uint64 { return p[2].ID + 1000 }, wantOK: false,
			want: func([]events.Event) []events.Event { return nil }},
		{name: "from an ID older than this run is a reset", buffer: 100, published: 3,
			after: func(p []events.Event) uint64 { return 7 }, wantOK: false,
			want: func([]events.Event) []events.Event { return nil }},
		{name: "from the start of the run with nothing published", buffer: 100, published: 0,
			after: func([]events.Event) uint64 { return 100 }, wantOK: true,
			want: func([]events.Event) []events.Event { return nil }},
		{name: "replays only what the filter matches", buffer: 100, published: 10,
			after: func(p []events.Event) uint64 { return p[1].ID }, filter: events.Filter{Nodes: []string{"n1"}}, wantOK: true,
			want: func(p []events.Event) []events.Event { return []events.Event{p[3], p[5], p[7], p[9]} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBroker(Config{Buffer: tt.buffer})
			pub := publishN(b, tt.published, 2)
			s, ok := b.Resume(tt.filter, tt.after(pub))
			defer s.Close()
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			got, _, err := drain(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(pub); !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("replayed %v, want %v", ids(got), ids(want))
			}
			// Live events follow the backlog.
			live := b.Publish(events.Event{Type: events.TypeUpdated, Node: "n1", Changed: []string{events.FieldPowerState}})
			got, pos, err := drain(t, s)
			if err != nil || len(got) != 1 || got[0].ID != live.ID || pos != live.ID {
				t.Fatalf("live: %v pos %d err %v, want [%d]", ids(got), pos, err, live.ID)
			}
		})
	}
}

// TestResumeLosesNothing cuts a reader off at every point of a run and
// checks that resuming from its last event yields exactly the rest.
func TestResumeLosesNothing(t *testing.T) {
	b := newTestBroker(Config{Buffer: 1000})
	all := b.Subscribe(events.Filter{})
	defer all.Close()
	first := b.Subscribe(events.Filter{})
	pub := publishN(b, 50, 3)
	got, _, _ := drain(t, first)
	first.Close()
	for cut := range len(got) + 1 {
		after := first.Start()
		if cut > 0 {
			after = got[cut-1].ID
		}
		s, ok := b.Resume(events.Filter{}, after)
		rest, _, err := drain(t, s)
		s.Close()
		if !ok || err != nil {
			t.Fatalf("cut %d: ok %v err %v", cut, ok, err)
		}
		if seen := append(slices.Clone(got[:cut]), rest...); !slices.Equal(ids(seen), ids(pub)) {
			t.Fatalf("cut %d: saw %v, published %v", cut, ids(seen), ids(pub))
		}
	}
}

// TestStalledSubscriber: one subscriber never reads. Publishing 10,000
// events completes, the reading subscriber gets all of them in order, and
// the stalled one is cut off with a final overflow event from which it can
// resume without loss.
func TestStalledSubscriber(t *testing.T) {
	const total = 10000
	b := newTestBroker(Config{Buffer: 20000, SubscriberBuffer: 8})
	stalled := b.Subscribe(events.Filter{})
	reader := b.Subscribe(events.Filter{})
	defer reader.Close()

	done := make(chan []events.Event)
	go func() {
		var pub []events.Event
		var got []events.Event
		for i := range total {
			pub = append(pub, publishN(b, 1, 4)...)
			if i%4 == 3 { // the reader keeps up; the stalled one never reads
				got, _, _ = reader.Take(got)
			}
		}
		got, _, _ = reader.Take(got)
		if !slices.Equal(ids(got), ids(pub)) {
			t.Errorf("reader got %d events, want the %d published in order", len(got), len(pub))
		}
		done <- pub
	}()
	var pub []events.Event
	select {
	case pub = <-done:
	case <-time.After(testTimeout):
		t.Fatal("publishing blocked on a stalled subscriber")
	}

	evs, _, err := stalled.Take(nil)
	if !errors.Is(err, ErrOverflow) {
		t.Fatalf("stalled subscriber: err %v, want ErrOverflow", err)
	}
	if len(evs) != 9 || !slices.Equal(ids(evs[:8]), ids(pub[:8])) {
		t.Fatalf("stalled subscriber got %v, want the first 8 events and an overflow", ids(evs))
	}
	last := evs[8]
	if last.Type != events.TypeOverflow || last.ID != pub[7].ID {
		t.Fatalf("final event %+v, want overflow with ID %d", last, pub[7].ID)
	}
	if st := b.Stats(); st.Overflows != 1 || st.Subscribers != 1 || st.Published != total {
		t.Fatalf("stats %+v", st)
	}
	// Reconnecting from the overflow event's ID loses nothing.
	s, ok := b.Resume(events.Filter{}, last.ID)
	defer s.Close()
	rest, _, _ := s.Take(nil)
	if !ok || !slices.Equal(ids(append(evs[:8], rest...)), ids(pub)) {
		t.Fatalf("resume after overflow: ok %v, %d events", ok, len(rest))
	}
}

// TestConcurrentPublishers checks numbering and per-subscriber order under
// concurrency (run with -race).
func TestConcurrentPublishers(t *testing.T) {
	const writers, each = 8, 500
	b := newTestBroker(Config{Buffer: writers * each, SubscriberBuffer: writers * each})
	s := b.Subscribe(events.Filter{})
	defer s.Close()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				b.Publish(events.Event{Type: events.TypeUpdated, Node: fmt.Sprintf("w%d", w), Changed: []string{events.FieldLastError},
					State: &events.NodeState{LastError: fmt.Sprint(i)}})
			}
		})
	}
	var got []events.Event
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for len(got) < writers*each {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, e)
	}
	wg.Wait()
	last := map[string]int{}
	for i, e := range got {
		if i > 0 && e.ID != got[i-1].ID+1 {
			t.Fatalf("IDs not consecutive at %d: %d after %d", i, e.ID, got[i-1].ID)
		}
		var n int
		fmt.Sscan(e.State.LastError, &n)
		if prev, ok := last[e.Node]; ok && n != prev+1 {
			t.Fatalf("%s: event %d after %d", e.Node, n, prev)
		}
		last[e.Node] = n
	}
}

func TestPosition(t *testing.T) {
	b := newTestBroker(Config{})
	s := b.Subscribe(events.Filter{Nodes: []string{"n0"}})
	defer s.Close()
	if s.Start() != 100 {
		t.Fatalf("start %d", s.Start())
	}
	pub := publishN(b, 5, 2) // n0, n1, n0, n1, n0 ... then n1 last
	pub = append(pub, publishN(b, 1, 1)...)
	evs, pos, err := s.Take(nil)
	if err != nil || !slices.Equal(ids(evs), []uint64{pub[0].ID, pub[2].ID, pub[4].ID, pub[5].ID}) {
		t.Fatalf("took %v, %v", ids(evs), err)
	}
	b.Publish(events.Event{Type: events.TypeUpdated, Node: "n1", Changed: []string{events.FieldFault}})
	evs, pos, _ = s.Take(nil)
	if len(evs) != 0 || pos != pub[5].ID+1 {
		t.Fatalf("after a filtered-out event: %v pos %d, want none and pos %d", ids(evs), pos, pub[5].ID+1)
	}
}

func TestClose(t *testing.T) {
	b := newTestBroker(Config{})
	s := b.Subscribe(events.Filter{})
	pub := publishN(b, 2, 1)
	b.Close()
	if e := b.Publish(events.Event{Type: events.TypeUpdated, Node: "n0"}); e.ID != 0 {
		t.Fatalf("publish after close numbered %d", e.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, want := range pub {
		if e, err := s.Next(ctx); err != nil || e.ID != want.ID {
			t.Fatalf("queued event: %v %v", e.ID, err)
		}
	}
	if _, err := s.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("after draining: %v, want ErrClosed", err)
	}
	late := b.Subscribe(events.Filter{})
	if _, err := late.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscription after close: %v", err)
	}
}

func TestObserve(t *testing.T) {
	b := newTestBroker(Config{})
	var seen []uint64
	b.Observe(func(e events.Event) { seen = append(seen, e.ID) })
	pub := publishN(b, 3, 1)
	if !slices.Equal(seen, ids(pub)) {
		t.Fatalf("observed %v", seen)
	}
}

// TestRelay: events numbered elsewhere keep their IDs, gaps included; an
// ID not above the last is dropped; a resume is served from the ring as
// long as the reader's ID is at or above the last event evicted from it.
func TestRelay(t *testing.T) {
	b := newTestBroker(Config{Buffer: 3})
	relay := func(id uint64) bool {
		return b.Relay(events.Event{ID: id, Type: events.TypeUpdated, Node: "n", Changed: []string{events.FieldFault}})
	}
	for _, id := range []uint64{105, 110, 111} {
		if !relay(id) {
			t.Fatalf("relay %d refused", id)
		}
	}
	if relay(111) || relay(104) {
		t.Fatal("relayed an ID not above the last")
	}
	for _, tt := range []struct {
		after  uint64
		ok     bool
		replay []uint64
	}{
		{100, true, []uint64{105, 110, 111}}, // the base: nothing evicted yet
		{107, true, []uint64{110, 111}},      // between two events (a gap)
		{99, false, nil},
		{112, false, nil},
	} {
		s, ok := b.Resume(events.Filter{}, tt.after)
		got, _, _ := s.Take(nil)
		s.Close()
		if ok != tt.ok || !slices.Equal(ids(got), tt.replay) {
			t.Fatalf("resume after %d: ok %v %v, want %v %v", tt.after, ok, ids(got), tt.ok, tt.replay)
		}
	}
	relay(120) // evicts 105
	if s, ok := b.Resume(events.Filter{}, 104); ok {
		s.Close()
		t.Fatal("resume from before an evicted event: ok")
	}
	s, ok := b.Resume(events.Filter{}, 105)
	got, _, _ := s.Take(nil)
	s.Close()
	if !ok || !slices.Equal(ids(got), []uint64{110, 111, 120}) {
		t.Fatalf("resume from the evicted event: ok %v %v", ok, ids(got))
	}
	if b.Publish(events.Event{Type: events.TypeUpdated, Node: "n"}).ID != 121 {
		t.Fatal("Publish after Relay does not continue the numbering")
	}
}
