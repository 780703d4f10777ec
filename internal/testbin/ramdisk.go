package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ramdisk"
)

// Ramdisk is a deploy ramdisk `anvil ramdisk build` made, and the static
// busybox a qemu guest's forwards run (busybox nc).
type Ramdisk struct {
	Kernel, Initramfs string
	Busybox           string
}

// VMCacheDir is where the VM tests keep Debian's kernel and busybox
// ($XDG_CACHE_HOME/anvil-vm-test), downloaded once.
func VMCacheDir(t testing.TB) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	d := filepath.Join(base, "anvil-vm-test")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// BuildRamdisk runs `anvil ramdisk build` with extra flags (anvilBin puts
// itself in the initramfs), fetching Debian's kernel and busybox into
// VMCacheDir on the first run, and reads the driver_info values it
// prints. A missing apt-get or a failed download is Missing (envs).
func BuildRamdisk(t testing.TB, anvilBin string, envs []string, extra ...string) Ramdisk {
	t.Helper()
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			Missing(t, tool+" not found: the VM tests fetch their kernel and busybox with apt-get download", envs...)
		}
	}
	cache := VMCacheDir(t)
	if strings.ContainsAny(cache, " ,'") {
		Missing(t, "cache path "+cache+" holds a space, comma or quote (qemu and ipmi_sim arguments)", envs...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "ramdisk")
	start := time.Now()
	cmd := exec.CommandContext(ctx, anvilBin, append([]string{"ramdisk", "build", "--output", out, "--cache-dir", cache}, extra...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		Missing(t, fmt.Sprintf("anvil ramdisk build: %v\n%s%s", err, stdout.String(), stderr.String()), envs...)
	}
	a := Ramdisk{}
	for _, l := range strings.Split(stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "deploy_kernel="); ok {
			a.Kernel = v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "deploy_ramdisk="); ok {
			a.Initramfs = v
		}
	}
	if a.Kernel != filepath.Join(out, "vmlinuz") || a.Initramfs != filepath.Join(out, "initramfs") {
		t.Fatalf("anvil ramdisk build printed deploy_kernel=%q deploy_ramdisk=%q, want the files in %s:\n%s",
			a.Kernel, a.Initramfs, out, stdout.String())
	}
	for _, f := range []string{a.Kernel, a.Initramfs} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("anvil ramdisk build left no %s: %v", f, err)
		}
	}
	bb, err := ramdisk.Fetcher{CacheDir: cache}.Busybox(ctx)
	if err != nil {
		Missing(t, err.Error(), envs...)
	}
	a.Busybox = bb
	t.Logf("anvil ramdisk build %s: %v\n%s", strings.Join(extra, " "), time.Since(start).Round(time.Millisecond), stdout.String())
	return a
}
