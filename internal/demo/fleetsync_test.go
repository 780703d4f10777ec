package demo

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
)

// syncSweep is one power-sync sweep's figures.
type syncSweep struct {
	Took     time.Duration
	Calls    int64 // BMC calls, retries and logins included
	Sessions int64 // sessions opened
	Report   conductor.PowerSyncReport
}

// sweepFleet runs one SyncPowerStates over f and counts what it cost.
func sweepFleet(tb testing.TB, f *syncFleet) syncSweep {
	tb.Helper()
	calls := func() (n int64) {
		for _, m := range f.emu.Machines() {
			n += m.Status().Calls
		}
		return n
	}
	c0, s0 := calls(), f.emu.FleetSessionStats().Opened
	start := time.Now()
	if err := f.c.PowerSync().SyncPowerStates(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return syncSweep{Took: time.Since(start), Calls: calls() - c0, Sessions: f.emu.FleetSessionStats().Opened - s0,
		Report: f.c.PowerSync().Report()}
}

// limitedSyncFleet is n redfish nodes on BMCs of their own with knobs,
// session auth, the driver's defaults (5 tries, Retry-After honoured) and
// workers power-sync workers.
func limitedSyncFleet(tb testing.TB, n int, knobs bmcemu.Knobs, workers int) *syncFleet {
	return newSyncFleetWith(tb, syncFleetConfig{Count: n, Knobs: knobs, BMCPorts: true, Auth: "session",
		Driver:    redfish.Config{Timeout: 30 * time.Second},
		Conductor: func(c *conductor.Config) { c.SyncPowerStateWorkers = workers }})
}

// The second CI acceptance: a power-sync sweep of 2,000 nodes whose
// BMCs hold at most 2 sessions, answer in 200 ms and fail 5% of calls with
// 503 reads every node (the 503s retried after their Retry-After), puts
// none into maintenance, opens one session per BMC, and ends within a
// bound derived from the latency and the conductor's sync workers.
func TestPowerSyncSweepUnderBMCLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 emulated BMCs (-short)")
	}
	const (
		latency = 200 * time.Millisecond
		workers = 100
	)
	n := 2000
	if raceEnabled {
		n = 500 // full size without -race: scripts/test.sh
	}
	if v, err := strconv.Atoi(os.Getenv("ANVIL_SYNC_NODES")); err == nil && v > 0 {
		n = v
	}
	f := limitedSyncFleet(t, n, bmcemu.Knobs{MaxSessions: 2, Latency: latency, FailureRate: 0.05}, workers)
	// A first sweep logs in to every BMC: GET of the service root and the
	// login, then the read: 3 calls a node; a later sweep reads (1 call).
	// Each 503 (5%) costs its 1 s Retry-After. Bound: 3× slack on
	// calls × (latency + 5% × 1 s) / workers, plus 30 s for a loaded box.
	bound := func(callsPerNode int) time.Duration {
		perCall := latency + 50*time.Millisecond
		return 3*time.Duration(callsPerNode*n)*perCall/workers + 30*time.Second
	}
	for i, callsPerNode := range []int{3, 1} {
		sw := sweepFleet(t, f)
		t.Logf("sweep %d of %d nodes: %v (bound %v), %.2f BMC calls and %.3f sessions opened per node, %d failed reads",
			i+1, n, sw.Took.Round(time.Millisecond), bound(callsPerNode), float64(sw.Calls)/float64(n),
			float64(sw.Sessions)/float64(n), sw.Report.LastFailed)
		if sw.Report.LastNodes != int64(n) || sw.Report.LastFailed != 0 {
			t.Fatalf("sweep %d read %d nodes with %d failures, want %d and none", i+1, sw.Report.LastNodes, sw.Report.LastFailed, n)
		}
		if sw.Took > bound(callsPerNode) {
			t.Fatalf("sweep %d took %v, beyond its bound %v", i+1, sw.Took, bound(callsPerNode))
		}
	}
	st := f.emu.FleetSessionStats()
	t.Logf("BMCs: %+v", st)
	if st.MaxOpen != 1 || st.Refused != 0 || st.Opened != int64(n) {
		t.Fatalf("sessions %+v: want one per BMC, opened once", st)
	}
	if st.Transient503 == 0 {
		t.Fatal("no transient failure was injected: the test tests nothing")
	}
	for _, nd := range f.nodes {
		got, err := f.st.Nodes().GetNode(context.Background(), nd.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Maintenance {
			t.Fatalf("node %s went into maintenance: %s", got.Name, got.MaintenanceReason)
		}
	}
}

// BenchmarkPowerSyncSweep is one conductor's power sync over
// ANVIL_SYNC_NODES (10,000) redfish nodes, each on a BMC of its own that
// answers in 50 ms, fails 1% of calls with 503 and holds 2 sessions, with
// ANVIL_SYNC_WORKERS (32) sync workers: the first sweep (which logs in to
// every BMC) and a steady one, each against the 60 s target.
//
//	go test -run '^$' -bench PowerSyncSweep -benchtime 1x ./internal/demo/
func BenchmarkPowerSyncSweep(b *testing.B) {
	n, workers := 10000, 32
	if v, err := strconv.Atoi(os.Getenv("ANVIL_SYNC_NODES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("ANVIL_SYNC_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	f := limitedSyncFleet(b, n, bmcemu.Knobs{MaxSessions: 2, Latency: 50 * time.Millisecond, FailureRate: 0.01}, workers)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0 := cpuTime()
		first := sweepFleet(b, f)
		cpu1 := cpuTime()
		steady := sweepFleet(b, f)
		cpu2 := cpuTime()
		k := float64(n) / 1000
		b.ReportMetric(first.Took.Seconds(), "first-sweep-s")
		b.ReportMetric(steady.Took.Seconds(), "steady-sweep-s")
		b.ReportMetric(float64(first.Calls)/float64(n), "first-calls/node")
		b.ReportMetric(float64(steady.Calls)/float64(n), "steady-calls/node")
		b.ReportMetric(float64(first.Report.LastFailed+steady.Report.LastFailed), "failed-reads")
		b.ReportMetric((cpu1-cpu0).Seconds()/k, "first-cpu-s/1000nodes")
		b.ReportMetric((cpu2-cpu1).Seconds()/k, "steady-cpu-s/1000nodes")
		b.ReportMetric(float64(peakRSSBytes())/(1<<20), "peak-rss-MiB")
		b.Logf("%d nodes, %d workers: first sweep %v, steady %v; BMCs %+v; load %s", n, workers,
			first.Took.Round(time.Millisecond), steady.Took.Round(time.Millisecond), f.emu.FleetSessionStats(), loadAvg())
	}
}
