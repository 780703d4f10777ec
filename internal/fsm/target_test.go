package fsm_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// TestNextTargets pins the target rule of Next, scenario by scenario: the
// state's default, none in a stable state, manageable through a manual clean.
func TestNextTargets(t *testing.T) {
	tests := []struct {
		name                string
		from, event, target string // target: the node's target before the event
		to, toTarget        string
	}{
		{"manage from enroll heads for manageable", fsm.Enroll, fsm.EvManage, "", fsm.Verifying, fsm.Manageable},
		{"verified: stable, no target", fsm.Verifying, fsm.EvDone, fsm.Manageable, fsm.Manageable, ""},
		{"verification failed: back to enroll, no target", fsm.Verifying, fsm.EvFail, fsm.Manageable, fsm.Enroll, ""},
		{"provide starts an automated clean", fsm.Manageable, fsm.EvProvide, "", fsm.Cleaning, fsm.Available},
		{"clean starts a manual clean", fsm.Manageable, fsm.EvClean, "", fsm.Cleaning, fsm.Manageable},
		{"manual clean waits", fsm.Cleaning, fsm.EvWait, fsm.Manageable, fsm.CleanWait, fsm.Manageable},
		{"manual clean resumes", fsm.CleanWait, fsm.EvResume, fsm.Manageable, fsm.Cleaning, fsm.Manageable},
		{"manual clean holds", fsm.Cleaning, fsm.EvHold, fsm.Manageable, fsm.CleanHold, fsm.Manageable},
		{"manual clean unheld", fsm.CleanHold, fsm.EvUnhold, fsm.Manageable, fsm.CleanWait, fsm.Manageable},
		{"manual clean fails", fsm.Cleaning, fsm.EvFail, fsm.Manageable, fsm.CleanFailed, fsm.Manageable},
		{"manual clean times out", fsm.CleanWait, fsm.EvFail, fsm.Manageable, fsm.CleanFailed, fsm.Manageable},
		{"manual clean aborted while waiting", fsm.CleanWait, fsm.EvAbort, fsm.Manageable, fsm.CleanFailed, fsm.Manageable},
		{"manual clean aborted while held", fsm.CleanHold, fsm.EvAbort, fsm.Manageable, fsm.CleanFailed, fsm.Manageable},
		{"manual clean done", fsm.Cleaning, fsm.EvManage, fsm.Manageable, fsm.Manageable, ""},
		{"failed manual clean recovered", fsm.CleanFailed, fsm.EvManage, fsm.Manageable, fsm.Manageable, ""},
		{"automated clean waits", fsm.Cleaning, fsm.EvWait, fsm.Available, fsm.CleanWait, fsm.Available},
		{"automated clean aborted", fsm.CleanWait, fsm.EvAbort, fsm.Available, fsm.CleanFailed, fsm.Available},
		{"automated clean unheld", fsm.CleanHold, fsm.EvUnhold, fsm.Available, fsm.CleanWait, fsm.Available},
		{"automated clean done", fsm.Cleaning, fsm.EvDone, fsm.Available, fsm.Available, ""},
		{"tear-down cleans towards available", fsm.Deleting, fsm.EvClean, fsm.Available, fsm.Cleaning, fsm.Available},
		{"deploy heads for active", fsm.Available, fsm.EvDeploy, "", fsm.Deploying, fsm.Active},
		{"deploy waits", fsm.Deploying, fsm.EvWait, fsm.Active, fsm.DeployWait, fsm.Active},
		{"deploy aborted keeps active", fsm.DeployWait, fsm.EvAbort, fsm.Active, fsm.DeployFailed, fsm.Active},
		{"deployed", fsm.Deploying, fsm.EvDone, fsm.Active, fsm.Active, ""},
		{"undeploy heads for available", fsm.Active, fsm.EvDelete, "", fsm.Deleting, fsm.Available},
		{"failed tear-down: error, no target", fsm.Deleting, fsm.EvFail, fsm.Available, fsm.Error, ""},
		{"rescue heads for rescue", fsm.Active, fsm.EvRescue, "", fsm.Rescuing, fsm.Rescue},
		{"unrescue heads for active", fsm.Rescue, fsm.EvUnrescue, "", fsm.Unrescuing, fsm.Active},
		{"inspection failed keeps manageable", fsm.Inspecting, fsm.EvFail, fsm.Manageable, fsm.InspectFailed, fsm.Manageable},
		{"manageable is not a manual clean outside cleaning", fsm.InspectWait, fsm.EvAbort, fsm.Manageable, fsm.InspectFailed, fsm.Manageable},
		{"service abandoned: back to active, no target", fsm.ServiceFailed, fsm.EvAbort, fsm.Active, fsm.Active, ""},
		{"available taken out of the pool", fsm.Available, fsm.EvManage, "", fsm.Manageable, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			to, target, ok := fsm.Next(tc.from, tc.event, tc.target)
			if !ok || to != tc.to || target != tc.toTarget {
				t.Errorf("Next(%q, %q, %q) = %q, %q, %v; want %q, %q, true",
					tc.from, tc.event, tc.target, to, target, ok, tc.to, tc.toTarget)
			}
		})
	}
	if to, target, ok := fsm.Next(fsm.Enroll, fsm.EvDeploy, fsm.Active); ok || to != "" || target != "" {
		t.Errorf("forbidden event: Next = %q, %q, %v; want zero values", to, target, ok)
	}
}

