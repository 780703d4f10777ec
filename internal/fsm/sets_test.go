package fsm_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
)

func TestVerbsMatchIronic(t *testing.T) {
	ref := loadReference(t)
	ironic := map[string]string{}
	for _, v := range fsm.Verbs() {
		if v.Target == "rebuild" {
			continue
		}
		if _, dup := ironic[v.Target]; dup {
			t.Errorf("target %q listed twice", v.Target)
		}
		ironic[v.Target] = v.Event
	}
	if !maps.Equal(ironic, ref.Verbs) {
		t.Errorf("Verbs() minus rebuild = %v; Ironic's VERBS = %v", ironic, ref.Verbs)
	}
	for _, v := range fsm.Verbs() {
		if !slices.Contains(fsm.AllEvents(), v.Event) {
			t.Errorf("verb %q raises unknown event %q", v.Target, v.Event)
		}
		if got, ok := fsm.LookupVerb(v.Target); !ok || got != v {
			t.Errorf("LookupVerb(%q) = %+v, %v; want %+v", v.Target, got, ok, v)
		}
	}
	if v, ok := fsm.LookupVerb("rebuild"); !ok || v.Event != fsm.EvRebuild || v.MinMinor != 1 {
		t.Errorf("LookupVerb(rebuild) = %+v, %v; want the API-only rebuild verb", v, ok)
	}
	for _, bogus := range []string{"", "bogus", "done", "fail", "Active"} {
		if v, ok := fsm.LookupVerb(bogus); ok {
			t.Errorf("LookupVerb(%q) = %+v, true", bogus, v)
		}
	}
}

func TestVerbMicroversions(t *testing.T) {
	old := loadJSON[release214](t, "ironic-fsm-21.4.json")
	// Ironic 21.4 keys its gates by event but looks them up by target, so a
	// gate applies to the target spelled like the key.
	for key, version := range old.MinVersion {
		v, ok := fsm.LookupVerb(key)
		if !ok {
			continue // "delete": no target is spelled so
		}
		if want := "1." + strconv.Itoa(v.MinMinor); want != version {
			t.Errorf("verb %q: min version 1.%d; Ironic 21.4 gates it at %s", key, v.MinMinor, version)
		}
	}
	tests := []struct {
		target string
		minor  int
		want   bool
	}{
		{"active", 1, true}, {"deleted", 1, true}, {"rebuild", 1, true},
		{"deploy", 72, false}, {"deploy", 73, true}, {"undeploy", 72, false}, {"undeploy", 73, true},
		{"manage", 3, false}, {"manage", 4, true}, {"provide", 4, true}, {"inspect", 5, false},
		{"abort", 13, true}, {"clean", 14, false}, {"adopt", 17, true}, {"rescue", 37, false},
		{"unrescue", 38, true}, {"unhold", 84, false}, {"unhold", 85, true},
		{"service", 86, false}, {"service", 87, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s at 1.%d", tc.target, tc.minor), func(t *testing.T) {
			v, ok := fsm.LookupVerb(tc.target)
			if !ok {
				t.Fatalf("no verb %q", tc.target)
			}
			if got := v.AllowedAt(tc.minor); got != tc.want {
				t.Errorf("AllowedAt(%d) = %v; want %v", tc.minor, got, tc.want)
			}
		})
	}
}

// TestStateSets checks every predicate over every state against its
// members, taken from Ironic 21.4's dump plus master's additions.
func TestStateSets(t *testing.T) {
	old := loadJSON[release214](t, "ironic-fsm-21.4.json")
	tests := []struct {
		name    string
		pred    func(string) bool
		members []string
	}{
		{"stable", fsm.IsStable, old.StableStates},
		{"failure: *failed and error", fsm.IsFailure,
			append(slices.Clone(old.FailureStates), fsm.ServiceFailed, fsm.Error)},
		{"wait", fsm.IsWait,
			[]string{fsm.DeployWait, fsm.CleanWait, fsm.InspectWait, fsm.RescueWait, fsm.ServiceWait}},
		{"hold", fsm.IsHold, []string{fsm.DeployHold, fsm.CleanHold, fsm.ServiceHold}},
		{"delete allowed: DELETE_ALLOWED_STATES and available", fsm.DeleteAllowed,
			append(slices.Clone(old.DeleteAllowed), fsm.Available)},
		{"update allowed: master adds service hold and failed", fsm.UpdateAllowed,
			append(slices.Clone(old.UpdateAllowed), fsm.ServiceHold, fsm.ServiceFailed)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range tc.members {
				if !fsm.IsState(m) {
					t.Errorf("member %q is not a state", m)
				}
			}
			for _, s := range fsm.States() {
				if got, want := tc.pred(s.Name), slices.Contains(tc.members, s.Name); got != want {
					t.Errorf("%q: got %v, want %v", s.Name, got, want)
				}
			}
			if tc.pred("bogus") || tc.pred("") {
				t.Error("true for a string that is not a state")
			}
		})
	}
	for _, s := range old.UnstableStates {
		if fsm.IsStable(s) {
			t.Errorf("IsStable(%q) = true; Ironic 21.4 lists it unstable", s)
		}
	}
	if got, want := fsm.UpdateAllowedStates(), append(slices.Clone(old.UpdateAllowed), fsm.ServiceHold, fsm.ServiceFailed); !slices.Equal(got, want) {
		t.Errorf("UpdateAllowedStates() = %q; want %q", got, want)
	}
}

