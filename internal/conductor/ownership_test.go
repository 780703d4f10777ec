package conductor_test

import (
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/ring"
)

// A dead conductor's locks are split between the survivors by the ring:
// each survivor takes only the nodes it owns, the dead conductor stays
// registered while some of its locks remain, and once the other survivor is
// dead too the last one takes the rest and marks the dead one offline.
func TestTakeOverSplitsByRing(t *testing.T) {
	e, clk := newClockEnv(t)
	for _, h := range []string{"dead-one", "peer"} {
		if err := e.st.Conductors().RegisterConductor(e.ctx, &model.Conductor{Hostname: h, Drivers: []string{"fake-hardware"}}); err != nil {
			t.Fatal(err)
		}
	}
	r := ring.New([]ring.Member{{Host: "test-conductor"}, {Host: "peer"}}, 0, 1)
	mine := map[string]bool{}
	var ids []string
	for i := 0; i < 40; i++ {
		id := e.create(nil).UUID
		ids = append(ids, id)
		mine[id] = r.Owner(id, "") == "test-conductor"
		n, err := e.st.Nodes().ReserveNode(e.ctx, id, "dead-one")
		if err != nil {
			t.Fatal(err)
		}
		n.ProvisionState, n.TargetProvisionState = fsm.Cleaning, fsm.Available
		if err := e.st.Nodes().UpdateNode(e.ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if len(mine) != 40 {
		t.Fatal("duplicate UUIDs")
	}
	clk.Advance(2 * time.Hour)
	if err := e.st.Conductors().HeartbeatConductor(e.ctx, "peer", clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.c.BreakDeadLocks(e.ctx); err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, id := range ids {
		n := e.get(id)
		switch {
		case mine[id] && (n.Reservation != "" || n.ProvisionState != fsm.CleanFailed):
			t.Fatalf("owned node %s: resv %q state %q", id, n.Reservation, n.ProvisionState)
		case !mine[id] && (n.Reservation != "dead-one" || n.ProvisionState != fsm.Cleaning):
			t.Fatalf("peer's node %s taken: resv %q state %q", id, n.Reservation, n.ProvisionState)
		case mine[id]:
			taken++
		}
	}
	if taken == 0 || taken == 40 {
		t.Fatalf("took %d of 40 nodes; the ring should split them", taken)
	}
	if c, _ := e.st.Conductors().GetConductor(e.ctx, "dead-one"); !c.Online {
		t.Fatal("dead conductor marked offline while the peer has its locks to take")
	}

	clk.Advance(2 * time.Hour) // the peer dies too
	if err := e.c.BreakDeadLocks(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if n := e.get(id); n.Reservation != "" || n.ProvisionState != fsm.CleanFailed {
			t.Fatalf("node %s after the peer died: resv %q state %q", id, n.Reservation, n.ProvisionState)
		}
	}
	if c, _ := e.st.Conductors().GetConductor(e.ctx, "dead-one"); c.Online {
		t.Fatal("dead conductor still online after every lock was taken")
	}
}

// Wait-state timeouts run on the node's owner only: with a live peer this
// conductor times out its share; once the peer is dead, the rest.
func TestTimeoutsByRing(t *testing.T) {
	e, clk := newClockEnv(t)
	if err := e.st.Conductors().RegisterConductor(e.ctx, &model.Conductor{Hostname: "peer", Drivers: []string{"fake-hardware"}}); err != nil {
		t.Fatal(err)
	}
	r := ring.New([]ring.Member{{Host: "test-conductor"}, {Host: "peer"}}, 0, 1)
	mine := map[string]bool{}
	for i := 0; i < 24; i++ {
		id := e.create(model.JSON{"fake_wait": "deploy"}).UUID
		mine[id] = r.Owner(id, "") == "test-conductor"
		e.must(id, "manage", fsm.Manageable)
		e.must(id, "provide", fsm.Available)
		e.must(id, "active", fsm.DeployWait)
	}
	clk.Advance(31 * time.Minute)
	if err := e.st.Conductors().HeartbeatConductor(e.ctx, "peer", clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CheckTimeouts(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	failed := 0
	for id, own := range mine {
		st := e.get(id).ProvisionState
		if own != (st == fsm.DeployFailed) || !own && st != fsm.DeployWait {
			t.Fatalf("node %s (owned: %v) is %s", id, own, st)
		}
		if own {
			failed++
		}
	}
	if failed == 0 || failed == len(mine) {
		t.Fatalf("%d of %d timed out; the ring should split them", failed, len(mine))
	}
	clk.Advance(2 * time.Hour) // the peer is dead now
	if err := e.c.CheckTimeouts(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	for id := range mine {
		if st := e.get(id).ProvisionState; st != fsm.DeployFailed {
			t.Fatalf("node %s is %s after the peer died", id, st)
		}
	}
}
