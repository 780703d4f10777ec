package boot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/isoimage"
)

// isoFixture is a fixture whose service builds images with stand-in loader
// files (internal/isoimage and test/vm check the images themselves).
func isoFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	dir := t.TempDir()
	f.loaders = isoimage.Loaders{ISOLinux: filepath.Join(dir, "isolinux.bin"), LDLinux: filepath.Join(dir, "ldlinux.c32"), EFI: filepath.Join(dir, "bootx64.efi")}
	for _, p := range []string{f.loaders.ISOLinux, f.loaders.LDLinux, f.loaders.EFI} {
		if err := os.WriteFile(p, bytes.Repeat([]byte{0x90}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.restart(t)
	return f
}

func isoEntries(t *testing.T, f *fixture) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(f.root, "cache", "iso-*.iso"))
	return m
}

func TestPublishISOServesItUnderAnUnguessableURL(t *testing.T) {
	f := isoFixture(t)
	ctx := context.Background()
	url, err := f.svc.PublishISO(ctx, "node-1", f.rd)
	if err != nil {
		t.Fatal(err)
	}
	prefix := f.bootURL() + "/n/"
	token, ok := strings.CutSuffix(strings.TrimPrefix(url, prefix), "/boot.iso")
	if !strings.HasPrefix(url, prefix) || !ok || len(token) < 26 {
		t.Fatalf("URL %s: want %s{token of at least 128 bits}/boot.iso", url, prefix)
	}
	resp, body := get(t, "GET", url)
	if resp.StatusCode != 200 || !bytes.Contains(body, f.kernel) || !bytes.Contains(body, f.ramdisk) {
		t.Fatalf("GET %s: %s, %d bytes; want the image holding the kernel and the ramdisk", url, resp.Status, len(body))
	}
	want := "console=ttyS0 ipa-debug=1 ipa-api-url=http://10.0.2.100:6385 boot_method=vmedia"
	if !bytes.Contains(body, []byte("APPEND initrd=/initrd "+want+"\n")) {
		t.Errorf("the image's command line is not %q", want)
	}
	if r, _ := get(t, "GET", prefix+token+"/kernel"); r.StatusCode != 404 {
		t.Errorf("an ISO publish serves a kernel: %s", r.Status)
	}
	if r, _ := get(t, "GET", strings.Replace(url, token, strings.ToLower(token[:26])+"x", 1)); r.StatusCode != 404 {
		t.Errorf("another token is served: %s", r.Status)
	}

	// A second node with the same ramdisk and parameters shares the build;
	// other parameters make another image.
	url2, err := f.svc.PublishISO(ctx, "node-2", f.rd)
	if err != nil || url2 == url {
		t.Fatalf("second node: %s, %v; want its own URL", url2, err)
	}
	if n := len(isoEntries(t, f)); n != 1 {
		t.Errorf("%d images built for one (kernel, ramdisk, params), want 1", n)
	}
	rd := f.rd
	rd.KernelParams = "console=ttyS1"
	if _, err := f.svc.PublishISO(ctx, "node-2", rd); err != nil {
		t.Fatal(err)
	}
	if n := len(isoEntries(t, f)); n != 2 {
		t.Errorf("%d images after new parameters, want 2", n)
	}

	// Withdraw deletes the node's copy; the URL is gone, even after a restart.
	if err := f.svc.Withdraw(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	f.restart(t)
	if r, _ := get(t, "GET", url); r.StatusCode != 404 {
		t.Errorf("withdrawn ISO still served: %s", r.Status)
	}
	if r, _ := get(t, "GET", url2); r.StatusCode != 200 {
		t.Errorf("node-2's ISO not served after a restart: %s", r.Status)
	}
}

func TestPublishISOErrors(t *testing.T) {
	f := newFixture(t)
	f.loaders = isoimage.Loaders{ISOLinux: "/nonexistent/isolinux.bin", LDLinux: "/nonexistent/ldlinux.c32", EFI: "/nonexistent/gcdx64.efi"}
	f.restart(t)
	_, err := f.svc.PublishISO(context.Background(), "n", f.rd)
	if !errors.Is(err, isoimage.ErrLoaderMissing) || !strings.Contains(err.Error(), "package isolinux") {
		t.Errorf("missing loaders: %v", err)
	}
	if err := f.svc.CheckISOLoaders(); !errors.Is(err, isoimage.ErrLoaderMissing) {
		t.Errorf("CheckISOLoaders = %v", err)
	}

	f = isoFixture(t)
	rd := f.rd
	rd.KernelParams = "a\"b"
	if _, err := f.svc.PublishISO(context.Background(), "n", rd); err == nil || !strings.Contains(err.Error(), "boot loader configuration") {
		t.Errorf("quote in params: %v", err)
	}
	rd = f.rd
	rd.Ramdisk.Source = f.images.URL + "/missing"
	rd.Ramdisk.Checksum = ""
	if _, err := f.svc.PublishISO(context.Background(), "n", rd); err == nil || !strings.Contains(err.Error(), "ramdisk") {
		t.Errorf("missing ramdisk: %v", err)
	}
	if r, _ := get(t, "GET", f.bootURL()+"/boot.ipxe"); r.StatusCode != 200 {
		t.Errorf("generic script: %s", r.Status)
	}
}
