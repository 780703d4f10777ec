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
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/server"
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

func benchPowerSync(b *testing.B, nodes int, latency time.Duration, workers int) {
	ctx := context.Background()
	emu, err := bmcemu.Start(ctx, bmcemu.Config{Count: nodes, Knobs: bmcemu.Knobs{Latency: latency}})
	if err != nil {
		b.Fatal(err)
	}
	defer emu.Close()
	st, err := storeopen.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reg := server.RegistryWith(server.Drivers{Redfish: redfish.New(redfish.Config{Attempts: 1})})
	nf, err := emu.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range nf.Nodes {
		di := model.JSON{}
		for k, v := range e.DriverInfo {
			di[k] = v
		}
		di["redfish_auth_type"] = "basic"
		n := &model.Node{UUID: uuid.NewString(), Name: e.Name, Driver: "redfish", DriverInfo: di,
			ProvisionState: "manageable", PowerState: fsm.PowerOff}
		if err := reg.Compose(n); err != nil {
			b.Fatal(err)
		}
		if err := st.CreateNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	c, err := conductor.New(conductor.Config{Store: st, Drivers: reg, Host: "bench",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), SyncPowerStateWorkers: workers})
	if err != nil {
		b.Fatal(err)
	}
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
		if err := c.SyncPowerStates(ctx); err != nil {
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
