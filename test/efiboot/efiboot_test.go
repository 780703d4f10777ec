// Package efiboot_test proves that the UEFI boot entry `anvil agent`'s
// image.install_bootloader writes is real: inside a qemu VM with OVMF
// (software emulation, user networking with restrict=on, no route out),
// booted into a ramdisk with Debian's kernel and the static agent, the
// agent writes the entry through the kernel's efivarfs into OVMF's variable
// store; the VM is then started again from its disk alone, with that
// variable store, and the firmware boots the loader the entry names — a
// GRUB image at \EFI\anvil\BOOTX64.EFI, not the removable-media fallback
// path, so nothing but the entry can boot it. A control run with pristine
// variables does not boot it.
//
// testos_test.go boots the test OS image (internal/testos) the same way.
//
// Needs qemu-system-x86_64, OVMF, Debian's installed kernel (/boot, its
// modules under /lib/modules), busybox-static, grub-mkstandalone with
// x86_64-efi modules, mkfs.fat and mtools (scripts/test.sh installs them).
// Without them the test skips, unless ANVIL_VM_TEST=1 or CI is set, where
// it fails.
package efiboot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/agent/efitest"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/ramdisk"
	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

const vmSwitch = "ANVIL_VM_TEST"

const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	marker   = "ANVIL-NVRAM-ENTRY-BOOTED"
	token    = "efiboot-test-token"
)

func need(t *testing.T, tool, pkg string) string {
	t.Helper()
	return testbin.Need(t, tool, pkg, vmSwitch)
}

// installedKernel is Debian's newest installed kernel and its modules
// directory.
func installedKernel(t *testing.T) (vmlinuz, modules string) {
	t.Helper()
	ks, _ := filepath.Glob("/boot/vmlinuz-*")
	sort.Strings(ks)
	for i := len(ks) - 1; i >= 0; i-- {
		v := strings.TrimPrefix(filepath.Base(ks[i]), "vmlinuz-")
		if _, err := os.Stat(filepath.Join("/lib/modules", v, "modules.dep")); err == nil {
			if f, err := os.Open(ks[i]); err == nil { // readable (not root-only)
				f.Close()
				return ks[i], filepath.Join("/lib/modules", v)
			}
		}
	}
	testbin.Missing(t, "no readable Debian kernel in /boot with its modules (apt-get install linux-image-amd64)", vmSwitch)
	return "", ""
}

