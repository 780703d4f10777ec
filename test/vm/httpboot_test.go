package vm_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/agent/efitest"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/vmnet"
)

// Debian's ovmf: UEFI firmware whose network stack does HTTP boot (checked:
// "Start HTTP Boot over IPv4" with OVMF_CODE_4M.fd).
const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
)

// dhcpLink joins Anvil's proxyDHCP to a qemu VM's network. qemu's user
// networking (slirp) gives the VM its address and forwards its TCP, but its
// DHCP server cannot say "HTTPClient"; so the VM's NIC sits on a qemu hub
// with both the slirp netdev and a vmnet.Link, which passes each DHCP
// request to `anvil serve --dhcp-proxy` on loopback, as a relay would, and
// puts every answer back on the hub. The firmware then sees two offers —
// slirp's address and Anvil's boot file — as on a site network with a
// proxyDHCP server.
type dhcpLink struct {
	link     *vmnet.Link
	anvil    *net.UDPConn // DHCP payloads to and from Anvil
	proxy    *net.UDPAddr // anvil serve --dhcp-proxy
	requests atomic.Int32
	answers  atomic.Int32
}

func newDHCPLink(t *testing.T, proxy string) (*dhcpLink, string) {
	t.Helper()
	link, err := vmnet.Listen(net.IPv4(10, 0, 2, 100))
	if err != nil {
		t.Fatal(err)
	}
	anvil, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := net.ResolveUDPAddr("udp4", proxy)
	if err != nil {
		t.Fatal(err)
	}
	l := &dhcpLink{link: link, anvil: anvil, proxy: pa}
	t.Cleanup(func() { link.Close(); anvil.Close() })
	go func() {
		_ = link.Serve(func(p []byte) {
			if _, err := anvil.WriteToUDP(p, pa); err == nil {
				l.requests.Add(1)
			}
		})
	}()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := anvil.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if link.Reply(buf[:n]) == nil {
				l.answers.Add(1)
			}
		}
	}()
	return l, link.Netdev("s0")
}

// httpBootVMScript is vm.sh for a UEFI machine: OVMF, the NIC with no
// option ROM (romfile= empty: OVMF's own virtio-net driver and network
// stack do the HTTP boot) on a hub with slirp and the DHCP link, PXE
// switched off in the firmware (fw_cfg), so the NIC's boot option is UEFI
// HTTP boot. The boot order follows the BMC's boot device as in
// netbootVMScript.
func httpBootVMScript(qemu, st, disk, slirp, link string) string {
	q := func(s string) string { return "'" + s + "'" }
	return `d=` + q(st) + `
boot=$(cat "$d/boot" 2>/dev/null || echo default)
if [ "$boot" = pxe ]; then nic=1; dsk=2; else nic=2; dsk=1; fi
echo "$(date +%s.%N) start boot=$boot" >>"$d/events"
printf '\n=== %s power on, boot device %s ===\n' "$(date +%s.%N)" "$boot" >>"$d/console.log"
exec ` + strings.Join([]string{q(qemu), "-accel", "tcg", "-m", "512", "-smp", "1", "-machine", "q35",
		"-display", "none", "-chardev", q("file,id=s0,append=on,path=" + filepath.Join(st, "console.log")), "-serial", "chardev:s0",
		"-drive", q("if=pflash,format=raw,readonly=on,file=" + ovmfCode),
		"-drive", q("if=pflash,format=raw,file=" + filepath.Join(st, "vars.fd")),
		"-fw_cfg", "name=opt/org.tianocore/IPv4PXESupport,string=n",
		"-fw_cfg", "name=opt/org.tianocore/IPv6PXESupport,string=n",
		"-drive", q("file=" + disk + ",format=raw,if=none,id=d0"), "-device", `"virtio-blk-pci,drive=d0,bootindex=$dsk"`,
		"-netdev", q(slirp), "-netdev", "hubport,id=h1,hubid=0,netdev=u0",
		"-netdev", q(link), "-netdev", "hubport,id=h2,hubid=0,netdev=s0",
		"-netdev", "hubport,id=n0,hubid=0",
		"-device", `"virtio-net-pci,netdev=n0,romfile=,mac=` + vmMAC + `,bootindex=$nic"`,
		"-daemonize", "-pidfile", q(filepath.Join(st, "qemu.pid"))}, " ") + "\n"
}

