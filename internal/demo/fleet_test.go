package demo

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// fleetRun is one enroll → active run of a demo fleet through the agent
// path, driven as `anvil node manage|provide|deploy --all --concurrency C
// --wait` drives it (testbin.ProvisionFleet, WaitFleet).
type fleetRun struct {
	Machines    int
	Knobs       bmcemu.Knobs
	Concurrency int // requests in flight
	ImageBytes  int // the image deployed (0: the demo's 4 MiB)
	// Bound returns the most a phase may take for calls BMC calls a node
	// (the phase fails beyond it).
	Bound func(phase string, callsPerNode int) time.Duration
}

// fleetPhase is what one phase cost.
type fleetPhase struct {
	Name     string
	Took     time.Duration
	Calls    int64 // BMC calls the phase made, retries included
	Sessions int64 // Redfish sessions opened during the phase
	CPU      time.Duration
	Times    []time.Duration // each node's, from its accepted request to its end state (1 s resolution)
}

// phaseCalls is an upper estimate of the BMC calls one node makes per
// phase on the redfish driver with the agent (measured at 5% transient
// 503s, retries included: manage 12.8, provide 18.6, deploy 12.1), which
// bounds each phase.
var phaseCalls = map[string]int{"manage": 16, "provide": 24, "deploy": 16}

// phaseVerb, phaseEnd: the provision verb of each phase and the state it ends in.
var (
	phaseVerb = map[string]string{"manage": "manage", "provide": "provide", "deploy": "active"}
	phaseEnd  = map[string]string{"manage": "manageable", "provide": "available", "deploy": "active"}
)

// runFleet starts the demo with the run's fleet and takes every node to
// active; it returns the phases and the running demo (stopped by the
// test's cleanup, or by r.stop).
func runFleet(tb testing.TB, f fleetRun) (*running, []fleetPhase) {
	tb.Helper()
	r := startDemoWith(tb, Config{Machines: f.Machines, BMCPorts: true, Knobs: f.Knobs, ImageBytes: f.ImageBytes})
	emu := r.Fleet
	calls := func() (n int64) {
		for _, m := range emu.Machines() {
			n += m.Status().Calls
		}
		return n
	}
	var phases []fleetPhase
	for _, phase := range []string{"manage", "provide", "deploy"} {
		bound := f.Bound(phase, phaseCalls[phase])
		c0, s0, cpu0 := calls(), emu.FleetSessionStats().Opened, cpuTime()
		start := time.Now()
		deadline := start.Add(bound)
		accepted, err := testbin.ProvisionFleet(tb, r.API, phaseVerb[phase], f.Concurrency, deadline)
		var done map[string]time.Time
		if err == nil {
			done, err = testbin.WaitFleet(tb, r.API, phaseEnd[phase], deadline)
		}
		took := time.Since(start)
		if err != nil {
			tb.Fatalf("%s (bound %v, took %v): %v\nlog:\n%s", phase, bound, took, err, logAbout(r, err.Error(), 40))
		}
		p := fleetPhase{Name: phase, Took: took, Calls: calls() - c0,
			Sessions: emu.FleetSessionStats().Opened - s0, CPU: cpuTime() - cpu0}
		for id, at := range accepted {
			p.Times = append(p.Times, done[id].Sub(at))
		}
		phases = append(phases, p)
	}
	return r, phases
}

// logAbout returns the lines of the demo's log that mention any of the
// nodes' names or UUIDs in msg (the last n).
func logAbout(r *running, msg string, n int) string {
	b, err := os.ReadFile(r.LogFile)
	if err != nil {
		return ""
	}
	var ids []string
	for _, f := range strings.FieldsFunc(msg, func(c rune) bool { return c == ' ' || c == '(' || c == ',' || c == ';' || c == ':' }) {
		if strings.HasPrefix(f, "node-") || len(f) == 36 && strings.Count(f, "-") == 4 {
			ids = append(ids, f)
		}
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, id := range ids {
			if strings.Contains(l, id) {
				lines = append(lines, l)
				break
			}
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fleetSize is ANVIL_FLEET_MACHINES or def.
func fleetSize(def int) int {
	if n, err := strconv.Atoi(os.Getenv("ANVIL_FLEET_MACHINES")); err == nil && n > 0 {
		return n
	}
	return def
}

// The CI acceptance: 1,000 machines from enroll to active through
// the agent path while every BMC holds at most 2 sessions, answers in
// 200 ms and fails 5% of calls with 503: every node active, none in
// maintenance, never more than one session open on any BMC, every session
// logged out at shutdown, and each phase within a bound derived from the
// latency.
func TestFleetEnrollToActiveUnderBMCLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet of 1,000 machines (-short)")
	}
	const latency = 200 * time.Millisecond
	n := fleetSize(1000)
	if raceEnabled && os.Getenv("ANVIL_FLEET_MACHINES") == "" {
		n = 200 // full size without -race: scripts/test.sh
	}
	f := fleetRun{Machines: n, Concurrency: 150,
		Knobs: bmcemu.Knobs{MaxSessions: 2, Latency: latency, FailureRate: 0.05}}
	f.Bound = func(phase string, callsPerNode int) time.Duration {
		// calls × (latency + a 1 s Retry-After for 5% of them) /
		// concurrency, with 3× slack, plus the agents' boot and
		// heartbeats (a few seconds a node, in parallel) and a minute of
		// start-up for a loaded machine
		perCall := latency + time.Duration(0.05*float64(time.Second))
		calls := time.Duration(callsPerNode * n)
		return 3*calls*perCall/time.Duration(f.Concurrency) + 2*time.Minute
	}
	r, phases := runFleet(t, f)
	for _, p := range phases {
		t.Logf("%s: %v, %.1f BMC calls and %.2f sessions opened per node, %.1f nodes/s, a node's p50 %v p99 %v, %.0f CPU-s",
			p.Name, p.Took.Round(time.Millisecond), float64(p.Calls)/float64(n), float64(p.Sessions)/float64(n),
			float64(n)/p.Took.Seconds(), testbin.Percentile(p.Times, 50).Round(time.Second), testbin.Percentile(p.Times, 99).Round(time.Second), p.CPU.Seconds())
	}
	nodes := testbin.FleetNodes(t, r.API)
	if len(nodes) != n {
		t.Fatalf("%d nodes listed, want %d", len(nodes), n)
	}
	for _, nd := range nodes {
		if nd["provision_state"] != "active" || nd["maintenance"] != false {
			t.Fatalf("node %v: %v, maintenance %v, last_error %v", nd["name"], nd["provision_state"], nd["maintenance"], nd["last_error"])
		}
	}
	st := r.Fleet.FleetSessionStats()
	t.Logf("BMCs: %+v; RSS %d MiB (peak %d MiB)", st, rssBytes()>>20, peakRSSBytes()>>20)
	if st.MaxOpen != 1 || st.Refused != 0 {
		t.Fatalf("sessions: at most %d open at once on one BMC, %d logins refused; want one session per BMC", st.MaxOpen, st.Refused)
	}
	if st.Transient503 == 0 {
		t.Fatal("no transient failure was injected: the test tests nothing")
	}
	r.stop()
	if st := r.Fleet.FleetSessionStats(); st.Open != 0 {
		t.Fatalf("%d sessions left open after shutdown", st.Open)
	}
}