// loader is a standalone GRUB EFI image that prints marker on the console
// (OVMF mirrors it to the serial port) and powers the machine off.
func loader(t *testing.T, dir string) []byte {
	t.Helper()
	mk := need(t, "grub-mkstandalone", "grub-common")
	if _, err := os.Stat("/usr/lib/grub/x86_64-efi/normal.mod"); err != nil {
		testbin.Missing(t, "GRUB's x86_64-efi modules are missing (apt-get install grub-efi-amd64-bin)", vmSwitch)
	}
	cfg := filepath.Join(dir, "grub.cfg")
	if err := os.WriteFile(cfg, []byte("echo "+marker+"\nhalt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "loader.efi")
	cmd := exec.Command(mk, "-O", "x86_64-efi", "-o", out, "--locales=", "--fonts=", "--themes=",
		"--install-modules=normal echo halt configfile memdisk tar", "boot/grub/grub.cfg="+cfg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("grub-mkstandalone: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeAPI answers the agent's lookup (a node and a token) and heartbeats,
// as Ironic's API would; lookups counts the lookups.
func fakeAPI(t *testing.T, lookups *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/lookup":
			lookups.Add(1)
			_ = json.NewEncoder(w).Encode(ipa.LookupResponse{
				Node:   ipa.LookupNode{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Properties: map[string]any{}, InstanceInfo: map[string]any{}, DriverInternalInfo: map[string]any{}},
				Config: ipa.LookupConfig{HeartbeatTimeout: 300, AgentToken: token, AgentTokenRequired: true}})
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/heartbeat/"):
			w.WriteHeader(http.StatusAccepted)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// qemu runs one VM until it exits or ctx ends.
func qemu(ctx context.Context, t *testing.T, bin, vars, console string, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"-accel", "tcg", "-m", "512", "-smp", "1", "-display", "none", "-no-reboot",
		"-drive", "if=pflash,format=raw,readonly=on,file=" + ovmfCode, "-drive", "if=pflash,format=raw,file=" + vars,
		"-serial", "file:" + console}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitConsole waits until the console holds want (or the process exits,
// or d passes).
func waitConsole(cmd *exec.Cmd, exited <-chan struct{}, console, want string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(console); strings.Contains(string(b), want) {
			return true
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(console)
			return strings.Contains(string(b), want)
		case <-time.After(500 * time.Millisecond):
		}
	}
	return false
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func TestAgentBootEntryBootsInOVMF(t *testing.T) {
	qemuBin := need(t, "qemu-system-x86_64", "qemu-system-x86")
	for _, f := range []string{ovmfCode, ovmfVars} {
		if _, err := os.Stat(f); err != nil {
			testbin.Missing(t, fmt.Sprintf("OVMF firmware %s not found (apt-get install ovmf)", f), vmSwitch)
		}
	}
	hostBusybox := need(t, "busybox", "busybox-static")
	need(t, "mkfs.fat", "dosfstools")
	need(t, "mcopy", "mtools")
	vmlinuz, modDir := installedKernel(t)
	// The vm profile (virtio, efivarfs), loaded at boot by modalias; the
	// UEFI firmware makes coldplug load efivarfs.
	names, err := ramdisk.ProfileModules("vm")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ramdisk.OpenTree(modDir)
	if err != nil {
		testbin.Missing(t, err.Error(), vmSwitch)
	}
	mods, err := tree.Resolve(append(names, "efivarfs"))
	if err != nil {
		testbin.Missing(t, err.Error(), vmSwitch)
	}
	release, err := ramdisk.Release(mods)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initramfs")
	if _, err := ramdisk.WriteInitramfs(initrd, ramdisk.Spec{Anvil: anvilBin, Busybox: hostBusybox, Modules: mods,
		Release: release}); err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	img, err := efitest.Build(context.Background(), dir, efitest.Spec{SizeMiB: 40, ESPMiB: 32,
		Files: []efitest.File{{Path: "EFI/anvil/BOOTX64.EFI", Data: loader(t, dir)}}})
	if err != nil {
		t.Fatal(err)
	}
	pristine := filepath.Join(dir, "vars-pristine.fd")
	vars := filepath.Join(dir, "vars.fd")
	copyFile(t, ovmfVars, pristine)
	copyFile(t, ovmfVars, vars)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// 1. The deploy ramdisk in OVMF: the agent writes the entry.
	var lookups atomic.Int32
	api := fakeAPI(t, &lookups)
	apiPort := strings.TrimPrefix(api.URL, "http://127.0.0.1:")
	agentPort := testbin.FreePort(t)
	console1 := filepath.Join(dir, "console-ramdisk.log")
	vm1 := qemu(ctx, t, qemuBin, vars, console1,
		"-kernel", vmlinuz, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 ipa-api-url=http://10.0.2.100:80 anvil.min-disk-size=1M anvil.heartbeat-interval=5s",
		"-drive", "file="+img.Path+",format=raw,if=virtio",
		"-nic", fmt.Sprintf("user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:%d-:9999,guestfwd=tcp:10.0.2.100:80-cmd:%s nc 127.0.0.1 %s",
			agentPort, hostBusybox, apiPort))
	exited1 := make(chan struct{})
	go func() { _ = vm1.Wait(); close(exited1) }()
	t.Cleanup(func() { _ = vm1.Process.Kill(); <-exited1 })
	start := time.Now()
	if !waitConsole(vm1, exited1, console1, "anvil agent: command API on", 5*time.Minute) {
		t.Fatalf("the ramdisk's agent did not start in OVMF within 5 minutes:\n%s", tail(console1, 4000))
	}
	result := installBootloader(ctx, t, fmt.Sprintf("http://127.0.0.1:%d", agentPort), console1)
	t.Logf("ramdisk boot + install_bootloader in %s: %s", time.Since(start).Round(time.Second), result)
	if !strings.Contains(tail(console1, 20000), "UEFI boot entry written") {
		t.Errorf("the agent did not log the entry:\n%s", tail(console1, 4000))
	}
	_ = vm1.Process.Signal(os.Interrupt) // qemu flushes the variable store and exits
	select {
	case <-exited1:
	case <-time.After(30 * time.Second):
		t.Fatal("qemu did not exit on SIGINT")
	}

	// 2. The machine from its disk, with the variables the agent wrote:
	// the firmware follows the entry to the loader.
	console2 := filepath.Join(dir, "console-disk.log")
	start = time.Now()
	vm2 := qemu(ctx, t, qemuBin, vars, console2, "-drive", "file="+img.Path+",format=raw,if=virtio", "-nic", "none")
	exited2 := make(chan struct{})
	go func() { _ = vm2.Wait(); close(exited2) }()
	t.Cleanup(func() { _ = vm2.Process.Kill(); <-exited2 })
	if !waitConsole(vm2, exited2, console2, marker, 5*time.Minute) {
		t.Fatalf("OVMF did not boot the agent's entry within 5 minutes:\n%s", tail(console2, 4000))
	}
	t.Logf("firmware to loader via the NVRAM entry in %s; firmware said:\n%s", time.Since(start).Round(time.Second), bds(console2))
	if !strings.Contains(bds(console2), `"ironic1"`) {
		t.Errorf("OVMF did not name the agent's entry ironic1 when booting")
	}

	// 3. Control: the same disk with OVMF's pristine variables does not
	// boot the loader (it is not on the fallback path).
	console3 := filepath.Join(dir, "console-control.log")
	vm3 := qemu(ctx, t, qemuBin, pristine, console3, "-drive", "file="+img.Path+",format=raw,if=virtio", "-nic", "none")
	exited3 := make(chan struct{})
	go func() { _ = vm3.Wait(); close(exited3) }()
	t.Cleanup(func() { _ = vm3.Process.Kill(); <-exited3 })
	if !waitConsole(vm3, exited3, console3, "Shell>", 5*time.Minute) {
		t.Logf("control run console:\n%s", tail(console3, 3000))
	}
	t.Logf("control run, firmware said:\n%s", bds(console3))
	if b, _ := os.ReadFile(console3); strings.Contains(string(b), marker) {
		t.Fatalf("the loader booted without the agent's entry: the test proves nothing:\n%s", tail(console3, 3000))
	}
}

// installBootloader sends image.install_bootloader as Ironic does for a
// whole-disk image in UEFI mode and polls it to the end.
func installBootloader(ctx context.Context, t *testing.T, agent, console string) string {
	t.Helper()
	body := `{"name":"image.install_bootloader","params":{"root_uuid":null,"efi_system_part_uuid":null,"prep_boot_part_uuid":null,"target_boot_mode":"uefi"}}`
	var res ipa.CommandResult
	posted := false
	for deadline := time.Now().Add(2 * time.Minute); !posted; {
		st, b, err := do(ctx, "POST", agent+"/v1/commands/?wait=false&agent_token="+token, body)
		if err == nil && st == http.StatusOK {
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			posted = true
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not accept install_bootloader: HTTP %d %s %v\n%s", st, b, err, tail(console, 4000))
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); res.Status == ipa.StatusRunning; {
		if time.Now().After(deadline) {
			t.Fatalf("install_bootloader still running after 2 minutes\n%s", tail(console, 4000))
		}
		time.Sleep(500 * time.Millisecond)
		if st, b, err := do(ctx, "GET", agent+"/v1/commands/"+res.ID, ""); err == nil && st == http.StatusOK {
			_ = json.Unmarshal(b, &res)
		}
	}
	if res.Status != ipa.StatusSucceeded {
		t.Fatalf("install_bootloader: %+v\n%s", res, tail(console, 4000))
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// do sends one request to the agent; the forwarded port accepts
// connections before the guest listens, so errors are expected early.
func do(ctx context.Context, method, url, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// bds is what OVMF's boot manager printed (its BdsDxe lines).
func bds(console string) string {
	b, _ := os.ReadFile(console)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "BdsDxe"); i >= 0 {
			out = append(out, strings.TrimSpace(l[i:]))
		}
	}
	return strings.Join(out, "\n")
}
