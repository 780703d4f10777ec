package fleet

import (
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// DefaultStuckAfter is how long a node may stay in a transitional or wait
// state before a report calls it stuck.
const DefaultStuckAfter = 30 * time.Minute

// Failed reports whether a node in provision state ps is failed.
func Failed(ps string) bool { return fsm.IsFailure(ps) }

// PowerError reports whether a node's power state is the error state.
func PowerError(power string) bool { return power == fsm.PowerError }

// CanStick reports whether a node in provision state ps can be stuck: the
// state is known and neither stable nor a failure (transitional, wait and
// hold states).
func CanStick(ps string) bool {
	return fsm.IsState(ps) && !fsm.IsStable(ps) && !fsm.IsFailure(ps)
}

// StuckStates are the provision states in which a node can be stuck, in
// the machine's order.
func StuckStates() []string {
	var out []string
	for _, s := range fsm.States() {
		if CanStick(s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Stuck reports whether a node in provision state ps since the time since
// (zero: unknown) is stuck at now: it can stick and has been there longer
// than after.
func Stuck(ps string, since, now time.Time, after time.Duration) bool {
	return CanStick(ps) && !since.IsZero() && now.Sub(since) > after
}
