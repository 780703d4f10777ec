package isoimage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/anvil-metal/anvil/internal/isoimage"
)

// fakeLoaders writes stand-ins for the loader files (the image's structure
// does not depend on their content; test/vm boots real ones).
func fakeLoaders(t *testing.T, dir string) isoimage.Loaders {
	t.Helper()
	l := isoimage.Loaders{ISOLinux: filepath.Join(dir, "isolinux.bin"), LDLinux: filepath.Join(dir, "ldlinux.c32"), EFI: filepath.Join(dir, "gcdx64.efi")}
	for _, f := range []string{l.ISOLinux, l.LDLinux} {
		if err := os.WriteFile(f, bytes.Repeat([]byte{0x90}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.EFI, bytes.Repeat([]byte("MZefi"), 300000), 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestBuildLaysOutBothBootPaths(t *testing.T) {
	dir := t.TempDir()
	l := fakeLoaders(t, dir)
	kernel, ramdisk := filepath.Join(dir, "k"), filepath.Join(dir, "r")
	os.WriteFile(kernel, []byte("KERNEL"), 0o600)
	os.WriteFile(ramdisk, bytes.Repeat([]byte("RAMDISK"), 100000), 0o600)
	dst := filepath.Join(dir, "boot.iso")
	cmdline := "console=ttyS0 ipa-api-url=http://127.0.0.1:6385"
	if err := isoimage.Build(context.Background(), dst, isoimage.Input{Kernel: kernel, Ramdisk: ramdisk, Cmdline: cmdline}, l); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, _ := os.ReadFile(dst)
	// El Torito's boot record volume descriptor is sector 17.
	if brvd := raw[17*2048 : 17*2048+40]; brvd[0] != 0 || !bytes.Contains(brvd, []byte("EL TORITO SPECIFICATION")) {
		t.Fatalf("no El Torito boot record at sector 17: %q", brvd)
	}
	fs, err := iso9660.Read(file.New(f, true), 0, 0, 2048)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) []byte {
		t.Helper()
		b, err := fs.ReadFile(strings.TrimPrefix(p, "/"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return b
	}
	if got := read("/vmlinuz"); string(got) != "KERNEL" {
		t.Errorf("/vmlinuz = %q", got)
	}
	if got := read("/initrd"); len(got) != 700000 {
		t.Errorf("/initrd has %d bytes, want 700000", len(got))
	}
	// go-diskfs cannot read back its subdirectories (no Rock Ridge name
	// on "."), so they are checked in the raw image, where files are
	// stored whole, and the EFI image is found through the boot catalog.
	for what, want := range map[string][]byte{
		"isolinux.cfg": []byte("LABEL anvil\n  KERNEL /vmlinuz\n  APPEND initrd=/initrd " + cmdline + "\n"),
		"grub.cfg":     []byte("linux /vmlinuz " + cmdline + "\n  initrd /initrd\n"),
		"ldlinux.c32":  mustRead(t, l.LDLinux),
		".disk/info":   []byte("Anvil agent ramdisk\n"),
	} {
		if !bytes.Contains(raw, want) {
			t.Errorf("the image does not hold %s", what)
		}
	}
	cat := raw[binary.LittleEndian.Uint32(raw[17*2048+71:])*2048:][:128]
	if cat[0] != 1 || cat[32] != 0x88 || cat[64]&0xfe != 0x90 || cat[65] != 0xef || cat[96] != 0x88 {
		t.Fatalf("boot catalog: want a bootable BIOS entry then an EFI section with a bootable entry: % x", cat)
	}
	// The BIOS entry loads isolinux.bin (bytes 8-63 are the boot-info table).
	if bios := raw[binary.LittleEndian.Uint32(cat[40:])*2048:][:2048]; !bytes.Equal(bios[64:], mustRead(t, l.ISOLinux)[64:2048]) {
		t.Error("the BIOS boot entry does not point at isolinux.bin")
	}
	espStart := int64(binary.LittleEndian.Uint32(cat[104:])) * 2048
	esp := filepath.Join(dir, "esp.img")
	os.WriteFile(esp, raw[espStart:], 0o600)
	ef, _ := os.Open(esp)
	defer ef.Close()
	fat, err := fat12.Read(file.New(ef, true), 2<<20, 0, 512)
	if err != nil {
		t.Fatalf("the EFI entry's image is not FAT12: %v", err)
	}
	efi, err := fat.ReadFile("EFI/BOOT/BOOTX64.EFI")
	if want := mustRead(t, l.EFI); err != nil || !bytes.Equal(efi, want) {
		t.Fatalf("ESP /EFI/BOOT/BOOTX64.EFI: %d bytes, %v; want the EFI loader (%d bytes)", len(efi), err, len(want))
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".iso*"))
	if len(leftovers) != 0 {
		t.Errorf("Build left %v behind", leftovers)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMissingLoadersNameTheirPackages(t *testing.T) {
	dir := t.TempDir()
	l := isoimage.Loaders{ISOLinux: filepath.Join(dir, "no-isolinux.bin"), LDLinux: filepath.Join(dir, "no-ldlinux.c32"), EFI: dir}
	err := isoimage.Build(context.Background(), filepath.Join(dir, "x.iso"), isoimage.Input{}, l)
	if !errors.Is(err, isoimage.ErrLoaderMissing) {
		t.Fatalf("err = %v, want ErrLoaderMissing", err)
	}
	for _, s := range []string{"no-isolinux.bin", "package isolinux", "package syslinux-common", "package grub-efi-amd64-bin", "not a regular file"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.iso")); err == nil {
		t.Error("an image was written without loaders")
	}
}

func TestCmdlineThatWouldChangeTheLoaderConfigIsRefused(t *testing.T) {
	dir := t.TempDir()
	l := fakeLoaders(t, dir)
	for _, c := range []string{"a\nDEFAULT evil", "x=$(reboot)", `quote="a b"`, "a; reboot", "a}"} {
		err := isoimage.Build(context.Background(), filepath.Join(dir, "x.iso"), isoimage.Input{Kernel: l.ISOLinux, Ramdisk: l.LDLinux, Cmdline: c}, l)
		if err == nil || !strings.Contains(err.Error(), "cannot be put in a boot loader configuration") {
			t.Errorf("cmdline %q: err = %v", c, err)
		}
	}
	if err := isoimage.CheckCmdline("console=ttyS0,115200n8 ipa-api-url=https://10.0.0.1:6385/ ipa-debug=1"); err != nil {
		t.Errorf("an ordinary command line is refused: %v", err)
	}
}

// BenchmarkBuild builds the image of an 8 MiB kernel and a 32 MiB ramdisk
// (the size of `anvil ramdisk build`'s), what a node's first virtual media
// boot waits for.
func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	l := isoimage.Loaders{ISOLinux: filepath.Join(dir, "isolinux.bin"), LDLinux: filepath.Join(dir, "ldlinux.c32"), EFI: filepath.Join(dir, "gcdx64.efi")}
	files := map[string]int{l.ISOLinux: 38912, l.LDLinux: 119524, l.EFI: 3833856, filepath.Join(dir, "k"): 8 << 20, filepath.Join(dir, "r"): 32 << 20}
	for p, n := range files {
		if err := os.WriteFile(p, bytes.Repeat([]byte{0x5a}, n), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	in := isoimage.Input{Kernel: filepath.Join(dir, "k"), Ramdisk: filepath.Join(dir, "r"), Cmdline: "console=ttyS0 ipa-api-url=http://10.0.0.1:6385"}
	b.SetBytes(40 << 20)
	for b.Loop() {
		if err := isoimage.Build(context.Background(), filepath.Join(dir, "boot.iso"), in, l); err != nil {
			b.Fatal(err)
		}
	}
}
