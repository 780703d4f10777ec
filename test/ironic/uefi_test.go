package ironic_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/agent/efitest"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestIronicDeploysUEFIWholeDisk: Ironic 21.4 in its default boot mode
// (UEFI) deploys a whole-disk image (GPT, an EFI system partition holding
// EFI/BOOT/BOOTX64.EFI, a root partition) through `anvil agent`: the deploy
// step prepare_instance_boot calls the agent's image.install_bootloader,
// which writes the UEFI boot entry for the image's ESP to the agent's
// variable store (--efivars, a directory in efivarfs' format standing for
// the machine's NVRAM); the node reaches active, the disk holds the image
// byte for byte, and efibootmgr -v lists the entry first in BootOrder.
func TestIronicDeploysUEFIWholeDisk(t *testing.T) {
	testbin.Need(t, "mkfs.fat", "dosfstools")
	testbin.Need(t, "mcopy", "mtools")
	efibootmgr := testbin.Need(t, "efibootmgr", "efibootmgr")
	ironic := startIronic(t)
	const mib = 1 << 20
	root := make([]byte, 2*mib+77)
	_, _ = rand.Read(root)
	built, err := efitest.Build(context.Background(), t.TempDir(), efitest.Spec{SizeMiB: 12, ESPMiB: 8, RootMiB: 3, RootData: root,
		Files: []efitest.File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: []byte("MZ anvil test loader")}}})
	if err != nil {
		t.Fatal(err)
	}
	image, err := os.ReadFile(built.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(image)
	imgs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "disk.img", time.Time{}, bytes.NewReader(image))
	}))
	defer imgs.Close()

	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, bytes.Repeat([]byte{0xAA}, 16*mib), 0o600); err != nil {
		t.Fatal(err)
	}
	efivars := t.TempDir()
	const mac = "52:54:00:12:34:57"
	n := call(t, 201, "POST", ironic+"/v1/nodes", map[string]any{"name": "ironic-uefi-anvil", "driver": "fake-hardware",
		"deploy_interface": "direct", "boot_interface": "fake", "power_interface": "fake", "management_interface": "noop",
		"properties": map[string]any{"memory_mb": 4096, "cpus": 2, "local_gb": 1, "cpu_arch": "x86_64"}})
	node := n["uuid"].(string)
	call(t, 201, "POST", ironic+"/v1/ports", map[string]any{"node_uuid": node, "address": mac})
	agent := testbin.Start(t, "anvil agent", anvilBin, "agent", "--api-url", ironic, "--mac", mac, "--disk", disk,
		"--efivars", efivars, "--listen", testbin.FreeAddr(t), "--heartbeat-interval", "1s", "--log-level", "debug", "--cmdline", "/nonexistent")

	provision(t, ironic, node, "manage")
	testbin.WaitState(t, ironic, node, "manageable", stepTimeout)
	provision(t, ironic, node, "provide")
	testbin.WaitState(t, ironic, node, "available", stepTimeout)
	call(t, 200, "PATCH", ironic+"/v1/nodes/"+node, []map[string]any{
		{"op": "add", "path": "/instance_info/image_source", "value": imgs.URL + "/disk.img"},
		{"op": "add", "path": "/instance_info/image_checksum", "value": hex.EncodeToString(sum[:])},
	})
	provision(t, ironic, node, "active")
	got := testbin.WaitState(t, ironic, node, "active", stepTimeout)
	if got["last_error"] != nil {
		t.Errorf("last_error after the deploy: %v", got["last_error"])
	}
	// Ironic asked for the boot loader in its default boot mode.
	if logs := agent.Logs.String(); !strings.Contains(logs, `msg=install_bootloader `) || !strings.Contains(logs, "target_boot_mode=uefi") {
		t.Errorf("the agent was not asked to install a UEFI boot loader:\n%s", logs)
	}
	d, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 16*mib || !bytes.Equal(d[:len(image)], image) {
		t.Fatalf("the disk (%d bytes) does not start with the image", len(d))
	}
	if !strings.Contains(agent.Logs.String(), "UEFI boot entry written") {
		t.Errorf("the agent did not log the boot entry:\n%s", agent.Logs.String())
	}
	cmd := exec.Command(efibootmgr, "-v")
	cmd.Env = append(os.Environ(), "EFIVARFS_PATH="+efivars+"/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("efibootmgr -v: %v\n%s", err, out)
	}
	want := fmt.Sprintf("Boot0000* ironic1\tHD(1,GPT,%s,0x800,0x%x)/File(\\EFI\\BOOT\\BOOTX64.EFI)",
		strings.ToLower(built.ESP.UUID), built.ESP.Size/512)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "BootOrder: 0000\n") {
		t.Errorf("efibootmgr -v:\n%s\nwant the entry %q first in BootOrder", out, want)
	}
}
