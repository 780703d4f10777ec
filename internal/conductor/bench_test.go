package conductor_test

import (
	"fmt"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// BenchmarkSyncPowerStates10000 measures one power-sync pass over 10,000
// fake nodes (SQLite), with 1% of them changed behind the conductor's back.
func BenchmarkSyncPowerStates10000(b *testing.B) {
	e := newEnv(b, nil)
	ids := make([]string, 10000)
	for i := range ids {
		n := &model.Node{Driver: "fake-hardware", Name: fmt.Sprintf("n%05d", i), PowerState: fsm.PowerOn,
			ProvisionState: fsm.Available}
		if err := e.st.CreateNode(e.ctx, n); err != nil {
			b.Fatal(err)
		}
		ids[i] = n.UUID
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < len(ids); j += 100 {
			e.fake.SetPower(ids[j], fsm.PowerOff)
		}
		if err := e.c.SyncPowerStates(e.ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "nodes/s")
}

// BenchmarkSyncPowerStates10000Of3 is the same pass with two more live
// conductors registered: this one reads only the nodes it owns on the hash
// ring (about a third); nodes/s counts the whole fleet, so it shows what a
// pass costs one of three conductors.
func BenchmarkSyncPowerStates10000Of3(b *testing.B) {
	e := newEnv(b, nil)
	for _, h := range []string{"peer-1", "peer-2"} {
		if err := e.st.RegisterConductor(e.ctx, &model.Conductor{Hostname: h, Drivers: []string{"fake-hardware"}}); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]string, 10000)
	for i := range ids {
		n := &model.Node{Driver: "fake-hardware", Name: fmt.Sprintf("n%05d", i), PowerState: fsm.PowerOn,
			ProvisionState: fsm.Available}
		if err := e.st.CreateNode(e.ctx, n); err != nil {
			b.Fatal(err)
		}
		ids[i] = n.UUID
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < len(ids); j += 100 {
			e.fake.SetPower(ids[j], fsm.PowerOff)
		}
		if err := e.c.SyncPowerStates(e.ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "nodes/s")
}
