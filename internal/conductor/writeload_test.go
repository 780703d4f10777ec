package conductor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// reserveCounter counts the lock's compare-and-set writes.
type reserveCounter struct {
	conductor.Store
	reserves atomic.Int64
}

func (s *reserveCounter) Nodes() store.NodeStore { return reserveCounting{s.Store.Nodes(), s} }

// reserveCounting is the node store that counts into s.
type reserveCounting struct {
	store.NodeStore
	s *reserveCounter
}

func (r reserveCounting) ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error) {
	r.s.reserves.Add(1)
	return r.NodeStore.ReserveNode(ctx, uuid, host)
}

// TestHeartbeatWithNoFreeWorkerWritesNothing: a heartbeat that would
// resume its node while every worker is busy is refused 503 before it
// takes the node's lock — at 10,000 nodes ~195,000 such heartbeats each
// took and freed a lock, two writes queued ahead of every save.
func TestHeartbeatWithNoFreeWorkerWritesNothing(t *testing.T) {
	rc := &reserveCounter{}
	e := newEnv(t, func(cfg *conductor.Config) {
		rc.Store, cfg.Store = cfg.Store, rc
		cfg.Workers = 1
	})
	waiting := e.create(model.JSON{"fake_wait": "deploy"}).UUID
	busy := e.create(model.JSON{"fake_deploy_delay": "1"}).UUID
	for _, id := range []string{waiting, busy} {
		e.must(id, "manage", fsm.Manageable)
		e.must(id, "provide", fsm.Available)
	}
	e.must(waiting, "active", fsm.DeployWait)
	hold, held := make(chan struct{}), make(chan struct{})
	e.fake.Sleep = func(ctx context.Context, d time.Duration) error { close(held); <-hold; return nil }
	if err := e.c.Provision(e.ctx, busy, conductor.ProvisionRequest{Target: "active", Minor: 89}); err != nil {
		t.Fatal(err)
	}
	<-held // the only worker deploys busy
	before := rc.reserves.Load()
	err := e.c.Agents().Heartbeat(e.ctx, waiting, ipa.Heartbeat{})
	if f, ok := fault.As(err); !ok || f.Kind != fault.Unavailable {
		t.Fatalf("heartbeat with every worker busy: %v, want 503", err)
	}
	if n := rc.reserves.Load() - before; n != 0 {
		t.Fatalf("the refused heartbeat tried the lock %d times, want none", n)
	}
	close(hold)
	e.c.WaitIdle()
	if err := e.c.Agents().Heartbeat(e.ctx, waiting, ipa.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if n := e.get(waiting); n.ProvisionState != fsm.Active {
		t.Fatalf("after a heartbeat with a free worker: %q, want active", n.ProvisionState)
	}
}

// TestHeldLockIsWaitedForByReads: waiting for a held lock reads the node
// and tries the lock (a write) again only once it looks free or the wait
// is over, not every few milliseconds.
func TestHeldLockIsWaitedForByReads(t *testing.T) {
	rc := &reserveCounter{}
	e := newEnv(t, func(cfg *conductor.Config) {
		rc.Store, cfg.Store = cfg.Store, rc
		cfg.LockRetries, cfg.LockRetryInterval = 1, 500*time.Millisecond
	})
	id := e.create(model.JSON{}).UUID
	if _, err := e.st.Nodes().ReserveNode(e.ctx, id, "other-conductor"); err != nil {
		t.Fatal(err)
	}
	before := rc.reserves.Load()
	err := e.c.Provision(e.ctx, id, conductor.ProvisionRequest{Target: "manage", Minor: 89})
	if f, ok := fault.As(err); !ok || f.Kind != fault.Conflict {
		t.Fatalf("verb on a node locked throughout: %v, want 409", err)
	}
	if n := rc.reserves.Load() - before; n != 2 {
		t.Fatalf("the lock was tried %d times while held, want 2 (at once, and at the end of the wait)", n)
	}
	if err := e.st.Nodes().ReleaseNode(e.ctx, id, "other-conductor"); err != nil {
		t.Fatal(err)
	}
	e.must(id, "manage", fsm.Manageable)
}