// TestVMHTTPBootIPMI: a UEFI machine with no NIC option ROM boots Anvil's
// deploy ramdisk by the firmware's own HTTP boot, cleans and deploys, once
// per boot interface: http-ipxe (OVMF downloads iPXE's EFI binary, which
// chains the node's iPXE script) and http (OVMF downloads the GRUB image
// Anvil builds, which reads the node's GRUB configuration). Anvil's
// proxyDHCP answers the firmware's "HTTPClient" DHCP through a dhcpLink;
// ipmi_sim drives power and boot device as in TestVMNetbootIPMI.
func TestVMHTTPBootIPMI(t *testing.T) {
	for _, iface := range []string{"http-ipxe", "http"} {
		t.Run(iface, func(t *testing.T) { testVMHTTPBoot(t, iface) })
	}
}

func testVMHTTPBoot(t *testing.T, iface string) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	testbin.Need(t, "ipmi_sim", "openipmi", vmSwitch)
	testbin.Need(t, ovmfCode, "ovmf", vmSwitch)
	if iface == "http" {
		testbin.Need(t, "grub-mkimage", "grub-common", vmSwitch)
		testbin.Need(t, "/usr/lib/grub/x86_64-efi/http.mod", "grub-efi-amd64-bin", vmSwitch)
	} else {
		testbin.Need(t, "/usr/lib/ipxe/ipxe.efi", "ipxe", vmSwitch)
	}
	a := buildRamdisk(t)
	dir, st := vmStateDir(t)
	vars, err := os.ReadFile(ovmfVars)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st, "vars.fd"), vars, 0o600); err != nil {
		t.Fatal(err)
	}

	image := uefiImage(t, dir)
	imgPort := serveImage(t, "disk.img", image).Port

	bmcPort := startBMC(t, dir, st)
	apiPort := testbin.FreePort(t)
	proxy := fmt.Sprintf("127.0.0.1:%d", testbin.FreeUDPPort(t))
	guestAPI := fmt.Sprintf("http://10.0.2.100:%d", apiPort)
	api := startServeOn(t, apiPort, "--sync-power-state-interval", "3600", "--log-level", "debug",
		"--http-url", guestAPI+"/boot", "--public-endpoint", guestAPI, "--http-root", filepath.Join(dir, "http-root"),
		"--dhcp-proxy", proxy,
		"--file-url-allowed-paths", filepath.Dir(a.kernel)+","+filepath.Dir(a.initramfs))
	link, linkNetdev := newDHCPLink(t, proxy)
	hostfwd := testbin.FreePort(t)

	disk := emptyDisk(t, dir)
	slirp := fmt.Sprintf("user,id=u0,restrict=on,"+
		"guestfwd=tcp:10.0.2.100:%d-cmd:%s nc 127.0.0.1 %d,"+
		"guestfwd=tcp:10.0.2.101:80-cmd:%s nc 127.0.0.1 %d,"+
		"hostfwd=tcp:127.0.0.1:%d-:%d", apiPort, a.busybox, apiPort, a.busybox, imgPort, hostfwd, agentPort)
	if !strings.Contains(slirp, "restrict=on") {
		t.Fatal("user networking without restrict=on")
	}
	if err := os.WriteFile(filepath.Join(st, "vm.sh"), []byte(httpBootVMScript(qemu, st, disk, slirp, linkNetdev)), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*overall)
	defer cancel()
	n := enrollNetboot(t, api, map[string]any{"name": "httpboot-vm", "boot_interface": iface,
		"properties": map[string]any{"capabilities": "boot_mode:uefi"}}, bmcPort, hostfwd, a)
	node := n["uuid"].(string)
	if n["boot_interface"] != iface {
		t.Fatalf("boot_interface %v, want %s", n["boot_interface"], iface)
	}

	w := &watcher{t: t, api: api, node: node, st: st, ctx: ctx}
	w.provide("UEFI HTTP boot, automated cleaning")
	assertHTTPBooted(t, st, 1)
	w.deploy("UEFI HTTP boot, write the image", "http://10.0.2.101/disk.img", image)
	assertHTTPBooted(t, st, 2)
	assertDiskHolds(t, disk, image)
	if b, _ := os.ReadFile(filepath.Join(st, "boot")); !hasPrefixAny(strings.TrimSpace(string(b)), "default", "disk") {
		t.Errorf("BMC boot device when active = %q, want default (disk)", b)
	}
	// The machine then boots the image from its disk: OVMF runs its ESP's
	// loader, which prints the marker.
	if !waitFor(ctx, 180*time.Second, func() bool { return strings.Contains(lastBoot(st), diskBootMarker) }) {
		t.Fatalf("no %q on the serial console of the last boot:\n%s", diskBootMarker, tail(lastBoot(st), 4000))
	}
	if lb := lastBoot(st); strings.Contains(lb, "anvil-ramdisk") || strings.Contains(lb, "Start HTTP Boot") {
		t.Errorf("the disk boot went through the network:\n%s", tail(lb, 2000))
	}
	t.Logf("enroll to active: %v; DHCP link: %d requests relayed to Anvil, %d answers", time.Since(start).Round(time.Millisecond),
		link.requests.Load(), link.answers.Load())
}

