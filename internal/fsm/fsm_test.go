package fsm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// reference is Ironic master's machine as dumped in
// testdata/ironic/ironic-fsm-master.json.
type reference struct {
	States []struct {
		Name   string  `json:"name"`
		Stable bool    `json:"stable"`
		Target *string `json:"target"`
	} `json:"states"`
	Transitions []struct {
		Start string `json:"start"`
		Event string `json:"event"`
		End   string `json:"end"`
	} `json:"transitions"`
	Verbs map[string]string `json:"verbs"`
}

// release214 holds the extra facts of ironic-fsm-21.4.json used here.
type release214 struct {
	Verbs          map[string]string `json:"verbs"`
	MinVersion     map[string]string `json:"verb_min_api_version"`
	FailureStates  []string          `json:"failure_states"`
	DeleteAllowed  []string          `json:"delete_allowed_states"`
	UpdateAllowed  []string          `json:"update_allowed_states"`
	PowerStates    map[string]string `json:"power_states"`
	StableStates   []string          `json:"stable_states"`
	UnstableStates []string          `json:"unstable_states"`
}

// readReference reads one of the Ironic reference files kept in the
// repository's testdata/ironic (see testdata/README.md for where they come
// from). A missing file fails the test: the reference is what this package is
// proven against.
func readReference(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ironic", name))
	if err != nil {
		t.Fatalf("reference file missing: %v", err)
	}
	return data
}

func loadJSON[T any](t *testing.T, name string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(readReference(t, name), &v); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return v
}

func loadReference(t *testing.T) reference {
	return loadJSON[reference](t, "ironic-fsm-master.json")
}

func TestStatesMatchIronic(t *testing.T) {
	ref := loadReference(t)
	got := fsm.States()
	if len(got) != 30 || len(ref.States) != 30 {
		t.Fatalf("want 30 states, have %d (reference %d)", len(got), len(ref.States))
	}
	for i, rs := range ref.States {
		want := fsm.StateInfo{Name: rs.Name, Stable: rs.Stable}
		if rs.Target != nil {
			want.Target = *rs.Target
		}
		if info, ok := fsm.Info(rs.Name); !ok || info != want {
			t.Errorf("Info(%q) = %+v, %v; want %+v", rs.Name, info, ok, want)
		}
		if got[i] != want {
			t.Errorf("States()[%d] = %+v; want %+v (Ironic's order)", i, got[i], want)
		}
	}
	seen := map[string]bool{}
	for _, s := range got {
		if seen[s.Name] {
			t.Errorf("state %q listed twice", s.Name)
		}
		seen[s.Name] = true
		if !fsm.IsState(s.Name) {
			t.Errorf("IsState(%q) = false", s.Name)
		}
		if s.Target != "" && !fsm.IsState(s.Target) {
			t.Errorf("state %q targets unknown state %q", s.Name, s.Target)
		}
	}
	for _, bogus := range []string{"", "bogus", "deleted", "deploy", "Active"} {
		if fsm.IsState(bogus) {
			t.Errorf("IsState(%q) = true", bogus)
		}
	}
	got[0].Name = "mutated"
	if fsm.States()[0].Name != fsm.Enroll {
		t.Error("States() shares its backing array with the caller")
	}
}

