package cli

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/fault"
)

// Poller is the Waiter that asks the API again and again. It reads each
// node (GET /v1/nodes/{node}?fields=...) while few are left, and the whole
// list in one paged request per round otherwise, so waiting on hundreds
// of nodes costs a few requests a second. It is the only code that polls;
// a watch-stream Waiter is meant to replace it.
type Poller struct {
	Client *Client
	// MinInterval is the first pause between rounds (default 100 ms); it
	// grows by half each round up to MaxInterval (default 2 s).
	MinInterval, MaxInterval time.Duration
	// ListAbove is the number of pending nodes above which one list
	// request replaces per-node requests (default 10).
	ListAbove int
	// Sleep pauses between rounds; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock of timeouts; nil means time.Now.
	Now func() time.Time
}

// Wait implements Waiter.
func (p *Poller) Wait(ctx context.Context, nodes []string, want Want) []Outcome {
	minI, maxI := p.MinInterval, p.MaxInterval
	if minI <= 0 {
		minI = 100 * time.Millisecond
	}
	if maxI < minI {
		maxI = max(2*time.Second, minI)
	}
	now, sleep := p.Now, p.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = clock.Sleep
	}
	out := make([]Outcome, len(nodes))
	pending := map[int]bool{}
	for i := range nodes {
		pending[i] = true
	}
	settle := func(i int, o Outcome) {
		out[i] = o
		delete(pending, i)
		if want.Done != nil {
			want.Done(i, o)
		}
	}
	var deadline time.Time
	if want.Timeout > 0 {
		deadline = now().Add(want.Timeout)
	}
	interval := minI
	for len(pending) > 0 {
		snaps, errs := p.round(ctx, nodes, pending)
		for i := range pending {
			if err, bad := errs[i]; bad {
				settle(i, Outcome{State: out[i].State, Err: err})
				continue
			}
			snap, seen := snaps[i]
			if !seen {
				continue
			}
			out[i].State = stateOf(snap, want)
			if done, err := judge(nodes[i], snap, want); done {
				settle(i, Outcome{State: out[i].State, Err: err})
			}
		}
		if len(pending) == 0 {
			break
		}
		if !deadline.IsZero() && !now().Before(deadline) {
			for i := range pending {
				settle(i, Outcome{State: out[i].State, Err: &WaitError{Node: nodes[i], Want: want.state(),
					State: out[i].State, LastError: snaps[i].LastError, Timeout: want.Timeout}})
			}
			break
		}
		pause := interval
		if !deadline.IsZero() {
			pause = min(pause, deadline.Sub(now()))
		}
		if err := sleep(ctx, pause); err != nil {
			for i := range pending {
				settle(i, Outcome{State: out[i].State, Err: err})
			}
			break
		}
		interval = min(interval*3/2, maxI)
	}
	return out
}

func stateOf(n nodeSnap, want Want) string {
	if want.Provision != "" {
		return n.ProvisionState
	}
	return n.PowerState
}

// round reads the pending nodes once. A node the API does not know ends
// its wait with that error; other errors (a restarting server) are
// retried next round.
func (p *Poller) round(ctx context.Context, nodes []string, pending map[int]bool) (map[int]nodeSnap, map[int]error) {
	snaps, errs := map[int]nodeSnap{}, map[int]error{}
	threshold := p.ListAbove
	if threshold <= 0 {
		threshold = 10
	}
	if len(pending) <= threshold {
		for i := range pending {
			var n map[string]any
			err := p.Client.Get(ctx, nodePath(nodes[i]), url.Values{"fields": {snapFields}}, &n)
			switch {
			case err == nil:
				snaps[i] = snapOf(n)
			case IsNotFound(err):
				errs[i] = err
			case errors.Is(err, context.Canceled):
				return snaps, errs
			}
		}
		return snaps, errs
	}
	all, err := p.Client.List(ctx, "/v1/nodes", "nodes", url.Values{"fields": {snapFields}}, 0)
	if err != nil {
		return snaps, errs
	}
	byIdent := make(map[string]nodeSnap, 2*len(all))
	for _, n := range all {
		s := snapOf(n)
		byIdent[s.UUID] = s
		if s.Name != "" {
			byIdent[s.Name] = s
		}
	}
	for i := range pending {
		if s, ok := byIdent[nodes[i]]; ok {
			snaps[i] = s
		} else {
			errs[i] = &APIError{Status: 404, Message: fault.MissingText("Node", nodes[i])}
		}
	}
	return snaps, errs
}
