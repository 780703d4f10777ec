package vm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// diskBootMarker is what the deployed image prints when the VM boots it.
const diskBootMarker = "ANVIL-DISK-BOOT-OK"

// stockIPXE is the option ROM of Debian's ipxe-qemu that qemu loads by
// default into a virtio-net-pci NIC (naming it with romfile= kept SeaBIOS
// from booting the NIC here, so the test relies on the default).
const stockIPXE = "/usr/lib/ipxe/qemu/efi-virtio.rom"

// netbootVMScript is the state directory's vm.sh: it starts qemu with no
// -kernel, -initrd or -append, so the machine boots only through its
// firmware: SeaBIOS and the NIC's stock iPXE ROM. The boot order follows
// the boot device the BMC recorded (pxe: the NIC first; otherwise the disk
// first), as a real BIOS does with IPMI's boot flags.
func netbootVMScript(qemu, st, disk, netdev string) string {
	q := func(s string) string { return "'" + s + "'" }
	return `d=` + q(st) + `
boot=$(cat "$d/boot" 2>/dev/null || echo default)
if [ "$boot" = pxe ]; then nic=1; dsk=2; else nic=2; dsk=1; fi
echo "$(date +%s.%N) start boot=$boot" >>"$d/events"
printf '\n=== %s power on, boot device %s ===\n' "$(date +%s.%N)" "$boot" >>"$d/console.log"
exec ` + strings.Join([]string{q(qemu), "-accel", "tcg", "-m", "512", "-smp", "1",
		"-display", "none", "-chardev", q("file,id=s0,append=on,path=" + filepath.Join(st, "console.log")), "-serial", "chardev:s0",
		"-drive", q("file=" + disk + ",format=raw,if=none,id=d0"), "-device", `"virtio-blk-pci,drive=d0,bootindex=$dsk"`,
		"-netdev", q(netdev), "-device", `"virtio-net-pci,netdev=n0,mac=` + vmMAC + `,bootindex=$nic"`,
		"-daemonize", "-pidfile", q(filepath.Join(st, "qemu.pid"))}, " ") + "\n"
}