func TestTransitionsMatchIronic(t *testing.T) {
	ref := loadReference(t)
	got := fsm.Transitions()
	if len(got) != 93 || len(ref.Transitions) != 93 {
		t.Fatalf("want 93 transitions, have %d (reference %d)", len(got), len(ref.Transitions))
	}
	inRef := map[fsm.Transition]bool{}
	for i, rt := range ref.Transitions {
		tr := fsm.Transition{From: rt.Start, Event: rt.Event, To: rt.End}
		inRef[tr] = true
		if got[i] != tr {
			t.Errorf("Transitions()[%d] = %+v; want %+v (reference order)", i, got[i], tr)
		}
	}
	pairs := map[[2]string]bool{}
	for _, tr := range got {
		if !inRef[tr] {
			t.Errorf("transition %+v is not Ironic's", tr)
		}
		key := [2]string{tr.From, tr.Event}
		if pairs[key] {
			t.Errorf("(%q, %q) has two transitions", tr.From, tr.Event)
		}
		pairs[key] = true
		if !fsm.IsState(tr.From) || !fsm.IsState(tr.To) {
			t.Errorf("transition %+v names an unknown state", tr)
		}
		if !slices.Contains(fsm.AllEvents(), tr.Event) {
			t.Errorf("transition %+v uses an event missing from AllEvents", tr)
		}
	}
}

func TestNextAgreesWithTable(t *testing.T) {
	ref := loadReference(t)
	want := map[[2]string]string{}
	events := append(fsm.AllEvents(), "", "bogus", "active", "deleted", "undeploy", "unhold ")
	for _, rt := range ref.Transitions {
		want[[2]string{rt.Start, rt.Event}] = rt.End
		events = append(events, rt.Event)
	}
	states := []string{"", "bogus", "deleted", "available "}
	for _, s := range fsm.States() {
		states = append(states, s.Name)
	}
	allowed := 0
	for _, from := range states {
		for _, ev := range events {
			to, _, ok := fsm.Next(from, ev, "")
			wantTo, wantOK := want[[2]string{from, ev}]
			if to != wantTo || ok != wantOK {
				t.Errorf("Next(%q, %q) = %q, %v; want %q, %v", from, ev, to, ok, wantTo, wantOK)
			}
			if fsm.Allowed(from, ev) != wantOK {
				t.Errorf("Allowed(%q, %q) = %v; want %v", from, ev, !wantOK, wantOK)
			}
		}
		var wantEvents []string
		for _, ev := range fsm.AllEvents() {
			if _, ok := want[[2]string{from, ev}]; ok {
				wantEvents = append(wantEvents, ev)
				allowed++
			}
		}
		slices.Sort(wantEvents)
		if got := fsm.Events(from); !slices.Equal(got, wantEvents) {
			t.Errorf("Events(%q) = %q; want %q", from, got, wantEvents)
		}
	}
	if allowed != 93 {
		t.Errorf("Events over all states allow %d pairs; want 93", allowed)
	}
	if evs := fsm.Events(fsm.Active); len(evs) > 0 {
		evs[0] = "mutated"
		if fsm.Events(fsm.Active)[0] == "mutated" {
			t.Error("Events() shares its backing array with the caller")
		}
	}
}

