package ramdisk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kernel is a kernel image and its module tree.
type Kernel struct {
	Package    string // the Debian package it came from ("" for a given file)
	Vmlinuz    string // path of the kernel image
	ModulesDir string // its lib/modules/<release> ("": none)
}

// Fetcher downloads Debian's kernel and busybox with apt-get into CacheDir
// (created if missing) and reuses what an earlier run left there.
type Fetcher struct {
	CacheDir string
	Log      *slog.Logger // nil: quiet
}

// DefaultCacheDir is $XDG_CACHE_HOME/anvil/ramdisk (~/.cache/...).
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "anvil", "ramdisk")
}

func (f Fetcher) logf(format string, args ...any) {
	if f.Log != nil {
		f.Log.Info(fmt.Sprintf(format, args...))
	}
}

// Kernel returns the kernel linux-image-amd64 currently depends on (from
// `apt-cache depends`) with its whole module tree, downloading it on the
// first call.
func (f Fetcher) Kernel(ctx context.Context) (Kernel, error) {
	pkg, err := f.kernelPackage(ctx)
	if err != nil {
		return Kernel{}, err
	}
	dir := filepath.Join(f.CacheDir, pkg)
	k := Kernel{Package: pkg, Vmlinuz: filepath.Join(dir, "vmlinuz"), ModulesDir: filepath.Join(dir, "modules")}
	if _, err := os.Stat(filepath.Join(dir, "tree-done")); err == nil {
		return k, nil
	}
	f.logf("downloading %s", pkg)
	x, cleanup, err := f.download(ctx, pkg)
	if err != nil {
		return Kernel{}, err
	}
	defer cleanup()
	vmlinuz, _ := filepath.Glob(filepath.Join(x, "boot", "vmlinuz-*"))
	if len(vmlinuz) != 1 {
		return Kernel{}, fmt.Errorf("%s holds %d boot/vmlinuz-* files, want 1", pkg, len(vmlinuz))
	}
	trees, _ := filepath.Glob(filepath.Join(x, "lib", "modules", "*"))
	if len(trees) != 1 {
		return Kernel{}, fmt.Errorf("%s holds %d lib/modules/* trees, want 1", pkg, len(trees))
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Kernel{}, err
	}
	if err := copyFile(k.Vmlinuz, vmlinuz[0], 0o644); err != nil {
		return Kernel{}, err
	}
	if err := os.Rename(trees[0], k.ModulesDir); err != nil {
		return Kernel{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tree-done"), nil, 0o644); err != nil {
		return Kernel{}, err
	}
	return k, nil
}

// Firmware returns the lib/firmware of Debian's firmware-linux-free (the
// firmware of the main archive), downloading it on the first call.
func (f Fetcher) Firmware(ctx context.Context) (string, error) {
	const pkg = "firmware-linux-free"
	dir := filepath.Join(f.CacheDir, pkg)
	fw := filepath.Join(dir, "firmware")
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return fw, nil
	}
	f.logf("downloading %s", pkg)
	x, cleanup, err := f.download(ctx, pkg)
	if err != nil {
		return "", err
	}
	defer cleanup()
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(x, "lib", "firmware"), fw); err != nil {
		return "", fmt.Errorf("%s: %w", pkg, err)
	}
	return fw, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
}

// Busybox returns Debian busybox-static's /bin/busybox, downloading it on
// the first call.
func (f Fetcher) Busybox(ctx context.Context) (string, error) {
	path := filepath.Join(f.CacheDir, "busybox")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	f.logf("downloading busybox-static")
	x, cleanup, err := f.download(ctx, "busybox-static")
	if err != nil {
		return "", err
	}
	defer cleanup()
	if err := copyFile(path+".tmp", filepath.Join(x, "bin", "busybox"), 0o755); err != nil {
		return "", err
	}
	return path, os.Rename(path+".tmp", path)
}

// kernelPackage is the linux-image-<version> package linux-image-amd64
// depends on; missing package lists are refreshed once.
func (f Fetcher) kernelPackage(ctx context.Context) (string, error) {
	pkg, err := kernelPackageOnce(ctx)
	if err != nil && aptUpdate(ctx) == nil {
		pkg, err = kernelPackageOnce(ctx)
	}
	return pkg, err
}

func kernelPackageOnce(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", "linux-image-amd64").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends linux-image-amd64: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return parseDepends(string(out))
}

// parseDepends picks the linux-image-<version> line of `apt-cache depends
// linux-image-amd64`.
func parseDepends(out string) (string, error) {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if p, ok := strings.CutPrefix(l, "Depends: "); ok && strings.HasPrefix(p, "linux-image-") {
			return p, nil
		}
	}
	return "", errors.New("apt-cache depends linux-image-amd64 names no linux-image-<version> package")
}

// aptUpdate refreshes the package lists (root only).
func aptUpdate(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	return exec.CommandContext(ctx, "apt-get", "update", "-qq").Run()
}

// download fetches pkg with `apt-get download` and unpacks it with
// `dpkg-deb -x` into a temporary directory under the cache; cleanup removes
// it. A failure is retried once after `apt-get update`.
func (f Fetcher) download(ctx context.Context, pkg string) (string, func(), error) {
	if err := os.MkdirAll(f.CacheDir, 0o755); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(f.CacheDir, "tmp-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	x, err := downloadOnce(ctx, tmp, pkg)
	if err != nil && aptUpdate(ctx) == nil {
		_ = os.RemoveAll(filepath.Join(tmp, "dl"))
		x, err = downloadOnce(ctx, tmp, pkg)
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return x, cleanup, nil
}

func downloadOnce(ctx context.Context, tmp, pkg string) (string, error) {
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("fetching %s needs %s: %w", pkg, tool, err)
		}
	}
	dl := filepath.Join(tmp, "dl")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", err
	}
	c := exec.CommandContext(ctx, "apt-get", "download", pkg)
	c.Dir = dl
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w: %s", pkg, err, strings.TrimSpace(string(out)))
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %d .deb files, want 1", pkg, len(debs))
	}
	x := filepath.Join(dl, "x")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], x).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %w: %s", debs[0], err, strings.TrimSpace(string(out)))
	}
	return x, nil
}

func copyFile(dst, src string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}
