package bmcemu_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/bmcemu/emutest"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// TestQEMUSerialOverLAN: the emulator's IPMI endpoint serves the VM's
// serial port as SOL. The console is activated while the machine is off;
// powering it on (IPMI) boots the disk, whose boot sector prints a marker
// that arrives through SOL — and still in console.log.
func TestQEMUSerialOverLAN(t *testing.T) {
	e, m := emutest.VM(t, bmcemu.Config{Password: pw}, "SOL-BOOT-OK")
	st := m.Status()
	n := &model.Node{UUID: "11111111-2222-3333-4444-555555555555", Driver: "ipmi",
		DriverInfo: model.JSON(emutest.Node(t, e, bmcemu.DriverIPMI).DriverInfo)}
	d := ipmi.New(ipmi.Config{MinCommandInterval: -1, ExchangeTimeout: 500 * time.Millisecond})
	ctx := context.Background()
	con, err := d.Console(ipmi.SOLName).OpenConsole(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer con.Close()
	got := make(chan string, 1)
	go func() {
		var all strings.Builder
		buf := make([]byte, 1024)
		for {
			k, err := con.Read(buf)
			all.Write(buf[:k])
			if strings.Contains(all.String(), "SOL-BOOT-OK") || err != nil {
				got <- all.String()
				return
			}
		}
	}()
	// The line reaches the VM's serial socket a moment after qemu starts;
	// on a loaded machine the boot sector can print before it does, so a
	// boot whose output did not come through is retried (power off and on:
	// the boot sector prints on every boot), at most three times.
	task := &driver.Task{Node: n}
	var out string
	for attempt := 1; out == "" && attempt <= 3; attempt++ {
		if attempt > 1 {
			if err := d.SetPowerState(ctx, task, fsm.PowerOff); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.SetPowerState(ctx, task, fsm.PowerOn); err != nil {
			t.Fatal(err)
		}
		select {
		case out = <-got:
		case <-time.After(30 * time.Second):
			t.Logf("boot %d: no output through SOL yet", attempt)
		}
	}
	if !strings.Contains(out, "SOL-BOOT-OK") {
		t.Fatalf("no boot output through SOL (%q); console.log:\n%s", out, lastBoot(st.Console))
	}
	if !strings.Contains(lastBoot(st.Console), "SOL-BOOT-OK") {
		t.Errorf("console.log lost the output:\n%s", lastBoot(st.Console))
	}
}
