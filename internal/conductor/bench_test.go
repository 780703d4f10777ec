package conductor_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// BenchmarkSyncPowerStates10000 measures one power-sync pass over 10,000
// fake nodes (SQLite), with 1% of them changed behind the conductor's back.
func BenchmarkSyncPowerStates10000(b *testing.B) { benchSyncPower(b, 10000, nil) }

// BenchmarkSyncPowerStates10000Of3 is the same pass with two more live
// conductors registered: this one reads only the nodes it owns on the hash
// ring (about a third); nodes/s counts the whole fleet, so it shows what a
// pass costs one of three conductors.
func BenchmarkSyncPowerStates10000Of3(b *testing.B) {
	benchSyncPower(b, 10000, []string{"peer-1", "peer-2"})
}

// BenchmarkSyncPowerStates100000 is the pass over 100,000 fake nodes. Writing
// them takes about a minute, so it runs only with ANVIL_BENCH_100K=1:
//
//	ANVIL_BENCH_100K=1 go test ./internal/conductor -run '^$' -bench SyncPowerStates100000 -benchtime 1x
func BenchmarkSyncPowerStates100000(b *testing.B) {
	if os.Getenv("ANVIL_BENCH_100K") != "1" {
		b.Skip("set ANVIL_BENCH_100K=1 to run the benchmarks at 100,000 nodes (minutes)")
	}
	benchSyncPower(b, 100000, nil)
}

// benchSyncPower creates n available, powered-on fake nodes, registers the
// peer conductors, and times SyncPowerStates passes, each after 1% of the
// nodes were powered off behind the conductor's back.
func benchSyncPower(b *testing.B, n int, peers []string) {
	e := newEnv(b, nil)
	for _, h := range peers {
		if err := e.st.Conductors().RegisterConductor(e.ctx, &model.Conductor{Hostname: h, Drivers: []string{"fake-hardware"}}); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]string, n)
	for i := range ids {
		nd := &model.Node{Driver: "fake-hardware", Name: fmt.Sprintf("n%06d", i), PowerState: fsm.PowerOn,
			ProvisionState: fsm.Available}
		if err := e.st.Nodes().CreateNode(e.ctx, nd); err != nil {
			b.Fatal(err)
		}
		ids[i] = nd.UUID
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < len(ids); j += 100 {
			e.fake.SetPower(ids[j], fsm.PowerOff)
		}
		if err := e.c.PowerSync().SyncPowerStates(e.ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "nodes/s")
}

// BenchmarkDiagnose measures a deploy's callback timeout failing one node
// (SQLite), its diagnosis included, with full sources: a 16 KiB console
// tail, 32 boot events, 8 BMC calls; the node's history and ports read,
// the document classified, masked and stored.
func BenchmarkDiagnose(b *testing.B) {
	tail := []byte(strings.Repeat("[    1.234567] a kernel line of boot output\r\n", 400))
	var clk *clock
	e, clk := newClockEnvWith(b, func(c *conductor.Config) {
		c.Diagnosis = conductor.DiagnosisSources{
			ConsoleTail: func(string, int) ([]byte, bool) { return tail, true },
			Boot: func(node string, macs []string) []model.BootEvent {
				evs := make([]model.BootEvent, 32)
				for i := range evs {
					evs[i] = model.BootEvent{Time: clk.Now(), Service: "http", MAC: "52:54:00:aa:bb:01", File: "kernel", Status: "200", Bytes: 1 << 20}
				}
				return evs
			},
			BMCCalls: func(string) []model.BMCCall {
				calls := make([]model.BMCCall, 8)
				for i := range calls {
					calls[i] = model.BMCCall{Time: clk.Now(), Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power status"}
				}
				return calls
			},
		}
	})
	tc := waitCases()[0]
	for b.Loop() {
		b.StopTimer()
		e.park(tc)
		clk.Advance(31 * time.Minute)
		b.StartTimer()
		if err := e.c.CheckTimeouts(e.ctx); err != nil {
			b.Fatal(err)
		}
	}
}
