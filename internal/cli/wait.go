package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// Waiter waits for nodes to reach a state. It is the seam between the
// commands (--wait, `node wait`) and how they learn about changes: Poller
// (poll.go) asks the API again and again; a watch-stream waiter can
// replace it without touching the commands.
type Waiter interface {
	// Wait returns one Outcome per node, in order, once every node has
	// reached want, failed, or the timeout (or ctx) ended the wait.
	Wait(ctx context.Context, nodes []string, want Want) []Outcome
}

// Want is what a wait is for: a provision state, or else a power state.
type Want struct {
	Provision string
	Power     string
	Timeout   time.Duration // 0: until ctx ends
	// Done, when set, is called once per node as soon as it has settled.
	Done func(i int, o Outcome)
	// Progress, when set, is called with a node's progress reports (its
	// history entries of type "progress": a BMC that does not answer...)
	// as they come. Only the stream has them; polling does not call it.
	Progress func(i int, msg string)
}

func (w Want) state() string {
	if w.Provision != "" {
		return w.Provision
	}
	return w.Power
}

// Outcome is how a wait ended for one node.
type Outcome struct {
	State string // the state the node was last seen in
	Err   error  // nil when the node reached the wanted state
}

// nodeSnap is what a waiter knows of a node at one moment.
type nodeSnap struct {
	UUID, Name                      string
	ProvisionState, TargetProvision string
	PowerState, TargetPower         string
	LastError, Reservation          string
}

// snapFields are the node fields a waiter reads.
const snapFields = "uuid,name,provision_state,target_provision_state,power_state,target_power_state,last_error,reservation"

func snapOf(n map[string]any) nodeSnap {
	s := func(k string) string { v, _ := n[k].(string); return v }
	return nodeSnap{UUID: s("uuid"), Name: s("name"), ProvisionState: s("provision_state"),
		TargetProvision: s("target_provision_state"), PowerState: s("power_state"),
		TargetPower: s("target_power_state"), LastError: s("last_error"), Reservation: s("reservation")}
}

// WaitError says why a node did not reach the state it was waited for;
// the messages are python-ironicclient's, plus the node's last_error.
type WaitError struct {
	Node, Want, State, LastError string
	Timeout                      time.Duration // set when the wait timed out
	Unexpected                   bool          // settled in another stable state
}

func (e *WaitError) Error() string {
	switch {
	case e.Timeout > 0:
		msg := fmt.Sprintf("Node %s failed to reach state %s in %d seconds (it is in state %s)",
			e.Node, e.Want, int(e.Timeout.Seconds()), orNone(e.State))
		if e.LastError != "" {
			msg += ", last error: " + e.LastError
		}
		return msg
	case e.Unexpected:
		msg := fmt.Sprintf("Node %s failed to reach state %s. It's in unexpected stable state %s", e.Node, e.Want, orNone(e.State))
		if e.LastError != "" {
			msg += ", and has error: " + e.LastError
		}
		return msg
	}
	return fmt.Sprintf("Node %s failed to reach state %s. It's in state %s, and has error: %s",
		e.Node, e.Want, orNone(e.State), orNone(e.LastError))
}

func orNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

// judge decides whether a snapshot ends the wait: done with a nil error
// when the node reached want, done with a *WaitError when it cannot any
// more, not done otherwise. A stable provision state counts as reached
// once the conductor let go of the node (no target, no reservation), so
// the next command does not meet a lock.
func judge(ident string, n nodeSnap, want Want) (bool, error) {
	if want.Provision != "" {
		ps := n.ProvisionState
		fail := &WaitError{Node: ident, Want: want.Provision, State: ps, LastError: n.LastError}
		switch {
		case ps == want.Provision:
			if !fsm.IsStable(ps) || (n.TargetProvision == "" && n.Reservation == "") {
				return true, nil
			}
		case ps == fsm.Error || strings.HasSuffix(ps, " failed"):
			return true, fail
		case n.TargetProvision == "" && n.Reservation == "":
			fail.Unexpected = true
			return true, fail
		}
		return false, nil
	}
	fail := &WaitError{Node: ident, Want: want.Power, State: n.PowerState, LastError: n.LastError}
	switch {
	case n.TargetPower != "":
		return false, nil
	case n.PowerState == want.Power:
		return true, nil
	case n.PowerState == fsm.PowerError:
		return true, fail
	case n.Reservation == "":
		fail.Unexpected = true
		return true, fail
	}
	return false, nil
}

// nodeWaitCmd is `anvil node wait NODE... --for STATE [--timeout S]`.
func (a *app) nodeWaitCmd() *cobra.Command {
	var state, timeout string
	var out outputOpts
	cmd := &cobra.Command{
		Use:   "wait <node> [<node> ...] --for <state> [--timeout <seconds>]",
		Short: "Wait for nodes to reach a provision state (or a power state: 'power on', 'power off')",
		Long: "Wait for nodes to reach a provision state, or the power state 'power on' or 'power off'.\n" +
			"Exits 0 once every node is there; exits 1 as soon as a node fails (an error state, a\n" +
			"'* failed' state, or another stable state), or when the timeout passes, printing the\n" +
			"node's state and last_error.",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeNodes,
	}
	cmd.Flags().StringVar(&state, "for", "", "the state to wait for [REQUIRED]")
	cmd.Flags().StringVar(&timeout, "timeout", "", "give up after this many seconds (or a duration like 10m); default: no limit")
	_ = cmd.MarkFlagRequired("for")
	_ = cmd.RegisterFlagCompletionFunc("for", completeWaitStates)
	addListOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		want := Want{}
		switch {
		case state == fsm.PowerOn || state == fsm.PowerOff:
			want.Power = state
		case fsm.IsState(state):
			want.Provision = state
		default:
			return usageErrorf("unknown state %q: give a provision state or 'power on' / 'power off'", state)
		}
		if timeout != "" {
			d, ok := parseSeconds(timeout)
			if !ok {
				var err error
				if d, err = time.ParseDuration(timeout); err != nil || d < 0 {
					return usageErrorf("invalid --timeout %q: want seconds or a duration like 10m", timeout)
				}
			}
			want.Timeout = d
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		if len(args) == 1 {
			return a.waiter(c).Wait(ctx, args, want)[0].Err
		}
		targets := make([]target, len(args))
		results := make([]nodeResult, len(args))
		for i, n := range args {
			targets[i], results[i].started = target{ident: n, show: n}, true
		}
		prog := newProgress(a.env.Stderr, a.env.IsTerminal(a.env.Stderr), "wait", len(args))
		a.waitBatch(ctx, c, action{name: "wait", want: want}, targets, results, prog)
		prog.finish()
		return a.report(&batchOpts{out: out}, action{name: "wait"}, targets, results)
	})
	return cmd
}
