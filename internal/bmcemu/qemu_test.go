package bmcemu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/bmcemu/emutest"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// needQEMU skips without qemu, or fails where it must be there (CI).
func needQEMU(t *testing.T) { testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86") }

// waitUntil polls cond every 100 ms for up to d.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

func lastBoot(console string) string {
	b, _ := os.ReadFile(console)
	s := string(b)
	if i := strings.LastIndex(s, "=== "); i >= 0 {
		return s[i:]
	}
	return s
}

// TestQEMUPowerAndBootDevices drives one machine's real VM through Redfish
// and IPMI: power on boots its disk (a boot sector printing a marker on the
// serial console), a Cd override boots the ISO InsertMedia downloaded,
// ForceOff kills qemu, GracefulShutdown of a guest that ignores the power
// button kills it after the timeout, and qemu exiting turns the machine off.
func TestQEMUPowerAndBootDevices(t *testing.T) {
	needQEMU(t)
	testbin.Need(t, "genisoimage", "genisoimage")
	dir := t.TempDir()
	// an ISO whose El Torito boot image is a boot sector printing CD-BOOT-OK
	isoDir := filepath.Join(dir, "iso")
	if err := os.MkdirAll(isoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(isoDir, "boot.bin"), bmcemu.BootSector("CD-BOOT-OK"), 0o644); err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(dir, "boot.iso")
	if out, err := exec.Command("genisoimage", "-quiet", "-o", iso, "-b", "boot.bin", "-no-emul-boot",
		"-boot-load-size", "4", isoDir).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v\n%s", err, out)
	}
	files := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer files.Close()

	e, m := emutest.VM(t, bmcemu.Config{Password: pw}, "DISK-BOOT-OK")
	st := m.Status()
	if st.Console == "" || st.Disk == "" || len(st.MACs) != 1 || st.BootMode != bmcemu.ModeLegacy {
		t.Fatalf("QEMU machine status: %+v", st)
	}
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	reset := func(typ string) {
		t.Helper()
		if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "`+typ+`"}`); r.status != 204 {
			t.Fatalf("%s: %d %s", typ, r.status, r.body)
		}
	}
	alive := func(pid int) bool { return syscall.Kill(pid, 0) == nil && !isZombie(pid) }

	// power on: the disk boots
	reset("On")
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(lastBoot(st.Console), "DISK-BOOT-OK") }) {
		t.Fatalf("no disk boot on the console:\n%s", lastBoot(st.Console))
	}
	pid := m.Status().VMPid
	if pid == 0 || !alive(pid) || m.Status().Power != "On" {
		t.Fatalf("after power on: %+v", m.Status())
	}
	// media inserted and ejected while the VM runs change its CD drive
	qmp := filepath.Join(e.StateDir(), "node-01", "qmp.sock")
	if got := vmCD(t, qmp); got != "" {
		t.Fatalf("CD drive holds %q before any insert", got)
	}
	vmedia := e.URL() + "/redfish/v1/Managers/node-01/VirtualMedia/Cd"
	if r := do(t, "POST", vmedia+"/Actions/VirtualMedia.InsertMedia", "admin", pw, `{"Image": "`+files.URL+`/boot.iso"}`); r.status != 204 {
		t.Fatalf("InsertMedia: %d %s", r.status, r.body)
	}
	if got := vmCD(t, qmp); got == "" || got != m.Media().File {
		t.Errorf("running VM's CD drive holds %q after InsertMedia, want %q", got, m.Media().File)
	}
	if r := do(t, "POST", vmedia+"/Actions/VirtualMedia.EjectMedia", "admin", pw, `{}`); r.status != 204 {
		t.Fatalf("EjectMedia: %d %s", r.status, r.body)
	}
	if got := vmCD(t, qmp); got != "" {
		t.Errorf("running VM's CD drive holds %q after EjectMedia", got)
	}
	// ForceOff kills it
	reset("ForceOff")
	if m.PoweredOn() || alive(pid) {
		t.Fatalf("ForceOff: power %v, qemu %d alive %v", m.PoweredOn(), pid, alive(pid))
	}

	// Cd once with the ISO inserted: the CD boots, the next boot is the disk again
	if r := do(t, "POST", e.URL()+"/redfish/v1/Managers/node-01/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia",
		"admin", pw, `{"Image": "`+files.URL+`/boot.iso"}`); r.status != 204 {
		t.Fatalf("InsertMedia: %d %s", r.status, r.body)
	}
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}`); r.status != 204 {
		t.Fatalf("boot override: %d %s", r.status, r.body)
	}
	reset("On")
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(lastBoot(st.Console), "CD-BOOT-OK") }) {
		t.Fatalf("no CD boot on the console:\n%s", lastBoot(st.Console))
	}
	if lb := lastBoot(st.Console); !strings.Contains(lb, "boot device cdrom") || strings.Contains(lb, "DISK-BOOT-OK") {
		t.Errorf("the CD boot:\n%s", lb)
	}
	reset("ForceRestart")
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(lastBoot(st.Console), "DISK-BOOT-OK") }) {
		t.Fatalf("the reset after a Once Cd boot did not boot the disk:\n%s", lastBoot(st.Console))
	}

	// GracefulShutdown: the boot sector ignores the ACPI power button, so the
	// VM is killed after ShutdownTimeout; it is on until then.
	pid = m.Status().VMPid
	reset("GracefulShutdown")
	if !m.PoweredOn() {
		t.Errorf("off before the guest shut down: %+v", m.Status())
	}
	if !waitUntil(15*time.Second, func() bool { return !m.PoweredOn() }) || alive(pid) {
		t.Fatalf("GracefulShutdown: still on (%+v), qemu alive %v", m.Status(), alive(pid))
	}

	// IPMI powers the same VM; qemu exiting on its own turns the machine off
	c, err := client.NewClient("127.0.0.1", m.Status().IPMIPort, "admin", pw)
	if err != nil {
		t.Fatal(err)
	}
	c.WithCipherSuiteID(3)
	ctx := context.Background()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("IPMI session: %v", err)
	}
	if _, err := c.ChassisControl(ctx, chassis.ChassisControlPowerUp); err != nil {
		t.Fatalf("IPMI power up: %v", err)
	}
	c.Close(ctx) //nolint:errcheck // best effort
	pid = m.Status().VMPid
	if pid == 0 {
		t.Fatal("no VM after power on")
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(15*time.Second, func() bool { return !m.PoweredOn() }) {
		t.Fatalf("qemu exited, machine still on: %+v", m.Status())
	}
	// Close kills every VM
	if err := m.SetPower(true); err != nil {
		t.Fatal(err)
	}
	pid = m.Status().VMPid
	e.Close()
	if alive(pid) {
		t.Errorf("qemu %d survives the emulator's Close", pid)
	}
}

