package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/pkg/events"
)

// TestReportChanges: the demo's progress lines are the stream's updates,
// each provision transition as it happened (verifying → manageable, then
// inspecting...), power changes in parentheses, last_error on the
// transition that set it; snapshots and other events print nothing.
func TestReportChanges(t *testing.T) {
	start := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	upd := func(sec float64, name string, from, to events.NodeState) events.Event {
		return events.Event{Type: events.TypeUpdated, Name: name, Time: start.Add(time.Duration(sec * float64(time.Second))),
			Previous: &from, State: &to}
	}
	st := func(prov, power, lastErr string) events.NodeState {
		return events.NodeState{ProvisionState: prov, PowerState: power, LastError: lastErr}
	}
	ch := make(chan events.Event, 8)
	ch <- events.Event{Type: events.TypeSnapshot, Name: "demo-0", State: &events.NodeState{ProvisionState: "enroll"}}
	ch <- upd(0.5, "demo-0", st("enroll", "power off", ""), st("verifying", "power off", ""))
	ch <- upd(1, "demo-0", st("verifying", "power off", ""), st("manageable", "power off", ""))
	ch <- upd(2, "demo-0", st("inspecting", "power off", ""), st("inspecting", "power on", ""))
	ch <- upd(30, "demo-0", st("inspect wait", "power on", ""), st("inspect failed", "power off", "Timeout reached"))
	ch <- events.Event{Type: events.TypeError, Error: "lost connection to http://127.0.0.1:1"}
	close(ch)
	var out bytes.Buffer
	reportChanges(ch, &out, start)
	want := strings.Join([]string{
		"  [   0.5s] demo-0: enroll → verifying",
		"  [   1.0s] demo-0: verifying → manageable",
		"  [   2.0s] demo-0: (power on)",
		"  [  30.0s] demo-0: inspect wait → inspect failed (power off) last_error: Timeout reached",
		"anvil demo: stopped following the nodes' progress: lost connection to http://127.0.0.1:1",
		""}, "\n")
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
