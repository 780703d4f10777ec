package fleet

import (
	"slices"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
)

func TestStuck(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		ps    string
		since time.Time
		want  bool
	}{
		{"wait state past the threshold", fsm.DeployWait, now.Add(-31 * time.Minute), true},
		{"wait state within the threshold", fsm.DeployWait, now.Add(-29 * time.Minute), false},
		{"hold state past the threshold", fsm.CleanHold, now.Add(-time.Hour), true},
		{"stable state never sticks", fsm.Active, now.Add(-time.Hour), false},
		{"failure state never sticks", fsm.DeployFailed, now.Add(-time.Hour), false},
		{"unknown time", fsm.Deploying, time.Time{}, false},
		{"unknown state", "", now.Add(-time.Hour), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Stuck(c.ps, c.since, now, DefaultStuckAfter); got != c.want {
				t.Errorf("Stuck(%q) = %t, want %t", c.ps, got, c.want)
			}
		})
	}
	states := StuckStates()
	for _, s := range []string{fsm.Deploying, fsm.DeployWait, fsm.CleanWait, fsm.Verifying} {
		if !slices.Contains(states, s) {
			t.Errorf("StuckStates lacks %q", s)
		}
	}
	for _, s := range []string{fsm.Available, fsm.Active, fsm.Error, fsm.CleanFailed} {
		if slices.Contains(states, s) {
			t.Errorf("StuckStates has %q", s)
		}
	}
}
