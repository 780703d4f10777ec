package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestVMRedfishHTTPSBoot: the redfish-https boot interface through the BMC
// emulator. Anvil builds the ISO redfish-virtual-media would insert and
// sets the emulated BMC's boot override UefiHttp with HttpBootUri = the
// ISO's URL on its boot endpoint; the emulator's machine, a qemu VM with
// OVMF and no NIC option ROM, boots it by the firmware's HTTP boot (the
// emulator hands the URI to the firmware's DHCP, as a real BMC writes it
// into the boot option; OVMF boots a downloaded ISO from a RAM disk). The
// agent in it cleans, then deploys a UEFI disk image, and the VM boots
// that image from its disk.
func TestVMRedfishHTTPSBoot(t *testing.T) {
	testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	testbin.Need(t, ovmfCode, "ovmf", vmSwitch)
	for _, f := range []string{"/usr/lib/ISOLINUX/isolinux.bin", "/usr/lib/grub/x86_64-efi/normal.mod"} {
		if _, err := os.Stat(f); err != nil {
			missing(t, "%s not found (apt-get install isolinux syslinux-common grub-efi-amd64-bin): the ISO needs it", f)
		}
	}
	a := buildRamdisk(t)
	dir, _ := vmStateDir(t)

	image := uefiImage(t, dir)
	imgAddr := serveImage(t, "disk.img", image)

	// The emulator: one machine, a qemu VM booting OVMF (UEFI mode); the
	// guest reaches Anvil's API and boot endpoint at 10.0.2.100 and the
	// image at 10.0.2.101; the conductor reaches the agent through the
	// machine's forwarded port.
	apiPort := testbin.FreePort(t)
	guestAPI := fmt.Sprintf("http://10.0.2.100:%d", apiPort)
	bmcAddr := testbin.FreeAddr(t)
	emuState := filepath.Join(dir, "emulator")
	emu := testbin.Start(t, "bmc-emulator", anvilBin, "bmc-emulator", "--qemu", "--count", "1",
		"--listen", bmcAddr, "--password", password, "--state-dir", emuState, "--uefi-firmware", ovmfCode,
		"--vm-memory", "768", "--vm-disk-mib", "64", "--guest-port", fmt.Sprint(agentPort), "--log-level", "info",
		"--forward", fmt.Sprintf("10.0.2.100:%d=127.0.0.1:%d", apiPort, apiPort),
		"--forward", fmt.Sprintf("10.0.2.101:80=%s", imgAddr))
	bmc := "http://" + bmcAddr
	console := filepath.Join(emuState, "node-01", "console.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("emulator log:\n%s", tail(emu.Logs.String(), 3000))
			t.Logf("VM console:\n%s", readTail(console, 12000))
			t.Logf("qemu log:\n%s", readTail(filepath.Join(emuState, "node-01", "qemu.log"), 2000))
		}
	})
	var machine struct {
		ForwardedPort int      `json:"forwarded_port"`
		Disk          string   `json:"disk"`
		MACs          []string `json:"macs"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*overall)
	defer cancel()
	if !waitFor(ctx, 30*time.Second, func() bool {
		resp, err := http.Get(bmc + "/emulator/machines/node-01")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&machine) == nil && machine.ForwardedPort > 0 && len(machine.MACs) > 0
	}) {
		t.Fatalf("the emulator did not come up:\n%s", emu.Logs.String())
	}

	api := startServeOn(t, apiPort, "--sync-power-state-interval", "3600", "--log-level", "debug",
		"--http-url", guestAPI+"/boot", "--public-endpoint", guestAPI, "--http-root", filepath.Join(dir, "http-root"),
		"--file-url-allowed-paths", filepath.Dir(a.kernel)+","+filepath.Dir(a.initramfs))
	start := time.Now()
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "redfish-https-vm", "driver": "redfish",
		"boot_interface": "redfish-https",
		"properties":     map[string]any{"capabilities": "boot_mode:uefi"},
		"driver_info": map[string]any{
			"redfish_address": bmc, "redfish_system_id": "/redfish/v1/Systems/node-01",
			"redfish_username": "admin", "redfish_password": password,
			"deploy_kernel": a.kernel, "deploy_ramdisk": a.initramfs,
			"kernel_append_params": "console=ttyS0 " + nodeParams(machine.ForwardedPort),
		}}).JSON(t)
	node := n["uuid"].(string)
	if n["boot_interface"] != "redfish-https" {
		t.Fatalf("boot_interface %v", n["boot_interface"])
	}
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": machine.MACs[0]})
	w := &watcher{t: t, api: api, node: node, st: filepath.Join(emuState, "node-01"), ctx: ctx}
	w.provide("UEFI HTTP boot of the ISO, automated cleaning")
	assertISOHTTPBooted(t, console, 1)
	w.deploy("UEFI HTTP boot of the ISO, write the image", "http://10.0.2.101/disk.img", image)
	assertISOHTTPBooted(t, console, 2)
	assertDiskHolds(t, machine.Disk, image)
	if !waitFor(ctx, 180*time.Second, func() bool { return strings.Contains(lastBootOf(console), diskBootMarker) }) {
		t.Fatalf("no %q on the console of the last boot:\n%s", diskBootMarker, tail(lastBootOf(console), 4000))
	}
	if lb := lastBootOf(console); strings.Contains(lb, "Start HTTP Boot") {
		t.Errorf("the disk boot went through the network:\n%s", tail(lb, 2000))
	}
	t.Logf("enroll to active and disk boot: %v", time.Since(start).Round(time.Millisecond))
}

// lastBootOf is the emulator console's last boot (after its last "=== "
// power-on line).
func lastBootOf(console string) string {
	b, _ := os.ReadFile(console)
	s := string(b)
	if i := strings.LastIndex(s, "\n=== "); i >= 0 {
		return s[i:]
	}
	return s
}

// assertISOHTTPBooted checks that at least want boots of the emulator's VM
// were UEFI HTTP boots of Anvil's ISO into the agent: the emulator's
// "boot device uefihttp, firmware uefi" line, OVMF's HTTP boot of a
// boot.iso URI on Anvil's boot endpoint, the kernel's command line with
// boot_method=vmedia (the ISO's) and the agent starting.
func assertISOHTTPBooted(t *testing.T, console string, want int) {
	t.Helper()
	b, _ := os.ReadFile(console)
	got := 0
	for _, boot := range strings.Split(string(b), "\n=== ")[1:] {
		if strings.Contains(boot, "boot device uefihttp, firmware uefi") && strings.Contains(boot, "Start HTTP Boot over IPv4") &&
			strings.Contains(boot, "URI: http://10.0.2.100:") && strings.Contains(boot, "/boot.iso") &&
			strings.Contains(boot, "boot_method=vmedia") && strings.Contains(boot, "anvil-ramdisk: starting anvil agent") {
			got++
		}
	}
	if got < want {
		t.Fatalf("%d UEFI HTTP boots of the ISO into the agent on the console, want at least %d", got, want)
	}
}