// TestNextTargetsMatchReference checks every transition of Ironic's machine
// entered from its source state's own target: the new target is the
// reference's default target of the new state (none for a stable one). The
// one exception is the manual clean, which TestNextTargets pins.
func TestNextTargetsMatchReference(t *testing.T) {
	ref := loadReference(t)
	def := map[string]string{}
	stable := map[string]bool{}
	for _, s := range ref.States {
		if s.Target != nil {
			def[s.Name] = *s.Target
		}
		stable[s.Name] = s.Stable
	}
	for _, rt := range ref.Transitions {
		if rt.Start == fsm.Manageable && rt.Event == fsm.EvClean {
			continue
		}
		want := def[rt.End]
		if stable[rt.End] {
			want = ""
		}
		to, target, ok := fsm.Next(rt.Start, rt.Event, def[rt.Start])
		if !ok || to != rt.End || target != want {
			t.Errorf("Next(%q, %q, %q) = %q, %q, %v; want %q, %q", rt.Start, rt.Event, def[rt.Start], to, target, ok, rt.End, want)
		}
	}
}

// TestNextTargetsObserved replays the provision-state sequences a real
// Ironic 21.4 showed (the table in ironic-21.4-observed.md, written as
// state/target with "-" for none): the first step is the row's API verb,
// each later step the one event leading to the next state, and every
// state and target must be what Ironic showed.
func TestNextTargetsObserved(t *testing.T) {
	text := string(readReference(t, "ironic-21.4-observed.md"))
	tick := regexp.MustCompile("`([^`]*)`")
	replayed := 0
	for _, line := range strings.Split(text, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) != 5 {
			continue
		}
		verbCol := tick.FindStringSubmatch(cols[2])
		if verbCol == nil {
			continue
		}
		verb, ok := fsm.LookupVerb(verbCol[1])
		if !ok {
			continue
		}
		var seq [][2]string // state, target
		for _, m := range tick.FindAllStringSubmatch(cols[3], -1) {
			state, target, found := strings.Cut(m[1], "/")
			if !found || !fsm.IsState(state) {
				continue
			}
			if target == "-" {
				target = ""
			}
			seq = append(seq, [2]string{state, target})
		}
		if len(seq) < 2 {
			continue
		}
		replayed++
		t.Run(strings.TrimSpace(cols[1]), func(t *testing.T) {
			for i := 1; i < len(seq); i++ {
				from, target, want := seq[i-1][0], seq[i-1][1], seq[i]
				event := verb.Event
				if i > 1 {
					event = eventTo(t, from, want[0])
				}
				to, toTarget, ok := fsm.Next(from, event, target)
				if !ok || to != want[0] || toTarget != want[1] {
					t.Fatalf("step %d: Next(%q, %q, %q) = %q/%q, %v; Ironic showed %s/%s",
						i, from, event, target, to, toTarget, ok, want[0], want[1])
				}
			}
		})
	}
	if replayed < 12 {
		t.Fatalf("replayed %d observed sequences; the table has at least 12", replayed)
	}
}

// eventTo finds the one event leading from state from to state to.
func eventTo(t *testing.T, from, to string) string {
	t.Helper()
	var found []string
	for _, ev := range fsm.Events(from) {
		if next, _, _ := fsm.Next(from, ev, ""); next == to {
			found = append(found, ev)
		}
	}
	if len(found) != 1 {
		t.Fatalf("events from %q to %q: %q; want exactly one", from, to, found)
	}
	return found[0]
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name, from, target, event string
		ok                        bool
	}{
		{"verified", fsm.Verifying, fsm.Manageable, fsm.EvDone, true},
		{"automated clean", fsm.Cleaning, fsm.Available, fsm.EvDone, true},
		{"manual clean", fsm.Cleaning, fsm.Manageable, fsm.EvManage, true},
		{"deploy", fsm.Deploying, fsm.Active, fsm.EvDone, true},
		{"inspection", fsm.Inspecting, fsm.Manageable, fsm.EvDone, true},
		{"rescue", fsm.Rescuing, fsm.Rescue, fsm.EvDone, true},
		{"unrescue", fsm.Unrescuing, fsm.Active, fsm.EvDone, true},
		{"service", fsm.Servicing, fsm.Active, fsm.EvDone, true},
		{"adoption", fsm.Adopting, fsm.Active, fsm.EvDone, true},
		{"no event from a wait state to its target", fsm.DeployWait, fsm.Active, "", false},
		{"no target", fsm.Cleaning, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ev, ok := fsm.Finish(tc.from, tc.target); ev != tc.event || ok != tc.ok {
				t.Errorf("Finish(%q, %q) = %q, %v; want %q, %v", tc.from, tc.target, ev, ok, tc.event, tc.ok)
			}
		})
	}
}