// TestQEMUNoNetworkBoot: a VM without a NIC boot ROM boots its disk even
// with a Pxe override.
func TestQEMUNoNetworkBoot(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	e := start(t, bmcemu.Config{Count: 1, StateDir: dir,
		QEMU: &bmcemu.QEMUConfig{MemoryMiB: 64, DiskBytes: 1 << 20, NoNetworkBoot: true}})
	m := e.Machine("node-01")
	f, err := os.OpenFile(m.Status().Disk, os.O_WRONLY, 0) // keeps its size
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bmcemu.BootSector("DISK-BOOT-OK")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "Pxe"}}`); r.status != 204 {
		t.Fatalf("boot override: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "On"}`); r.status != 204 {
		t.Fatalf("On: %d %s", r.status, r.body)
	}
	console := m.Status().Console
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(lastBoot(console), "DISK-BOOT-OK") }) {
		t.Fatalf("no disk boot:\n%s", lastBoot(console))
	}
	if lb := lastBoot(console); !strings.Contains(lb, "boot device pxe") {
		t.Errorf("not the Pxe boot:\n%s", lb)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "node-01", "qemu.log"))
	if !regexp.MustCompile(`virtio-net-pci,netdev=n0,mac=[0-9a-f:]+,romfile=(\s|$)`).Match(log) {
		t.Errorf("the NIC has a boot ROM: %s", log)
	}
}