// uefiImage is a UEFI whole-disk image (GPT, an EFI system partition
// with the fallback loader EFI/BOOT/BOOTX64.EFI): a standalone GRUB that
// prints diskBootMarker on the console (OVMF mirrors it to the serial
// port) and powers the machine off.
func uefiImage(t *testing.T, dir string) []byte {
	t.Helper()
	mk := testbin.Need(t, "grub-mkstandalone", "grub-common", vmSwitch)
	testbin.Need(t, "/usr/lib/grub/x86_64-efi/normal.mod", "grub-efi-amd64-bin", vmSwitch)
	testbin.Need(t, "mkfs.fat", "dosfstools", vmSwitch)
	testbin.Need(t, "mcopy", "mtools", vmSwitch)
	cfg := filepath.Join(dir, "disk-grub.cfg")
	if err := os.WriteFile(cfg, []byte("echo "+diskBootMarker+"\nsleep 2\nhalt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "disk-loader.efi")
	cmd := exec.Command(mk, "-O", "x86_64-efi", "-o", out, "--locales=", "--fonts=", "--themes=",
		"--install-modules=normal echo sleep halt configfile memdisk tar", "boot/grub/grub.cfg="+cfg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("grub-mkstandalone: %v\n%s", err, b)
	}
	loader, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := efitest.Build(context.Background(), t.TempDir(), efitest.Spec{SizeMiB: 12, ESPMiB: 8,
		Files: []efitest.File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: loader}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assertHTTPBooted checks that at least want boots went through the
// firmware's HTTP boot into the ramdisk: OVMF's "Start HTTP Boot" and the
// URI it was handed on the serial console, then the kernel's command line
// with the boot endpoint's agent settings and BOOTIF, and the agent
// starting. The VM has no -kernel, no PXE and no NIC ROM, so nothing else
// can have loaded the kernel.
func assertHTTPBooted(t *testing.T, st string, want int) {
	t.Helper()
	got := 0
	for _, b := range boots(st) {
		if strings.Contains(b, "Start HTTP Boot over IPv4") && strings.Contains(b, "URI: http://10.0.2.100:") &&
			strings.Contains(b, "Command line: ") && strings.Contains(b, "ipa-api-url=http://10.0.2.100:") &&
			strings.Contains(b, "BOOTIF="+vmMAC) && strings.Contains(b, "anvil-ramdisk: starting anvil agent") {
			got++
		}
	}
	if got < want {
		t.Fatalf("%d UEFI HTTP boots into the ramdisk seen on the console, want at least %d", got, want)
	}
}
