package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/pkg/events"
)

// StreamWaiter is the Waiter of --wait and `node wait`: it subscribes to the
// server's watch stream, reads the nodes once, and from then on only listens,
// so a wait costs one request per node plus one stream however long it
// lasts. A server without the stream (plain Ironic) falls back to Poller.
type StreamWaiter struct {
	Client *Client
	// Now is the clock of timeouts; nil means time.Now.
	Now func() time.Time
	// LostAfter bounds the reconnecting when the stream drops: the wait
	// fails with "lost connection to <endpoint>" when the server does not
	// answer again within it. Zero means DefaultLostAfter.
	LostAfter time.Duration
}

// DefaultLostAfter is how long a wait tries to reconnect a dropped stream.
const DefaultLostAfter = 30 * time.Second

// Wait implements Waiter.
func (w *StreamWaiter) Wait(ctx context.Context, nodes []string, want Want) []Outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sc := &events.Client{BaseURL: w.Client.Endpoint(), HTTP: w.Client.cfg.HTTP, Header: w.Client.authHeader(), GiveUpAfter: w.LostAfter}
	if sc.GiveUpAfter <= 0 {
		sc.GiveUpAfter = DefaultLostAfter
	}
	f := events.Filter{Nodes: nodes}
	if want.Progress != nil {
		f.Types = []string{events.TypeCreated, events.TypeUpdated, events.TypeDeleted, events.TypeHistory}
	}
	ch, err := sc.Subscribe(ctx, f)
	if err != nil {
		return (&Poller{Client: w.Client, Now: w.Now}).Wait(ctx, nodes, want)
	}
	s := &streamWait{nodes: nodes, want: want, out: make([]Outcome, len(nodes)), pending: map[int]bool{}}
	for i := range nodes {
		s.pending[i] = true
	}
	poll := &Poller{Client: w.Client}
	s.observe(poll.round(ctx, nodes, s.pending)) // the one read; events after the subscription are queued

	var timeout <-chan time.Time
	if want.Timeout > 0 {
		t := time.NewTimer(want.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	for len(s.pending) > 0 {
		select {
		case ev, ok := <-ch:
			if !ok {
				// The stream ended for good: finish by asking the API.
				for i, o := range (&Poller{Client: w.Client, Now: w.Now}).Wait(ctx, s.remaining(), want) {
					s.settle(s.remainingIndex(i), o)
				}
				return s.out
			}
			if ev.Type == events.TypeError { // the server is gone (or refused the reconnection)
				for i := range s.pending {
					s.settle(i, Outcome{State: s.out[i].State, Err: fmt.Errorf("%s (still waiting for node %s to reach %s)", ev.Error, nodes[i], want.state())})
				}
				return s.out
			}
			s.event(ctx, poll, ev)
		case <-timeout:
			for i := range s.pending {
				s.settle(i, Outcome{State: s.out[i].State, Err: &WaitError{Node: nodes[i], Want: want.state(),
					State: s.out[i].State, LastError: s.last[i], Timeout: want.Timeout}})
			}
		case <-ctx.Done():
			for i := range s.pending {
				s.settle(i, Outcome{State: s.out[i].State, Err: ctx.Err()})
			}
		}
	}
	return s.out
}

// streamWait is the state of one Wait.
type streamWait struct {
	nodes   []string
	want    Want
	out     []Outcome
	pending map[int]bool
	last    map[int]string // last_error seen per node
	order   []int          // pending indices, for remaining()
}

func (s *streamWait) settle(i int, o Outcome) {
	if !s.pending[i] {
		return
	}
	s.out[i] = o
	delete(s.pending, i)
	if s.want.Done != nil {
		s.want.Done(i, o)
	}
}

// observe judges a round of reads.
func (s *streamWait) observe(snaps map[int]nodeSnap, errs map[int]error) {
	for i := range s.pending {
		if err, bad := errs[i]; bad {
			s.settle(i, Outcome{Err: err})
			continue
		}
		if snap, ok := snaps[i]; ok {
			s.judge(i, snap)
		}
	}
}

func (s *streamWait) judge(i int, snap nodeSnap) {
	if s.last == nil {
		s.last = map[int]string{}
	}
	s.last[i] = snap.LastError
	s.out[i].State = stateOf(snap, s.want)
	if done, err := judge(s.nodes[i], snap, s.want); done {
		s.settle(i, Outcome{State: s.out[i].State, Err: err})
	}
}

// event applies one stream event to the nodes it concerns.
func (s *streamWait) event(ctx context.Context, poll *Poller, ev events.Event) {
	if ev.Type == events.TypeReset {
		// Events were lost (the server restarted): read the nodes once more.
		s.observe(poll.round(ctx, s.nodes, s.pending))
		return
	}
	for i := range s.pending {
		if s.nodes[i] != ev.Node && (ev.Name == "" || s.nodes[i] != ev.Name) {
			continue
		}
		if ev.Type == events.TypeDeleted {
			s.settle(i, Outcome{State: s.out[i].State, Err: fmt.Errorf("node %s was deleted while waiting for %s", s.nodes[i], s.want.state())})
			continue
		}
		if ev.Type == events.TypeHistory {
			if h := ev.History; h != nil && h.EventType == events.HistoryProgress && s.want.Progress != nil {
				s.want.Progress(i, h.Event)
			}
			continue
		}
		if ev.State == nil {
			continue
		}
		st := ev.State
		s.judge(i, nodeSnap{UUID: ev.Node, Name: ev.Name, ProvisionState: st.ProvisionState,
			TargetProvision: st.TargetProvisionState, PowerState: st.PowerState, TargetPower: st.TargetPowerState,
			LastError: st.LastError, Reservation: st.Reservation})
	}
}

// remaining lists the idents still pending; remainingIndex maps back.
func (s *streamWait) remaining() []string {
	s.order = s.order[:0]
	var out []string
	for i := range s.nodes {
		if s.pending[i] {
			s.order = append(s.order, i)
			out = append(out, s.nodes[i])
		}
	}
	return out
}

func (s *streamWait) remainingIndex(j int) int { return s.order[j] }
