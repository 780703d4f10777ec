package efiboot_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/anvil-metal/anvil/internal/disk"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testos"
)

// TestTestOSReadsConfigDrive: the test OS whole-disk image (internal/testos)
// boots in OVMF from its removable-media path, finds the config drive the
// way Anvil's agent writes it on a whole-disk image (a partition at the
// disk's end, ISO 9660 labelled config-2) and prints the drive's hostname
// and its public key's SHA256 fingerprint as OpenSSH computes it.
func TestTestOSReadsConfigDrive(t *testing.T) {
	qemuBin := need(t, "qemu-system-x86_64", "qemu-system-x86")
	for _, f := range []string{ovmfCode, ovmfVars} {
		if _, err := os.Stat(f); err != nil {
			testbin.Missing(t, "OVMF firmware "+f+" not found (apt-get install ovmf)", vmSwitch)
		}
	}
	busybox := need(t, "busybox", "busybox-static")
	need(t, "grub-mkstandalone", "grub-common")
	need(t, "mkfs.fat", "dosfstools")
	need(t, "mcopy", "mtools")
	vmlinuz, modDir := installedKernel(t)
	mods, err := findModules(modDir, testos.Modules())
	if err != nil {
		testbin.Missing(t, err.Error(), vmSwitch)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	img, err := testos.BuildWholeDisk(ctx, dir, testos.Options{Kernel: vmlinuz, Modules: mods, Busybox: busybox})
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + " operator@example"
	cd, err := disk.BuildConfigDrive(disk.ConfigDrive{MetaData: map[string]any{"uuid": "0b7d6c7e-5a3e-4d8e-9f61-6e0d0d8f3a11",
		"hostname": "anvil-testos-host", "name": "anvil-testos-host", "public_keys": map[string]any{"operator": authorized}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The image written to a larger disk, then the config drive at its
	// end, as the agent does.
	if err := os.Truncate(img.Path, 192<<20); err != nil {
		t.Fatal(err)
	}
	p, err := disk.AddConfigDrivePartition(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(img.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(cd, p.Start); err != nil {
		t.Fatal(err)
	}
	f.Close()

	vars := filepath.Join(dir, "vars.fd")
	copyFile(t, ovmfVars, vars)
	console := filepath.Join(dir, "console.log")
	start := time.Now()
	vm := qemu(ctx, t, qemuBin, vars, console, "-drive", "file="+img.Path+",format=raw,if=virtio", "-nic", "none")
	exited := make(chan struct{})
	go func() { _ = vm.Wait(); close(exited) }()
	t.Cleanup(func() { _ = vm.Process.Kill(); <-exited })
	wantKey := testos.KeyLine + ssh.FingerprintSHA256(key) + " (ssh-ed25519)"
	if !waitConsole(vm, exited, console, wantKey, 3*time.Minute) {
		t.Fatalf("the test OS did not print %q within 3 minutes:\n%s", wantKey, tail(console, 5000))
	}
	b, _ := os.ReadFile(console)
	for _, want := range []string{testos.BootedLine, testos.HostnameLine + "anvil-testos-host"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("console lacks %q", want)
		}
	}
	logTestOS(t, string(b))
	t.Logf("firmware to config drive read in %s; disk image %d MiB", time.Since(start).Round(time.Second), fileSize(img.Path)>>20)
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// TestTestOSPartitionImage: the test OS partition image (an ext4 root file
// system, with the kernel and ramdisk that boot it, internal/testos) laid
// out as the agent lays out a partition image (disk.Layout: config drive
// partition, then root), booted the way a partition image boots without a
// boot loader on disk (its kernel and ramdisk, here qemu's -kernel/-initrd
// under SeaBIOS): the ramdisk finds and mounts the root file system, which
// reads the config drive and prints the hostname and key fingerprint.
func TestTestOSPartitionImage(t *testing.T) {
	qemuBin := need(t, "qemu-system-x86_64", "qemu-system-x86")
	busybox := need(t, "busybox", "busybox-static")
	need(t, "mkfs.ext4", "e2fsprogs")
	vmlinuz, modDir := installedKernel(t)
	mods, err := findModules(modDir, testos.PartitionModules())
	if err != nil {
		testbin.Missing(t, err.Error(), vmSwitch)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	img, err := testos.BuildPartition(ctx, dir, testos.Options{Kernel: vmlinuz, Modules: mods, Busybox: busybox}, 32)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile(img.Root)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewPublicKey(pub)
	cd, err := disk.BuildConfigDrive(disk.ConfigDrive{MetaData: map[string]any{"uuid": "5f0c3c55-1d0e-4a43-8f0e-6b6c2b0c9d21",
		"hostname": "anvil-partition-host", "public_keys": map[string]any{"k": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	diskPath := filepath.Join(dir, "disk.img")
	const size = 128 << 20
	if err := os.WriteFile(diskPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(diskPath, size); err != nil {
		t.Fatal(err)
	}
	layout := disk.Layout{BootMode: "bios", Label: disk.LabelGPT, RootMB: 32, ConfigDriveMB: 64}
	parts, err := layout.Plan(size)
	if err != nil {
		t.Fatal(err)
	}
	if err := disk.WriteTable(diskPath, layout.TableType(), parts); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(diskPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		switch p.Role {
		case disk.RoleRoot:
			_, err = f.WriteAt(root, p.Start)
		case disk.RoleConfigDrive:
			_, err = f.WriteAt(cd, p.Start)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	console := filepath.Join(dir, "console.log")
	cmd := exec.CommandContext(ctx, qemuBin, "-accel", "tcg", "-m", "512", "-smp", "1", "-display", "none", "-no-reboot",
		"-kernel", img.Kernel, "-initrd", img.Ramdisk, "-append", "console=ttyS0 panic=-1 loglevel=4",
		"-drive", "file="+diskPath+",format=raw,if=virtio", "-nic", "none", "-serial", "file:"+console)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	wantKey := testos.KeyLine + ssh.FingerprintSHA256(key) + " (ssh-ed25519)"
	if !waitConsole(cmd, exited, console, wantKey, 3*time.Minute) {
		t.Fatalf("the partition image did not print %q within 3 minutes:\n%s", wantKey, tail(console, 5000))
	}
	b, _ := os.ReadFile(console)
	for _, want := range []string{testos.BootedLine + " (partition image", testos.HostnameLine + "anvil-partition-host"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("console lacks %q", want)
		}
	}
	logTestOS(t, string(b))
}

// logTestOS logs the test OS's own console lines.
func logTestOS(t *testing.T, console string) {
	for _, l := range strings.Split(console, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "anvil-test-os:") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

// findModules returns the .ko file of each named module under dir, in the
// order given (the test OS loads exactly these, in order).
func findModules(dir string, names []string) ([]string, error) {
	found := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n, ok := strings.CutSuffix(d.Name(), ".ko"); ok && !d.IsDir() {
			found[strings.ReplaceAll(n, "-", "_")] = p
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, n := range names {
		if out[i] = found[strings.ReplaceAll(n, "-", "_")]; out[i] == "" {
			return nil, fmt.Errorf("module %s not found under %s", n, dir)
		}
	}
	return out, nil
}
