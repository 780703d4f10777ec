package vm_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// virtioModules are the modules (=m in Debian's kernel) the guest insmods,
// in dependency order.
var virtioModules = []string{"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev",
	"virtio_pci", "virtio_blk", "failover", "net_failover", "virtio_net"}

type assets struct {
	kernel  string   // vmlinuz
	modules []string // .ko files in virtioModules order
	busybox string   // static busybox
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

// kernelPackage is the linux-image-<version>-amd64 package linux-image-amd64
// depends on.
func kernelPackage() (string, error) {
	pkg, err := kernelPackageOnce()
	if err != nil && aptUpdate() == nil {
		// The package lists were missing or stale: refresh once and retry.
		pkg, err = kernelPackageOnce()
	}
	return pkg, err
}

// aptUpdate refreshes the package lists (root only; a no-op error otherwise).
func aptUpdate() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root")
	}
	return exec.Command("apt-get", "update", "-qq").Run()
}

func kernelPackageOnce() (string, error) {
	out, err := exec.Command("apt-cache", "depends", "linux-image-amd64").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends linux-image-amd64: %v: %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if p, ok := strings.CutPrefix(l, "Depends: "); ok && strings.HasPrefix(p, "linux-image-") {
			return p, nil
		}
	}
	return "", fmt.Errorf("apt-cache depends linux-image-amd64 names no linux-image-<version>: %s", out)
}

// download fetches pkg with `apt-get download` and unpacks it into a fresh
// directory under tmp, returned.
func download(tmp, pkg string) (string, error) {
	x, err := downloadOnce(tmp, pkg)
	if err != nil && aptUpdate() == nil {
		_ = os.RemoveAll(filepath.Join(tmp, "dl-"+pkg))
		x, err = downloadOnce(tmp, pkg)
	}
	return x, err
}

func downloadOnce(tmp, pkg string) (string, error) {
	dl := filepath.Join(tmp, "dl-"+pkg)
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", err
	}
	c := exec.Command("apt-get", "download", pkg)
	c.Dir = dl
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %v: %s", pkg, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: got %v", pkg, debs)
	}
	x := filepath.Join(dl, "x")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], x).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %v: %s", debs[0], err, out)
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

// fetchAssets returns the kernel, its virtio modules and busybox, fetching
// them into the cache on the first run.
func fetchAssets(t *testing.T) assets {
	t.Helper()
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "%s not found: the VM test fetches its kernel and busybox with apt-get download", tool)
		}
	}
	cache := cacheDir(t)
	var a assets

	pkg, err := kernelPackage()
	if err != nil {
		missing(t, "%v", err)
	}
	kdir := filepath.Join(cache, pkg)
	if _, err := os.Stat(filepath.Join(kdir, "done")); err != nil {
		tmp, err := os.MkdirTemp(cache, "tmp-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		x, err := download(tmp, pkg)
		if err != nil {
			missing(t, "%v", err)
		}
		_ = os.RemoveAll(kdir)
		if err := os.MkdirAll(kdir, 0o755); err != nil {
			t.Fatal(err)
		}
		vmlinuz, _ := filepath.Glob(filepath.Join(x, "boot", "vmlinuz-*"))
		if len(vmlinuz) != 1 {
			t.Fatalf("%s: vmlinuz: %v", pkg, vmlinuz)
		}
		if err := copyFile(filepath.Join(kdir, "vmlinuz"), vmlinuz[0], 0o644); err != nil {
			t.Fatal(err)
		}
		found := map[string]string{}
		_ = filepath.WalkDir(filepath.Join(x, "lib", "modules"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".ko") {
				found[strings.TrimSuffix(d.Name(), ".ko")] = p
			}
			return nil
		})
		for _, m := range virtioModules {
			if found[m] == "" {
				t.Fatalf("%s has no %s.ko", pkg, m)
			}
			if err := copyFile(filepath.Join(kdir, m+".ko"), found[m], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(kdir, "done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.kernel = filepath.Join(kdir, "vmlinuz")
	for _, m := range virtioModules {
		a.modules = append(a.modules, filepath.Join(kdir, m+".ko"))
	}

	a.busybox = filepath.Join(cache, "busybox")
	if _, err := os.Stat(a.busybox); err != nil {
		tmp, err := os.MkdirTemp(cache, "tmp-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		x, err := download(tmp, "busybox-static")
		if err != nil {
			missing(t, "%v", err)
		}
		if err := copyFile(a.busybox+".tmp", filepath.Join(x, "bin", "busybox"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(a.busybox+".tmp", a.busybox); err != nil {
			t.Fatal(err)
		}
	}
	if strings.ContainsAny(a.busybox+a.kernel, " ,") {
		missing(t, "cache path %s holds a space or comma (qemu and ipmi_sim arguments)", cache)
	}
	return a
}
