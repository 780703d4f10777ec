package eventbus

import (
	"errors"
	"slices"
	"testing"

	"github.com/anvil-metal/anvil/pkg/events"
)

// TestReplayNotCopied: a resume from far back (6,300 events, the attack of
// issue 21) holds no copy of its backlog; taking it in bounded batches
// delivers exactly the matching events, in order, then the new ones.
func TestReplayNotCopied(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter events.Filter
		batch  int
	}{
		{"everything, batches of 100", events.Filter{}, 100},
		{"one node, batches of 7", events.Filter{Nodes: []string{"n3"}}, 7},
		{"everything at once", events.Filter{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBroker(Config{Buffer: 10000})
			pub := publishN(b, 7000, 5)
			after := pub[699].ID // 6,300 back
			s, ok := b.Resume(tc.filter, after)
			defer s.Close()
			if !ok {
				t.Fatal("resume within the ring refused")
			}
			s.mu.Lock()
			held := len(s.queue)
			s.mu.Unlock()
			if held != 0 {
				t.Fatalf("the subscription holds %d events of its backlog; want none copied", held)
			}
			live := publishN(b, 3, 5)
			var want []events.Event
			m := tc.filter.Compile()
			for _, e := range append(slices.Clone(pub[700:]), live...) {
				if m.Match(&e) {
					want = append(want, e)
				}
			}
			var got []events.Event
			for range len(want) + 2 {
				before := len(got)
				var pos uint64
				got, pos, _ = s.TakeUpTo(got, tc.batch)
				if tc.batch > 0 && len(got)-before > tc.batch {
					t.Fatalf("took %d events, asked for at most %d", len(got)-before, tc.batch)
				}
				if len(got) > 0 && pos < got[len(got)-1].ID {
					t.Fatalf("position %d behind the last event taken %d", pos, got[len(got)-1].ID)
				}
				if len(got) == before {
					break
				}
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("got %d events, want the %d matching ones in order", len(got), len(want))
			}
		})
	}
}

// TestReplayOverrun: a reader whose replay the ring overtakes is cut off
// with an overflow event at its position; resuming from it is a reset, not
// a silent gap.
func TestReplayOverrun(t *testing.T) {
	b := newTestBroker(Config{Buffer: 100, SubscriberBuffer: 1000})
	pub := publishN(b, 100, 1)
	s, ok := b.Resume(events.Filter{}, pub[9].ID)
	defer s.Close()
	if !ok {
		t.Fatal("resume refused")
	}
	first, pos, err := s.TakeUpTo(nil, 10)
	if err != nil || !slices.Equal(ids(first), ids(pub[10:20])) || pos != pub[19].ID {
		t.Fatalf("first batch %v pos %d err %v", ids(first), pos, err)
	}
	publishN(b, 50, 1) // the ring drops pub[:50], the reader is at pub[19]
	evs, _, err := s.TakeUpTo(nil, 10)
	if !errors.Is(err, ErrOverflow) || len(evs) != 1 || evs[0].Type != events.TypeOverflow || evs[0].ID != pub[19].ID {
		t.Fatalf("after overrun: %+v, %v; want one overflow at %d", evs, err, pub[19].ID)
	}
	again, ok := b.Resume(events.Filter{}, evs[0].ID)
	again.Close()
	if ok {
		t.Fatal("resume from a lost position not answered reset")
	}
	if st := b.Stats(); st.Subscribers != 0 || st.Overflows != 1 {
		t.Fatalf("stats %+v", st)
	}
}
