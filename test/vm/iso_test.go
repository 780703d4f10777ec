package vm_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/boot"
	"github.com/anvil-metal/anvil/internal/isoimage"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestVMBootsVirtualMediaISO: the ISO the redfish-virtual-media boot
// interface inserts, as the boot endpoint serves it (published by
// boot.Service.PublishISO, downloaded as a BMC does), boots a qemu VM from
// its CD drive into the agent, with SeaBIOS (El Torito BIOS entry, ISOLINUX)
// and with OVMF (El Torito EFI entry, GRUB); the kernel command line holds
// the node's parameters and ipa-api-url. The VM has user networking with
// restrict=on (the agent gets a lease, reaches nothing).
func TestVMBootsVirtualMediaISO(t *testing.T) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	if err := isoimage.DefaultLoaders().Check(); err != nil {
		missing(t, "%v", err)
	}
	a := buildRamdisk(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	svc, err := boot.New(boot.Config{Root: filepath.Join(t.TempDir(), "boot"), HTTPURL: base + "/boot", APIURL: "http://10.0.2.100:80",
		FileAllowedPaths: []string{filepath.Dir(a.kernel), filepath.Dir(a.initramfs)}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/boot/", http.StripPrefix("/boot", svc.Handler()))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	url, err := svc.PublishISO(ctx, "iso-node", boot.Ramdisk{Kernel: boot.Image{Source: a.kernel},
		Ramdisk: boot.Image{Source: a.initramfs}, KernelParams: "console=ttyS0 panic=-1"})
	if err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(t.TempDir(), "boot.iso")
	download(t, url, iso)

	params := "console=ttyS0 panic=-1 ipa-api-url=http://10.0.2.100:80 boot_method=vmedia"
	for _, fw := range []struct {
		name string
		// marks say which loader booted: ISOLINUX passes APPEND's initrd=,
		// GRUB does not; only OVMF makes the kernel find EFI.
		marks []string
		flags func(t *testing.T, dir string) []string
	}{
		{"BIOS", []string{"Command line: BOOT_IMAGE=/vmlinuz initrd=/initrd " + params}, func(*testing.T, string) []string { return nil }},
		{"UEFI", []string{"Command line: BOOT_IMAGE=/vmlinuz " + params, "efi: EFI v"}, func(t *testing.T, dir string) []string {
			code, vars := "/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"
			for _, f := range []string{code, vars} {
				if _, err := os.Stat(f); err != nil {
					missing(t, "OVMF firmware %s not found (Debian package ovmf)", f)
				}
			}
			b, err := os.ReadFile(vars)
			if err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(dir, "vars.fd")
			if err := os.WriteFile(own, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"-drive", "if=pflash,format=raw,readonly=on,file=" + code, "-drive", "if=pflash,format=raw,file=" + own}
		}},
	} {
		t.Run(fw.name, func(t *testing.T) {
			dir, st := vmStateDir(t)
			console := filepath.Join(st, "console.log")
			args := append([]string{"-accel", "tcg", "-m", "512", "-smp", "1", "-display", "none", "-no-reboot",
				"-cdrom", iso, "-boot", "d", "-nic", "user,model=virtio-net-pci,restrict=on",
				"-serial", "file:" + console}, fw.flags(t, dir)...)
			cmd := exec.CommandContext(ctx, qemu, args...)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			start := time.Now()
			want := append(fw.marks, "anvil-ramdisk: starting anvil agent", "agent started")
			ok := waitFor(ctx, 5*time.Minute, func() bool {
				b, _ := os.ReadFile(console)
				for _, w := range want {
					if !strings.Contains(string(b), w) {
						return false
					}
				}
				return true
			})
			if !ok {
				t.Fatalf("the VM did not boot the ISO into the agent within 5 minutes (want %q on the console):\n%s", want, readTail(console, 4000))
			}
			t.Logf("%s: CD boot to agent start in %s", fw.name, time.Since(start).Round(time.Second))
		})
	}
}

// download fetches url into path, as a BMC fetches virtual media.
func download(t *testing.T, url, path string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
