package conductor

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// A flow that raises an event its state forbids is a conductor bug: advance
// must not leave the node silently stuck in a transient state.
func TestAdvanceRecordsForbiddenEvent(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &Conductor{cfg: Config{Host: "h"}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return now }}
	tests := []struct {
		name, state, target, event string
		wantState, wantTarget      string
	}{
		{"failed where the machine has a fail event", fsm.Deploying, fsm.Active, fsm.EvManage, fsm.DeployFailed, fsm.Active},
		{"kept where it has none", fsm.Active, "", fsm.EvDone, fsm.Active, ""},
		{"no event at all", fsm.Cleaning, fsm.Available, "", fsm.CleanFailed, fsm.Available},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tk := &task{c: c, node: &model.Node{UUID: "u1", ProvisionState: tc.state, TargetProvisionState: tc.target}}
			tk.advance(tc.event)
			n := tk.node
			if n.ProvisionState != tc.wantState || n.TargetProvisionState != tc.wantTarget {
				t.Errorf("state %s/%s, want %s/%s", n.ProvisionState, n.TargetProvisionState, tc.wantState, tc.wantTarget)
			}
			if !strings.HasPrefix(n.LastError, "Internal error: the conductor raised event") {
				t.Errorf("last_error %q", n.LastError)
			}
			if last := tk.history[len(tk.history)-1]; last.Severity != model.SeverityError || last.Event != n.LastError {
				t.Errorf("last history entry %+v", last)
			}
		})
	}
	t.Run("an allowed event moves the node", func(t *testing.T) {
		tk := &task{c: c, node: &model.Node{UUID: "u1", ProvisionState: fsm.Cleaning, TargetProvisionState: fsm.Manageable}}
		tk.advance(fsm.EvWait)
		if n := tk.node; n.ProvisionState != fsm.CleanWait || n.TargetProvisionState != fsm.Manageable || n.LastError != "" {
			t.Errorf("after wait: %s/%s last_error %q", n.ProvisionState, n.TargetProvisionState, n.LastError)
		}
	})
}
