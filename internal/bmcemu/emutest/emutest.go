// Package emutest starts the BMC emulator for tests: one qemu machine
// behind an IPMI endpoint whose disk boots a sector printing a marker on
// the serial console, what the SOL, console and diagnosis tests look for.
package emutest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// VM starts an emulator of one qemu machine (64 MiB, a 1 MiB disk, 2 s for
// a graceful shutdown) with an IPMI endpoint, its state under the test's
// temporary directory, and writes onto the machine's disk a boot sector
// that prints marker (bmcemu.BootSector). cfg gives the rest (e.g. the
// password); its Count, IPMI, StateDir and QEMU are set here, and without
// a Log the emulator's log is shown when the test fails. The test skips
// without qemu (fails under CI); the emulator is closed when it ends.
func VM(t testing.TB, cfg bmcemu.Config, marker string) (*bmcemu.Emulator, *bmcemu.Machine) {
	t.Helper()
	testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86")
	cfg.Count, cfg.IPMI, cfg.StateDir = 1, true, filepath.Join(t.TempDir(), "state")
	cfg.QEMU = &bmcemu.QEMUConfig{MemoryMiB: 64, DiskBytes: 1 << 20, ShutdownTimeout: 2 * time.Second}
	if cfg.Log == nil {
		var logs testbin.Buffer
		cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("emulator log:\n%s", logs.String())
			}
		})
	}
	e, err := bmcemu.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	m := e.Machines()[0]
	f, err := os.OpenFile(m.Status().Disk, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(bmcemu.BootSector(marker))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return e, m
}

// Node is the enrolment entry of the emulator's first machine with
// hardware type drv (bmcemu.DriverIPMI or DriverRedfish): its driver_info
// and ports.
func Node(t testing.TB, e *bmcemu.Emulator, drv string) bmcemu.NodeEntry {
	t.Helper()
	nf, err := e.Nodes(drv)
	if err != nil {
		t.Fatal(err)
	}
	return nf.Nodes[0]
}