// TestLifecycles walks the flows an operator drives, as seen on a real
// Ironic, event by event.
func TestLifecycles(t *testing.T) {
	tests := []struct {
		name   string
		from   string
		events []string
		want   []string // state after each event
	}{
		{"enroll to available", fsm.Enroll,
			[]string{fsm.EvManage, fsm.EvDone, fsm.EvProvide, fsm.EvDone},
			[]string{fsm.Verifying, fsm.Manageable, fsm.Cleaning, fsm.Available}},
		{"verification fails back to enroll", fsm.Enroll,
			[]string{fsm.EvManage, fsm.EvFail},
			[]string{fsm.Verifying, fsm.Enroll}},
		{"deploy with call-back", fsm.Available,
			[]string{fsm.EvDeploy, fsm.EvWait, fsm.EvResume, fsm.EvDone},
			[]string{fsm.Deploying, fsm.DeployWait, fsm.Deploying, fsm.Active}},
		{"undeploy cleans", fsm.Active,
			[]string{fsm.EvDelete, fsm.EvClean, fsm.EvDone},
			[]string{fsm.Deleting, fsm.Cleaning, fsm.Available}},
		{"manual clean returns to manageable", fsm.Manageable,
			[]string{fsm.EvClean, fsm.EvWait, fsm.EvResume, fsm.EvManage},
			[]string{fsm.Cleaning, fsm.CleanWait, fsm.Cleaning, fsm.Manageable}},
		{"asynchronous inspection", fsm.Manageable,
			[]string{fsm.EvInspect, fsm.EvWait, fsm.EvAbort, fsm.EvInspect, fsm.EvDone},
			[]string{fsm.Inspecting, fsm.InspectWait, fsm.InspectFailed, fsm.Inspecting, fsm.Manageable}},
		{"rescue and unrescue", fsm.Active,
			[]string{fsm.EvRescue, fsm.EvWait, fsm.EvResume, fsm.EvDone, fsm.EvUnrescue, fsm.EvDone},
			[]string{fsm.Rescuing, fsm.RescueWait, fsm.Rescuing, fsm.Rescue, fsm.Unrescuing, fsm.Active}},
		{"adoption retried", fsm.Manageable,
			[]string{fsm.EvAdopt, fsm.EvFail, fsm.EvAdopt, fsm.EvDone},
			[]string{fsm.Adopting, fsm.AdoptFailed, fsm.Adopting, fsm.Active}},
		{"deploy hold aborted then rebuilt", fsm.Available,
			[]string{fsm.EvDeploy, fsm.EvHold, fsm.EvUnhold, fsm.EvHold, fsm.EvAbort, fsm.EvRebuild},
			[]string{fsm.Deploying, fsm.DeployHold, fsm.DeployWait, fsm.DeployHold, fsm.DeployFailed, fsm.Deploying}},
		{"clean hold released", fsm.Manageable,
			[]string{fsm.EvProvide, fsm.EvHold, fsm.EvUnhold, fsm.EvResume, fsm.EvDone},
			[]string{fsm.Cleaning, fsm.CleanHold, fsm.CleanWait, fsm.Cleaning, fsm.Available}},
		{"failed service aborted back to active", fsm.Active,
			[]string{fsm.EvService, fsm.EvHold, fsm.EvFail, fsm.EvAbort},
			[]string{fsm.Servicing, fsm.ServiceHold, fsm.ServiceFailed, fsm.Active}},
		{"failed tear-down rebuilt from error", fsm.Active,
			[]string{fsm.EvDelete, fsm.EvFail, fsm.EvRebuild, fsm.EvDone},
			[]string{fsm.Deleting, fsm.Error, fsm.Deploying, fsm.Active}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := tc.from
			for i, ev := range tc.events {
				next, _, ok := fsm.Next(state, ev, "")
				if !ok || next != tc.want[i] {
					t.Fatalf("step %d: Next(%q, %q) = %q, %v; want %q", i, state, ev, next, ok, tc.want[i])
				}
				state = next
			}
		})
	}
}

func TestForbidden(t *testing.T) {
	tests := []struct{ name, from, event string }{
		{"deploy before manage", fsm.Enroll, fsm.EvDeploy},
		{"provide from enroll", fsm.Enroll, fsm.EvProvide},
		{"delete while deploying", fsm.Deploying, fsm.EvDelete},
		{"abort while deploying", fsm.Deploying, fsm.EvAbort},
		{"deploy an active node", fsm.Active, fsm.EvDeploy},
		{"manage an active node", fsm.Active, fsm.EvManage},
		{"inspect an available node", fsm.Available, fsm.EvInspect},
		{"unhold a node not held", fsm.CleanWait, fsm.EvUnhold},
		{"service an available node", fsm.Available, fsm.EvService},
		{"provide from clean failed", fsm.CleanFailed, fsm.EvProvide},
		{"verb target is not an event", fsm.Available, "active"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if to, _, ok := fsm.Next(tc.from, tc.event, ""); ok || fsm.Allowed(tc.from, tc.event) {
				t.Errorf("Next(%q, %q) = %q, true; want forbidden", tc.from, tc.event, to)
			}
		})
	}
}
