package vm_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ramdisk"
)

// assets is the deploy ramdisk `anvil ramdisk build` makes, and the busybox
// the qemu guest forwards run (busybox nc).
type assets struct {
	kernel, initramfs string
	busybox           string
}

func cacheDir(t *testing.T) string {
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

// buildRamdisk runs `anvil ramdisk build` (the test's anvil binary puts
// itself in the initramfs), fetching Debian's kernel and busybox into the
// cache on the first run, and reads the driver_info values it prints.
func buildRamdisk(t *testing.T) assets {
	t.Helper()
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "%s not found: the VM test fetches its kernel and busybox with apt-get download", tool)
		}
	}
	cache := cacheDir(t)
	if strings.ContainsAny(cache, " ,'") {
		missing(t, "cache path %s holds a space, comma or quote (qemu and ipmi_sim arguments)", cache)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "ramdisk")
	start := time.Now()
	cmd := exec.CommandContext(ctx, anvilBin, "ramdisk", "build", "--output", out, "--cache-dir", cache)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		missing(t, "anvil ramdisk build: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	a := assets{}
	for _, l := range strings.Split(stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "deploy_kernel="); ok {
			a.kernel = v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "deploy_ramdisk="); ok {
			a.initramfs = v
		}
	}
	if a.kernel != filepath.Join(out, "vmlinuz") || a.initramfs != filepath.Join(out, "initramfs") {
		t.Fatalf("anvil ramdisk build printed deploy_kernel=%q deploy_ramdisk=%q, want the files in %s:\n%s",
			a.kernel, a.initramfs, out, stdout.String())
	}
	for _, f := range []string{a.kernel, a.initramfs} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("anvil ramdisk build left no %s: %v", f, err)
		}
	}
	bb, err := ramdisk.Fetcher{CacheDir: cache}.Busybox(ctx)
	if err != nil {
		missing(t, "%v", err)
	}
	a.busybox = bb
	t.Logf("anvil ramdisk build: %v\n%s", time.Since(start).Round(time.Millisecond), stdout.String())
	return a
}
