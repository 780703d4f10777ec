package conductor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
)

// TestPowerSyncReadIsBounded: a BMC that does not answer holds a sync
// worker for SyncPowerStateTimeout at most — not its driver's attempts ×
// (timeout + back-off) — and counts as a failed read, tried again next
// sweep.
func TestPowerSyncReadIsBounded(t *testing.T) {
	const bound = 200 * time.Millisecond
	e := newEnv(t, func(cfg *conductor.Config) { cfg.SyncPowerStateTimeout = bound })
	id := e.create(nil).UUID
	e.setInfo(id, "fake_power_state_delay", "3600") // a BMC that does not answer
	var unbounded error
	e.fake.Sleep = func(ctx context.Context, d time.Duration) error {
		dl, ok := ctx.Deadline()
		if !ok || time.Until(dl) > bound {
			unbounded = errors.New("the read's context has no deadline within the bound")
			return unbounded
		}
		<-ctx.Done()
		return ctx.Err()
	}
	if err := e.c.PowerSync().SyncPowerStates(e.ctx); err != nil {
		t.Fatal(err)
	}
	if unbounded != nil {
		t.Fatal(unbounded)
	}
	if r := e.c.PowerSync().Report(); r.LastNodes != 1 || r.LastFailed != 1 {
		t.Fatalf("sweep: %d nodes read, %d failed; want the one node's read failed", r.LastNodes, r.LastFailed)
	}
}
