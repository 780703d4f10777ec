package conductor

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// TestOperationsCoverTheStateMachine: the operations table names every wait
// and hold state of the state machine once, each operation's states are
// the machine's, and every state an abort leaves (but abandoning a failed
// service) belongs to an operation.
func TestOperationsCoverTheStateMachine(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range operations {
		for _, s := range []string{op.running, op.wait, op.hold} {
			if s == "" {
				continue
			}
			if !fsm.IsState(s) {
				t.Errorf("%s: %q is not a state", op.name, s)
			}
			if seen[s] {
				t.Errorf("%q is in two operations", s)
			}
			seen[s] = true
		}
		if !fsm.IsWait(op.wait) {
			t.Errorf("%s: %q is not a wait state", op.name, op.wait)
		}
		if op.hold != "" && !fsm.IsHold(op.hold) {
			t.Errorf("%s: %q is not a hold state", op.name, op.hold)
		}
		if op.timeout == nil || op.timeoutText == nil || op.abortText == nil || op.resume == nil {
			t.Errorf("%s: incomplete", op.name)
		}
		if (op.limit == nil) != (len(op.startedBy) == 0) {
			t.Errorf("%s: a cap needs the events that start the operation", op.name)
		}
	}
	for _, s := range fsm.States() {
		if (fsm.IsWait(s.Name) || fsm.IsHold(s.Name)) && operationIn(s.Name) == nil {
			t.Errorf("%s: no operation", s.Name)
		}
	}
	for _, tr := range fsm.Transitions() {
		switch tr.Event {
		case fsm.EvAbort:
			if tr.From != fsm.ServiceFailed && operationIn(tr.From) == nil {
				t.Errorf("abort from %s: no operation", tr.From)
			}
		case fsm.EvResume:
			if op := operationIn(tr.From); op == nil || op.wait != tr.From {
				t.Errorf("resume from %s: not an operation's wait state", tr.From)
			}
		}
	}
}
