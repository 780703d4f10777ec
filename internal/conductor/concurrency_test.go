package conductor_test

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// 50 goroutines send conflicting verbs to one node: no forbidden transition,
// no lost write (history is one unbroken chain), no reservation left behind.
func TestConflictingVerbs(t *testing.T) {
	e := newEnv(t, func(c *conductor.Config) { c.HistoryLimit = 1 << 20 })
	id := e.create(model.JSON{}).UUID
	verbs := []string{"manage", "provide", "active", "deleted", "inspect", "rescue", "unrescue",
		"abort", "rebuild", "clean", "adopt", "undeploy", "deploy"}
	// On a loaded machine most verbs of a round can meet the node locked
	// (409): rounds repeat, at most five, until it has moved enough.
	for round := 0; round < 5 && e.moves(id) < 5; round++ {
		e.raceVerbs(t, id, verbs, int64(round)*50)
	}
	n := e.get(id)
	if n.Reservation != "" {
		t.Fatalf("reservation %q left behind", n.Reservation)
	}
	hist, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	prev := fsm.Enroll
	moves := 0
	for _, h := range hist {
		if h.FromState == "" {
			continue
		}
		moves++
		if to, _, ok := fsm.Next(h.FromState, h.Trigger, ""); !ok || to != h.ToState {
			t.Fatalf("forbidden transition recorded: %s --%s--> %s", h.FromState, h.Trigger, h.ToState)
		}
		if h.FromState != prev {
			t.Fatalf("history chain broken (a lost write): previous state %q, next entry starts at %q", prev, h.FromState)
		}
		prev = h.ToState
	}
	if prev != n.ProvisionState {
		t.Fatalf("history ends in %q, node is in %q", prev, n.ProvisionState)
	}
	if moves < 5 {
		t.Fatalf("only %d transitions happened; the test did not exercise the node", moves)
	}
	t.Logf("%d transitions, final state %s", moves, n.ProvisionState)
}

// raceVerbs sends 50 goroutines × 20 random verbs at node id and waits for
// the conductor to be idle; an error other than a refusal fails t.
func (e *env) raceVerbs(t *testing.T, id string, verbs []string, seed int64) {
	var wg sync.WaitGroup
	errs := make(chan error, 50*20)
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 20; i++ {
				v := verbs[r.Intn(len(verbs))]
				req := conductor.ProvisionRequest{Target: v, Minor: 89}
				switch v {
				case "rescue":
					pw := "pw"
					req.RescuePassword = &pw
				case "clean":
					req.CleanSteps = []model.JSON{{"interface": "deploy", "step": "erase_devices"}}
				}
				err := e.c.Provision(e.ctx, id, req)
				switch fault.KindOf(err) {
				case 0:
					if err != nil {
						errs <- fmt.Errorf("%s: unexpected error %v", v, err)
					}
				case fault.Invalid, fault.Conflict, fault.Unavailable:
				default:
					errs <- fmt.Errorf("%s: unexpected fault %v", v, err)
				}
			}
		}(seed + int64(g))
	}
	wg.Wait()
	e.c.WaitIdle()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// moves counts node id's recorded transitions.
func (e *env) moves(id string) int {
	hist, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, h := range hist {
		if h.FromState != "" {
			n++
		}
	}
	return n
}
