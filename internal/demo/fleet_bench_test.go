package demo

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// BenchmarkFleetEnrollToActive takes ANVIL_FLEET_MACHINES (10,000) emulated
// machines from enroll to active through the agent path in this one
// process (Anvil, the BMC emulator with a Redfish port per BMC, every agent,
// the CLI), as `anvil node manage|provide|deploy --all --concurrency 150
// --wait` would (runFleet), with BMCs answering in ANVIL_FLEET_LATENCY (50ms), failing
// ANVIL_FLEET_FAILURES (0.01) of calls with 503 and holding 2 sessions, the
// image 256 KiB.
// It reports each phase's nodes/s and BMC calls per node, Redfish sessions
// per BMC, the process's RSS and CPU-seconds per 1,000 nodes.
//
//	ANVIL_FLEET_MACHINES=10000 go test -run '^$' -bench FleetEnrollToActive -benchtime 1x -timeout 60m ./internal/demo/
func BenchmarkFleetEnrollToActive(b *testing.B) {
	n := fleetSize(10000)
	latency := 50 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("ANVIL_FLEET_LATENCY")); err == nil {
		latency = d
	}
	failures := 0.01
	if v, err := strconv.ParseFloat(os.Getenv("ANVIL_FLEET_FAILURES"), 64); err == nil {
		failures = v
	}
	for i := 0; i < b.N; i++ {
		cpu0, start := cpuTime(), time.Now()
		// a 256 KiB image: at 10,000 machines the demo's 4 MiB would be
		// 40 GB of disk files on a shared machine
		f := fleetRun{Machines: n, Concurrency: 150, ImageBytes: 256 << 10,
			Knobs: bmcemu.Knobs{MaxSessions: 2, Latency: latency, FailureRate: failures},
			Bound: func(string, int) time.Duration { return time.Hour }}
		r, phases := runFleet(b, f)
		total := time.Since(start)
		runtime.GC()
		rss, peak := rssBytes(), peakRSSBytes()
		k := float64(n) / 1000
		for _, p := range phases {
			b.ReportMetric(float64(n)/p.Took.Seconds(), p.Name+"-nodes/s")
			b.ReportMetric(float64(p.Calls)/float64(n), p.Name+"-calls/node")
			b.ReportMetric(p.CPU.Seconds()/k, p.Name+"-cpu-s/1000nodes")
		}
		st := r.Fleet.FleetSessionStats()
		b.ReportMetric(float64(st.Opened)/float64(n), "sessions/bmc")
		b.ReportMetric(float64(st.MaxOpen), "max-open-sessions/bmc")
		b.ReportMetric(total.Seconds(), "enroll-to-active-s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		b.ReportMetric((cpuTime()-cpu0).Seconds()/k, "cpu-s/1000nodes")
		for _, p := range phases {
			if len(p.Times) > 0 {
				b.ReportMetric(testbin.Percentile(p.Times, 50).Seconds(), p.Name+"-p50-s")
				b.ReportMetric(testbin.Percentile(p.Times, 99).Seconds(), p.Name+"-p99-s")
			}
		}
		b.Logf("%d machines, BMC latency %v, %.0f%% transient 503s: %v enroll to active; BMCs %+v; load %s", n, latency, failures*100,
			total.Round(time.Second), st, loadAvg())
		for _, p := range phases {
			b.Logf("  %s: %v (%.1f nodes/s), %.1f BMC calls/node, %.1f CPU-s", p.Name, p.Took.Round(time.Second),
				float64(n)/p.Took.Seconds(), float64(p.Calls)/float64(n), p.CPU.Seconds())
		}
		r.stop()
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return fmt.Sprint(string(b[:len(b)-1]))
}
