package conductor_test

import (
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Work a dead conductor left is failed with the target the state machine
// gives: an interrupted manual clean stays headed for manageable, an
// automated one for available.
func TestTakeOverKeepsTheTarget(t *testing.T) {
	for _, target := range []string{fsm.Manageable, fsm.Available} {
		t.Run(target, func(t *testing.T) {
			e, clk := newClockEnv(t)
			id := e.create(nil).UUID
			if err := e.st.Conductors().RegisterConductor(e.ctx, &model.Conductor{Hostname: "dead-one"}); err != nil {
				t.Fatal(err)
			}
			n, err := e.st.Nodes().ReserveNode(e.ctx, id, "dead-one")
			if err != nil {
				t.Fatal(err)
			}
			n.ProvisionState, n.TargetProvisionState = fsm.Cleaning, target
			if err := e.st.Nodes().UpdateNode(e.ctx, n); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Hour)
			if err := e.c.BreakDeadLocks(e.ctx); err != nil {
				t.Fatal(err)
			}
			n = e.get(id)
			if n.ProvisionState != fsm.CleanFailed || n.TargetProvisionState != target || n.Reservation != "" {
				t.Fatalf("after take over: %s/%s resv %q", n.ProvisionState, n.TargetProvisionState, n.Reservation)
			}
			// The interrupted work is diagnosed as any failure.
			if d := diagnosisOf(t, e, id); d.ProvisionState != fsm.CleanFailed || d.FromState != fsm.Cleaning || d.LastError != n.LastError {
				t.Fatalf("diagnosis after take over: %+v", d)
			}
		})
	}
}
