package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestVMDiagnosisNetboot: a qemu VM with stock firmware (SeaBIOS and the
// NIC's iPXE ROM) deployed through ipmi_sim with the ipxe boot interface,
// its agent never calling back, twice. First qemu's DHCP server names no
// boot file: the firmware never reaches Anvil, and the diagnosis is
// no-network-boot (the boot services saw nothing of the MAC). Then the
// DHCP answer points at Anvil's boot endpoint and the deploy "ramdisk" is
// not a kernel: the diagnosis is callback-timeout, with the real
// firmware's fetches of the boot script, kernel and ramdisk (status and
// bytes) in its evidence and boot events.
func TestVMDiagnosisNetboot(t *testing.T) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	testbin.Need(t, "ipmi_sim", "openipmi", vmSwitch)
	testbin.Need(t, stockIPXE, "ipxe-qemu", vmSwitch)
	busybox := testbin.Need(t, "busybox", "busybox-static", vmSwitch)
	dir, st := vmStateDir(t)

	files := filepath.Join(dir, "files")
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	kernel, initrd := filepath.Join(files, "not-a-kernel"), filepath.Join(files, "not-an-initrd")
	os.WriteFile(kernel, []byte(strings.Repeat("this is not a kernel\n", 200)), 0o644)
	os.WriteFile(initrd, []byte(strings.Repeat("nor an initramfs\n", 300)), 0o644)

	bmcPort := startBMC(t, dir, st)
	apiPort := testbin.FreePort(t)
	guestAPI := fmt.Sprintf("http://10.0.2.100:%d", apiPort)
	api := startServeOn(t, apiPort, "--sync-power-state-interval", "3600",
		"--http-url", guestAPI+"/boot", "--public-endpoint", guestAPI, "--http-root", filepath.Join(dir, "http-root"),
		"--file-url-allowed-paths", files, "--deploy-callback-timeout", "60", "--check-provision-state-interval", "2")
	disk := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(disk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 16*mib); err != nil {
		t.Fatal(err)
	}
	vm := func(netdev string) {
		if !strings.Contains(netdev, "restrict=on") {
			t.Fatal("user networking without restrict=on")
		}
		if err := os.WriteFile(filepath.Join(st, "vm.sh"), []byte(netbootVMScript(qemu, st, disk, netdev)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	vm("user,id=n0,restrict=on")
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "diag-vm", "driver": "ipmi", "automated_clean": false,
		"driver_info": map[string]any{
			"ipmi_address": "127.0.0.1", "ipmi_port": bmcPort, "ipmi_username": "admin",
			"ipmi_password": password, "ipmi_cipher_suite": 3,
			"deploy_kernel": kernel, "deploy_ramdisk": initrd,
		},
		"instance_info": map[string]any{"image_source": "http://10.0.2.101/disk.img", "image_checksum": strings.Repeat("ab", 32)},
	}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": vmMAC})
	ctx, cancel := context.WithTimeout(context.Background(), 4*overall)
	defer cancel()
	w := &watcher{t: t, api: api, node: node, st: st, ctx: ctx}
	provision(t, api, node, "manage")
	w.wait("manageable")
	provision(t, api, node, "provide")
	w.wait("available")

	diagnosis := func() *model.Diagnosis {
		t.Helper()
		var d model.Diagnosis
		if err := json.Unmarshal(mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/diagnosis", nil).Body, &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	evidence := func(d *model.Diagnosis) string { return strings.Join(d.Evidence, "\n") }

	// 1. DHCP without a boot file: the firmware never asks Anvil.
	provision(t, api, node, "active")
	w.wait("deploy failed")
	d := diagnosis()
	if d.Class != "no-network-boot" || !strings.Contains(evidence(d), vmMAC) || len(d.Boot) != 0 {
		t.Fatalf("never network-booted: class %q, evidence %q, boot %+v", d.Class, d.Evidence, d.Boot)
	}
	if !strings.Contains(lastBoot(st), "boot device pxe") {
		t.Errorf("the deploy did not boot the VM from the network:\n%s", tail(lastBoot(st), 600))
	}

	// 2. DHCP names Anvil's boot script; the files it boots are no kernel.
	vm(fmt.Sprintf("user,id=n0,restrict=on,bootfile=%s/boot/boot.ipxe,guestfwd=tcp:10.0.2.100:%d-cmd:%s nc 127.0.0.1 %d",
		guestAPI, apiPort, busybox, apiPort))
	start := time.Now()
	provision(t, api, node, "active")
	w.wait("deploy failed")
	d = diagnosis()
	var script, kern, rd bool
	for _, b := range d.Boot {
		script = script || b.Service == "http" && strings.HasPrefix(b.File, "/mac/") && b.Status == "200"
		kern = kern || b.File == "kernel" && b.Status == "200" && b.Bytes == 4200
		rd = rd || b.File == "ramdisk" && b.Status == "200" && b.Bytes == 5100
	}
	if d.Class != "callback-timeout" || !script || !kern || !rd || !strings.Contains(evidence(d), "fetched its kernel (4200 bytes)") {
		t.Fatalf("firmware fetched the files: class %q, evidence %q, boot %+v", d.Class, d.Evidence, d.Boot)
	}
	t.Logf("network-booted, no callback: diagnosed %v after the deploy began; boot events %d", time.Since(start).Round(time.Second), len(d.Boot))
}
