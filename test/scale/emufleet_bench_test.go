package scale

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// BenchmarkEmulatedFleetConductors takes ANVIL_SCALE_FLEET_MACHINES (200)
// emulated machines from enroll to active through the agent path on
// PostgreSQL, first with one `serve --role all` process, then with one
// `--role api` and three `--role conductor` processes, every conductor
// with ANVIL_SCALE_FLEET_WORKERS (100) workers; an `anvil bmc-emulator`
// process runs the machines (a Redfish port per BMC holding 2 sessions,
// answering in ANVIL_SCALE_FLEET_LATENCY (50ms), ANVIL_SCALE_FLEET_FAILURES
// (0.01) of calls failing with 503) and their agents. The client drives
// the API process as `anvil node manage|provide|deploy --all --concurrency
// 150 --wait` does (testbin.ProvisionFleet, WaitFleet).
//
// Reported: per phase nodes/s (enroll, manage, provide, deploy) and a
// node's p50/p99 phase time (from its accepted verb to when the fleet list
// first showed it in the end state, 1 s resolution); CPU seconds per 1,000
// nodes over manage, provide and deploy of the anvil processes, PostgreSQL
// and the emulator (with its agents); peak RSS of the anvil processes
// (summed) and of the emulator; on the 1+3 run its enroll → active rate
// over the single process's (x-vs-1).
//
//	ANVIL_SCALE_FLEET_MACHINES=1000 go test -run '^$' -bench EmulatedFleet -benchtime 1x -timeout 60m ./test/scale/
func BenchmarkEmulatedFleetConductors(b *testing.B) {
	cfg := emuFleetConfig{Machines: emuFleetSize(200), Latency: 50 * time.Millisecond, Failures: 0.01,
		Workers: 100, DeadAfter: 60}
	if d, err := time.ParseDuration(os.Getenv("ANVIL_SCALE_FLEET_LATENCY")); err == nil {
		cfg.Latency = d
	}
	if v, err := strconv.ParseFloat(os.Getenv("ANVIL_SCALE_FLEET_FAILURES"), 64); err == nil {
		cfg.Failures = v
	}
	if v, err := strconv.Atoi(os.Getenv("ANVIL_SCALE_FLEET_WORKERS")); err == nil && v > 0 {
		cfg.Workers = v
	}
	var rate1 float64
	for _, k := range []int{0, 3} {
		name := "processes=1"
		if k > 0 {
			name = fmt.Sprintf("api+conductors=1+%d", k)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				c := cfg
				c.Conductors = k
				rate := runEmuFleetBench(b, c)
				if k == 0 {
					rate1 = rate
				} else if rate1 > 0 {
					b.ReportMetric(rate/rate1, "x-vs-1")
				}
			}
		})
	}
}

// runEmuFleetBench runs one fleet enroll → active and reports its
// figures; it returns the enroll → active rate in nodes/s.
func runEmuFleetBench(b *testing.B, cfg emuFleetConfig) float64 {
	b.StopTimer()
	n := cfg.Machines
	start := time.Now()
	f, enroll := startEmuFleet(b, cfg)
	cpu0 := f.cpu(b) // from here: the enrolment's CPU is not counted
	b.StartTimer()
	k := float64(n) / 1000
	b.ReportMetric(float64(n)/enroll.Seconds(), "enroll-nodes/s")
	total := enroll
	var results []phaseResult
	for _, p := range []struct{ name, verb, state string }{
		{"manage", "manage", "manageable"}, {"provide", "provide", "available"}, {"deploy", "active", "active"}} {
		t0 := time.Now()
		deadline := t0.Add(time.Hour)
		accepted, err := testbin.ProvisionFleet(b, f.API, p.verb, 150, deadline)
		var done map[string]time.Time
		if err == nil {
			done, err = testbin.WaitFleet(b, f.API, p.state, deadline)
		}
		if err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
		r := phaseResult{name: p.name, took: time.Since(t0)}
		for id, at := range accepted {
			r.times = append(r.times, done[id].Sub(at))
		}
		total += r.took
		results = append(results, r)
	}
	b.StopTimer()
	for _, r := range results {
		b.ReportMetric(float64(n)/r.took.Seconds(), r.name+"-nodes/s")
		b.ReportMetric(testbin.Percentile(r.times, 50).Seconds(), r.name+"-p50-s")
		b.ReportMetric(testbin.Percentile(r.times, 99).Seconds(), r.name+"-p99-s")
	}
	cpu := f.cpu(b)
	b.ReportMetric((cpu.anvil-cpu0.anvil).Seconds()/k, "anvil-cpu-s/1000nodes")
	b.ReportMetric((cpu.pg-cpu0.pg).Seconds()/k, "pg-cpu-s/1000nodes")
	b.ReportMetric((cpu.emu-cpu0.emu).Seconds()/k, "emulator-cpu-s/1000nodes")
	var anvilPeak int64
	for _, p := range f.Procs {
		_, hwm, err := testbin.ProcMemory(p.Cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		anvilPeak += hwm
	}
	_, emuPeak, err := testbin.ProcMemory(f.EmuProc.Cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(anvilPeak)/(1<<20), "anvil-peak-rss-MiB")
	b.ReportMetric(float64(emuPeak)/(1<<20), "emulator-peak-rss-MiB")
	b.ReportMetric(total.Seconds(), "enroll-to-active-s")
	rate := float64(n) / total.Seconds()
	b.ReportMetric(rate, "nodes/s")
	line := fmt.Sprintf("enroll %v", enroll.Round(time.Second))
	for _, r := range results {
		line += fmt.Sprintf(", %s %v", r.name, r.took.Round(time.Second))
	}
	b.Logf("%d machines, %d conductor process(es) (0: one --role all), BMC %v, %.0f%% 503s: %s; wall with start-up %v",
		n, cfg.Conductors, cfg.Latency, cfg.Failures*100, line, time.Since(start).Round(time.Second))
	return rate
}

// phaseResult is one phase of a run: its time and each node's.
type phaseResult struct {
	name  string
	took  time.Duration
	times []time.Duration
}

// fleetCPU is the CPU time used so far by the fleet's anvil processes,
// the PostgreSQL processes this test binary started, and the emulator.
type fleetCPU struct{ anvil, pg, emu time.Duration }

func (f *emuFleet) cpu(tb testing.TB) fleetCPU {
	var c fleetCPU
	for _, p := range f.Procs {
		d, err := testbin.ProcCPU(p.Cmd.Process.Pid)
		if err != nil {
			tb.Fatal(err)
		}
		c.anvil += d
	}
	var err error
	if c.pg, _, err = testbin.ProcTreeCPU(os.Getpid(), "postgres"); err != nil {
		tb.Fatal(err)
	}
	if c.emu, err = testbin.ProcCPU(f.EmuProc.Cmd.Process.Pid); err != nil {
		tb.Fatal(err)
	}
	return c
}