// TestDeleteAllowedMessage rebuilds the tuple Ironic prints in its 409 for a
// refused delete, as observed on Ironic 21.4.
func TestDeleteAllowedMessage(t *testing.T) {
	var quoted []string
	for _, s := range fsm.DeleteAllowedStates() {
		quoted = append(quoted, "'"+s+"'")
	}
	got := "(" + strings.Join(quoted, ", ") + ")"
	if want := "('manageable', 'enroll', 'adopt failed', 'available')"; got != want {
		t.Errorf("delete-allowed tuple = %s; want %s", got, want)
	}
}

func TestPower(t *testing.T) {
	old := loadJSON[release214](t, "ironic-fsm-21.4.json")
	targets := slices.Sorted(maps.Values(old.PowerStates))
	if got := slices.Sorted(slices.Values(fsm.PowerTargets())); !slices.Equal(got, targets) {
		t.Errorf("PowerTargets() = %q; Ironic's power states = %q", got, targets)
	}
	tests := []struct {
		target string
		ok     bool
		result string
	}{
		{fsm.PowerOn, true, fsm.PowerOn},
		{fsm.PowerOff, true, fsm.PowerOff},
		{fsm.Rebooting, true, fsm.PowerOn},
		{fsm.SoftRebooting, true, fsm.PowerOn},
		{fsm.SoftPowerOff, true, fsm.PowerOff},
		{fsm.PowerError, false, ""},
		{"bogus", false, ""},
		{"", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			if got := fsm.IsPowerTarget(tc.target); got != tc.ok {
				t.Errorf("IsPowerTarget = %v; want %v", got, tc.ok)
			}
			if got := fsm.PowerResult(tc.target); got != tc.result {
				t.Errorf("PowerResult = %q; want %q", got, tc.result)
			}
		})
	}
}

// The conductor's state sets: lookups are expected exactly where a ramdisk
// runs an operation (an unstable, non-failure, non-hold state), and an
// interface update is allowed only where no instance is deployed or work
// in flight beyond inspection.
func TestConductorStateSets(t *testing.T) {
	for _, s := range fsm.LookupAllowedStates() {
		if !fsm.IsState(s) || fsm.IsStable(s) || fsm.IsFailure(s) || fsm.IsHold(s) {
			t.Errorf("lookup allowed in %q: not an operation in progress", s)
		}
	}
	for _, s := range []string{fsm.Active, fsm.Available, fsm.DeployHold, fsm.CleanFailed, fsm.Verifying} {
		if fsm.LookupAllowed(s) {
			t.Errorf("LookupAllowed(%q) = true", s)
		}
	}
	for _, s := range fsm.States() {
		if fsm.IsWait(s.Name) && !fsm.LookupAllowed(s.Name) {
			t.Errorf("wait state %q does not accept the agent's lookup", s.Name)
		}
	}
	want := []string{"enroll", "inspecting", "inspect wait", "manageable", "available"}
	if got := fsm.InterfaceUpdateAllowedStates(); !slices.Equal(got, want) {
		t.Errorf("InterfaceUpdateAllowedStates() = %q; Ironic's update_node allows %q", got, want)
	}
	if fsm.InterfaceUpdateAllowed(fsm.Active) || !fsm.InterfaceUpdateAllowed(fsm.Manageable) {
		t.Error("InterfaceUpdateAllowed disagrees with its list")
	}
}
