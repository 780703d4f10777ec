package redfish

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// What the driver does for a BMC as a whole, whatever the node or operation
// (as Ironic's SessionCache and sushy's connector): one session per account
// (client.go), at most Config.MaxCallsPerBMC calls in flight to one address,
// back-off when the BMC says it is busy, and a logout of every session when
// Anvil shuts down.

// enter waits for a place among the calls in flight to address; release
// gives it back. It fails only when ctx ends first.
func (d *Driver) enter(ctx context.Context, address string) (release func(), err error) {
	d.mu.Lock()
	g := d.gates[address]
	if g == nil {
		g = make(chan struct{}, d.cfg.MaxCallsPerBMC)
		d.gates[address] = g
	}
	d.mu.Unlock()
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// retryWait is how long to wait before try attempt+1 of a call. A BMC
// answering 503 or 429 is busy: it is given what its Retry-After asks or,
// when it names no time, a wait doubling from RetryInterval with every
// try; both are capped at MaxRetryWait. Other failures wait RetryInterval.
func (d *Driver) retryWait(attempt int, status int, retryAfter string) time.Duration {
	if status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests {
		return d.cfg.RetryInterval
	}
	if ra, ok := parseRetryAfter(retryAfter, time.Now()); ok {
		return min(ra, d.cfg.MaxRetryWait)
	}
	wait := d.cfg.RetryInterval
	for i := 1; i < attempt && wait < d.cfg.MaxRetryWait; i++ {
		wait *= 2
	}
	return min(wait, d.cfg.MaxRetryWait)
}

// parseRetryAfter reads Retry-After: delay seconds or an HTTP date (RFC
// 9110 section 10.2.3).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// logout ends session st on the BMC, with the retries of any call but
// one: a BMC whose address refuses the connection is gone, and is not
// asked again (best effort: a BMC that does not answer expires the
// session on its own).
func (d *Driver) logout(ctx context.Context, c *conn, st authState) {
	lc := *c
	lc.ctx, lc.oneTryIfRefused = ctx, true
	target, err := lc.resolve(st.location)
	if err != nil {
		return
	}
	resp, err := lc.send(http.MethodDelete, target, nil, "", map[string]string{"X-Auth-Token": st.token}, false)
	if err != nil {
		d.cfg.Log.Debug("redfish logout failed", "bmc", c.in.address, "err", err)
		return
	}
	resp.Body.Close()
}

// errShutDown refuses logins once Logout has run.
var errShutDown = errors.New("the redfish driver has logged out of its BMCs for shutdown")

// Logout ends every session the driver holds (on shutdown), a few BMCs at a
// time, until ctx ends; it reports how many it logged out of. Calls still
// running (work that outlived the shutdown's grace) may go on with basic
// auth or their session, but no new session is opened after it.
func (d *Driver) Logout(ctx context.Context) int {
	d.mu.Lock()
	d.closed = true
	held := make([]authState, 0, len(d.sessions))
	for _, st := range d.sessions {
		if st.token != "" && st.conn != nil {
			held = append(held, st)
		}
	}
	clear(d.sessions)
	d.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, logoutParallel)
	for _, h := range held {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			// A logout is a courtesy (the BMC expires the session anyway):
			// a BMC that is gone or busy gets logoutTimeout, retries
			// included, not the shutdown's whole budget.
			lctx, cancel := context.WithTimeout(ctx, logoutTimeout)
			defer cancel()
			d.logout(lctx, h.conn, h)
		}()
	}
	wg.Wait()
	if len(held) > 0 {
		d.cfg.Log.Info("redfish sessions logged out", "sessions", len(held))
	}
	return len(held)
}

// logoutTimeout bounds one BMC's logout, its retries included. A busy BMC
// gets its retries: two 503s in a row with Retry-After: 1 at 200 ms a call
// already take 2.6 s (a 3 s bound left one session of a 1,000-BMC fleet
// open now and then); a BMC that is gone refuses at once and is not retried.
const logoutTimeout = 10 * time.Second

// logoutParallel is how many BMCs Logout talks to at once: each is another
// BMC, so a fleet's sessions end in a few round trips' time.
const logoutParallel = 128
