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
	result            ramdisk.Result
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

// buildRamdisk builds the deploy ramdisk with internal/ramdisk (what `anvil
// ramdisk build` runs) around the test's anvil binary, fetching Debian's
// kernel and busybox into the cache on the first run.
func buildRamdisk(t *testing.T) assets {
	t.Helper()
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "%s not found: the VM test fetches its kernel and busybox with apt-get download", tool)
		}
	}
	cache := cacheDir(t)
	if strings.ContainsAny(cache, " ,") {
		missing(t, "cache path %s holds a space or comma (qemu and ipmi_sim arguments)", cache)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "ramdisk")
	start := time.Now()
	r, err := ramdisk.Build(ctx, ramdisk.Options{OutputDir: out, Anvil: anvilBin, CacheDir: cache})
	if err != nil {
		missing(t, "%v", err)
	}
	bb, err := ramdisk.Fetcher{CacheDir: cache}.Busybox(ctx)
	if err != nil {
		missing(t, "%v", err)
	}
	t.Logf("deploy ramdisk built in %v (%s)", time.Since(start).Round(time.Millisecond), r.KernelPackage)
	return assets{kernel: r.Kernel, initramfs: r.Initramfs, busybox: bb, result: r}
}
