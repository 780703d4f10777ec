package demo

import (
	"context"
	"testing"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fsm"
)

// A power change made on the emulator, behind the conductor's back, is seen
// by power sync and handled the configured way.
func TestPowerSyncSeesEmulatorChanges(t *testing.T) {
	for _, force := range []bool{true, false} {
		name := map[bool]string{true: "forced back", false: "recorded"}[force]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newSyncFleet(t, 2, 0, func(c *conductor.Config) { c.ForcePowerStateDuringSync = force })
			m := f.emu.Machines()[0]
			if m.Status().Power != "Off" {
				t.Fatalf("machine starts %q", m.Status().Power)
			}
			_ = m.SetPower(true) // someone pressed the power button
			if err := f.c.PowerSync().SyncPowerStates(ctx); err != nil {
				t.Fatal(err)
			}
			n, err := f.st.Nodes().GetNode(ctx, f.nodes[0].UUID)
			if err != nil {
				t.Fatal(err)
			}
			if force {
				if n.PowerState != fsm.PowerOff || m.Status().Power != "Off" {
					t.Fatalf("forced sync: db %q, machine %q; want both off", n.PowerState, m.Status().Power)
				}
			} else if n.PowerState != fsm.PowerOn || m.Status().Power != "On" {
				t.Fatalf("recording sync: db %q, machine %q; want both on", n.PowerState, m.Status().Power)
			}
			other, _ := f.st.Nodes().GetNode(ctx, f.nodes[1].UUID)
			if other.PowerState != fsm.PowerOff {
				t.Fatalf("the untouched node changed to %q", other.PowerState)
			}
		})
	}
}