// TestVMNetbootIPMI runs the whole lifecycle with stock firmware: the VM has
// no kernel of its own; its NIC's iPXE ROM gets a boot file URL from qemu's
// DHCP server, fetches Anvil's boot endpoint (/boot/boot.ipxe) through a
// guest forward, chains the node's per-MAC script and boots the deploy
// ramdisk `anvil ramdisk build` made, whose agent reads its settings from
// the kernel command line. Anvil drives the machine through ipmi_sim (boot
// device and power) with the ipxe boot and direct deploy interfaces:
// enroll → manageable → available (cleaning in the network-booted agent) →
// active, the VM then boots the deployed image from its disk (a boot sector
// that prints a marker on the serial console), and undeploy cleans it over
// the network again → available.
func TestVMNetbootIPMI(t *testing.T) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	testbin.Need(t, "ipmi_sim", "openipmi", vmSwitch)
	testbin.Need(t, stockIPXE, "ipxe-qemu", vmSwitch)
	a := buildRamdisk(t)
	dir, st := vmStateDir(t)

	// The instance image: a raw disk image whose first sector prints the
	// marker, served on loopback; the guest reaches it as 10.0.2.101:80.
	image := make([]byte, 1*mib)
	copy(image, bmcemu.BootSector(diskBootMarker))
	imgPort := serveImage(t, "disk.img", image).Port

	// Anvil serves its boot endpoint under /boot/ on the API listener; the
	// guest reaches the API's port at 10.0.2.100 through a guestfwd.
	bmcPort := startBMC(t, dir, st)
	apiPort := testbin.FreePort(t)
	guestAPI := fmt.Sprintf("http://10.0.2.100:%d", apiPort)
	api := startServeOn(t, apiPort, "--sync-power-state-interval", "3600", "--log-level", "debug",
		"--http-url", guestAPI+"/boot", "--public-endpoint", guestAPI, "--http-root", filepath.Join(dir, "http-root"),
		"--file-url-allowed-paths", filepath.Dir(a.kernel)+","+filepath.Dir(a.initramfs))
	hostfwd := testbin.FreePort(t)

	disk := emptyDisk(t, dir)
	netdev := fmt.Sprintf("user,id=n0,restrict=on,bootfile=%s/boot/boot.ipxe,"+
		"guestfwd=tcp:10.0.2.100:%d-cmd:%s nc 127.0.0.1 %d,"+
		"guestfwd=tcp:10.0.2.101:80-cmd:%s nc 127.0.0.1 %d,"+
		"hostfwd=tcp:127.0.0.1:%d-:%d", guestAPI, apiPort, a.busybox, apiPort, a.busybox, imgPort, hostfwd, agentPort)
	if !strings.Contains(netdev, "restrict=on") {
		t.Fatal("user networking without restrict=on")
	}
	if err := os.WriteFile(filepath.Join(st, "vm.sh"), []byte(netbootVMScript(qemu, st, disk, netdev)), 0o644); err != nil {
		t.Fatal(err)
	}

	// Enroll with the ipmi hardware type's default interfaces (ipxe boot,
	// direct deploy) and the deploy ramdisk as `anvil ramdisk build` printed
	// it.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*overall)
	defer cancel()
	n := enrollNetboot(t, api, map[string]any{"name": "netboot-vm"}, bmcPort, hostfwd, a)
	node := n["uuid"].(string)
	if n["boot_interface"] != "ipxe" || n["deploy_interface"] != "direct" {
		t.Fatalf("ipmi node interfaces: boot %v, deploy %v; want ipxe and direct", n["boot_interface"], n["deploy_interface"])
	}

	w := &watcher{t: t, api: api, node: node, st: st, ctx: ctx}
	w.provide("network boot, automated cleaning")
	assertNetbooted(t, st, 1)
	w.deploy("network boot, write the image, reboot to disk", "http://10.0.2.101/disk.img", image)
	assertNetbooted(t, st, 2)

	// The machine now boots the image from its disk.
	if !waitFor(ctx, 120*time.Second, func() bool { return strings.Contains(lastBoot(st), diskBootMarker) }) {
		t.Fatalf("no %q on the serial console of the last boot:\n%s", diskBootMarker, tail(lastBoot(st), 4000))
	}
	t.Logf("disk boot: marker %q on the console; last power-on %v before it was seen; that boot's console:\n%q",
		diskBootMarker, sinceLastPowerOn(st), tail(lastBoot(st), 400))
	if b, _ := os.ReadFile(filepath.Join(st, "boot")); !hasPrefixAny(strings.TrimSpace(string(b)), "default", "disk") {
		t.Errorf("BMC boot device when active = %q, want default (disk)", b)
	}
	if lb := lastBoot(st); !strings.Contains(lb, "boot device default") && !strings.Contains(lb, "boot device disk") {
		t.Errorf("the last boot was not from the disk boot device:\n%s", tail(lb, 300))
	}
	if lb := lastBoot(st); strings.Contains(lb, "anvil-ramdisk") {
		t.Errorf("the disk boot ran the ramdisk:\n%s", tail(lb, 2000))
	}
	assertDiskHolds(t, disk, image)

	// Undeploy: cleaning over the network again.
	phase := time.Now()
	w.reset()
	provision(t, api, node, "deleted")
	w.wait("available")
	t.Logf("undeploy (network boot, cleaning): %v; power-on to first heartbeat %v",
		time.Since(phase).Round(time.Millisecond), w.bootToHeartbeat())
	assertNetbooted(t, st, 3)
	got, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:512], make([]byte, 512)) {
		t.Error("cleaning left the boot sector on the disk")
	}
	t.Logf("enroll to available again: %v", time.Since(start).Round(time.Millisecond))
}

// boots splits the console log into the VM's boots (vm.sh writes a line
// starting with "=== " before each).
func boots(st string) []string {
	b, _ := os.ReadFile(filepath.Join(st, "console.log"))
	var out []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(l, "=== ") || len(out) == 0 {
			out = append(out, "")
		}
		out[len(out)-1] += l
	}
	return out
}

func lastBoot(st string) string {
	bs := boots(st)
	if len(bs) == 0 {
		return ""
	}
	return bs[len(bs)-1]
}

// assertNetbooted checks that at least want boots network-booted the
// ramdisk: the VM has no -kernel or -append, so a kernel command line
// naming the ramdisk iPXE loaded (initrd=ramdisk) and carrying the boot
// endpoint's agent settings, followed by the ramdisk's agent starting, shows
// the stock firmware's network boot. (iPXE itself writes to the VGA
// console, not the serial one.)
func assertNetbooted(t *testing.T, st string, want int) {
	t.Helper()
	got := 0
	for _, b := range boots(st) {
		if strings.Contains(b, "Command line: ") && strings.Contains(b, "initrd=ramdisk") &&
			strings.Contains(b, "ipa-api-url=http://10.0.2.100:") && strings.Contains(b, "BOOTIF=") &&
			strings.Contains(b, "anvil-ramdisk: starting anvil agent") {
			got++
		}
	}
	if got < want {
		t.Fatalf("%d network boots into the ramdisk seen on the console, want at least %d", got, want)
	}
}

// sinceLastPowerOn is the time since the chassis script last started the
// VM.
func sinceLastPowerOn(st string) time.Duration {
	b, _ := os.ReadFile(filepath.Join(st, "events"))
	var on float64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == "on" {
			on, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if on == 0 {
		return 0
	}
	return time.Duration((float64(time.Now().UnixNano())/1e9 - on) * 1e9).Round(time.Millisecond)
}

// waitFor polls cond every 200 ms until it holds or d (or ctx) runs out.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