// TestQEMUUEFI: with UEFIFirmware a machine in UEFI mode boots OVMF (its
// boot manager on the serial console; the BIOS boot sector is not run), and
// switched to Legacy it boots SeaBIOS and the boot sector.
func TestQEMUUEFI(t *testing.T) {
	needQEMU(t)
	ovmf := testbin.Need(t, "/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf")
	dir := t.TempDir()
	e := start(t, bmcemu.Config{Count: 1, StateDir: dir,
		QEMU: &bmcemu.QEMUConfig{MemoryMiB: 128, DiskBytes: 1 << 20, NoNetworkBoot: true, UEFIFirmware: ovmf}})
	m := e.Machine("node-01")
	if st := m.Status(); st.BootMode != bmcemu.ModeUEFI {
		t.Fatalf("boot mode with UEFI firmware: %s", st.BootMode)
	}
	f, err := os.OpenFile(m.Status().Disk, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bmcemu.BootSector("BIOS-DISK-BOOT")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	console := m.Status().Console
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	reset := func(typ string) {
		t.Helper()
		if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "`+typ+`"}`); r.status != 204 {
			t.Fatalf("%s: %d %s", typ, r.status, r.body)
		}
	}
	reset("On")
	if !waitUntil(90*time.Second, func() bool { return strings.Contains(lastBoot(console), "BdsDxe") }) {
		t.Fatalf("no OVMF boot manager on the console:\n%s", lastBoot(console))
	}
	if lb := lastBoot(console); !strings.Contains(lb, "firmware uefi") || strings.Contains(lb, "BIOS-DISK-BOOT") {
		t.Errorf("UEFI boot:\n%s", lb)
	}
	if _, err := os.Stat(filepath.Join(dir, "node-01", "OVMF_VARS.fd")); err != nil {
		t.Errorf("no variable store of its own: %v", err)
	}
	reset("ForceOff")
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideMode": "Legacy"}}`); r.status != 204 {
		t.Fatalf("PATCH Legacy: %d %s", r.status, r.body)
	}
	reset("On")
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(lastBoot(console), "BIOS-DISK-BOOT") }) {
		t.Fatalf("Legacy mode did not boot the boot sector:\n%s", lastBoot(console))
	}
	if lb := lastBoot(console); !strings.Contains(lb, "firmware bios") {
		t.Errorf("Legacy boot:\n%s", lb)
	}
}

// vmCD asks the VM's QMP socket which file its CD drive holds ("" when
// empty).
func vmCD(t *testing.T, sock string) string {
	t.Helper()
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	dec := json.NewDecoder(conn)
	var msg map[string]any
	next := func() {
		for {
			msg = nil
			if err := dec.Decode(&msg); err != nil {
				t.Fatalf("QMP: %v", err)
			}
			if _, ev := msg["event"]; !ev {
				return
			}
		}
	}
	next() // greeting
	for _, c := range []string{"qmp_capabilities", "query-block"} {
		fmt.Fprintf(conn, "{\"execute\": %q}\n", c)
		next()
	}
	blocks, _ := msg["return"].([]any)
	for _, b := range blocks {
		b := b.(map[string]any)
		if qdev, _ := b["qdev"].(string); qdev != "cd" && !strings.Contains(qdev, "/cd/") {
			continue
		}
		ins, ok := b["inserted"].(map[string]any)
		if !ok {
			return ""
		}
		f, _ := ins["file"].(string)
		return f
	}
	t.Fatalf("no CD drive in query-block: %v", msg)
	return ""
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && (f[2] == "Z" || f[2] == "X")
}
