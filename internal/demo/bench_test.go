package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/storeopen"
)

// BenchmarkPowerSync measures how many emulated BMCs one conductor
// power-syncs per minute when every Redfish call takes 50 ms: one round of
// SyncPowerStates over N redfish nodes (one GET per node, basic auth), with
// Ironic's 8 sync workers and with more.
//
//	go test -run '^$' -bench PowerSync ./internal/demo/
func BenchmarkPowerSync(b *testing.B) {
	for _, workers := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("nodes=500/latency=50ms/workers=%d", workers), func(b *testing.B) {
			benchPowerSync(b, 500, 50*time.Millisecond, workers)
		})
	}
}

// syncFleet is an emulator with n redfish nodes enrolled in a store and a
// conductor (not started) to sync their power.
type syncFleet struct {
	emu   *bmcemu.Emulator
	st    store.Store
	c     *conductor.Conductor
	nodes []*model.Node
}

func newSyncFleet(tb testing.TB, count int, latency time.Duration, mod func(*conductor.Config)) *syncFleet {
	return newSyncFleetWith(tb, syncFleetConfig{Count: count, Knobs: bmcemu.Knobs{Latency: latency}, Auth: "basic",
		Driver: redfish.Config{Attempts: 1}, Conductor: mod})
}

// syncFleetConfig is the fleet of newSyncFleetWith.
type syncFleetConfig struct {
	Count     int
	Knobs     bmcemu.Knobs
	BMCPorts  bool           // a BMC per machine (bmcemu.Config.BMCPorts)
	Auth      string         // the nodes' redfish_auth_type
	Driver    redfish.Config // the redfish driver's
	Conductor func(*conductor.Config)
}

func newSyncFleetWith(tb testing.TB, fc syncFleetConfig) *syncFleet {
	ctx := context.Background()
	emu, err := bmcemu.Start(ctx, bmcemu.Config{Count: fc.Count, Knobs: fc.Knobs, BMCPorts: fc.BMCPorts})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { emu.Close() })
	st, err := storeopen.Open(ctx, filepath.Join(tb.TempDir(), "sync.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	reg := hardware.RegistryWith(hardware.Drivers{Redfish: redfish.New(fc.Driver)})
	nf, err := emu.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		tb.Fatal(err)
	}
	f := &syncFleet{emu: emu, st: st}
	for _, e := range nf.Nodes {
		di := model.JSON{}
		for k, v := range e.DriverInfo {
			di[k] = v
		}
		di["redfish_auth_type"] = fc.Auth
		n := &model.Node{UUID: uuid.NewString(), Name: e.Name, Driver: "redfish", DriverInfo: di,
			ProvisionState: "manageable", PowerState: fsm.PowerOff}
		if err := reg.Compose(n); err != nil {
			tb.Fatal(err)
		}
		if err := st.Nodes().CreateNode(ctx, n); err != nil {
			tb.Fatal(err)
		}
		f.nodes = append(f.nodes, n)
	}
	cfg := conductor.Config{Store: st, Drivers: reg, Host: "sync", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if fc.Conductor != nil {
		fc.Conductor(&cfg)
	}
	if f.c, err = conductor.New(cfg); err != nil {
		tb.Fatal(err)
	}
	return f
}

func benchPowerSync(b *testing.B, nodes int, latency time.Duration, workers int) {
	ctx := context.Background()
	f := newSyncFleet(b, nodes, latency, func(c *conductor.Config) { c.SyncPowerStateWorkers = workers })
	emu, c := f.emu, f.c
	calls := func() (n int64) {
		for _, m := range emu.Machines() {
			n += m.Status().Calls
		}
		return n
	}
	before := calls()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := c.PowerSync().SyncPowerStates(ctx); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	if got := calls() - before; got != int64(nodes*b.N) {
		b.Fatalf("%d BMC calls in %d rounds of %d nodes", got, b.N, nodes)
	}
	perMin := float64(nodes*b.N) / el.Minutes()
	b.ReportMetric(perMin, "bmcs/min")
	b.ReportMetric(float64(el.Milliseconds())/float64(b.N), "ms/round")
}
