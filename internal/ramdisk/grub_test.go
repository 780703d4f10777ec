package ramdisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestELFClosure: the libraries found for grub-install are those ldd
// (the dynamic loader itself) lists, plus the loader.
func TestELFClosure(t *testing.T) {
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		t.Skip("no ldd")
	}
	bin := "/bin/ls"
	if _, err := os.Stat(GRUBInstall); err == nil {
		bin = GRUBInstall
	}
	got, err := ELFClosure(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ldd, bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`(?m)(?:=> )?(/\S+) \(0x`).FindAllStringSubmatch(string(out), -1) {
		want = append(want, m[1])
	}
	slices.Sort(want)
	if !slices.Equal(got, want) || len(got) < 2 {
		t.Fatalf("ELFClosure(%s) = %v\nldd says %v", bin, got, want)
	}
	if _, err := ELFClosure("/etc/hostname"); err == nil {
		t.Error("a text file has a closure")
	}
}

// TestGRUBFiles: --grub brings grub-install, its loader and libraries, and
// per platform the images, lists and the boot modules with their
// dependencies, not every module; in the archive each keeps its mode.
func TestGRUBFiles(t *testing.T) {
	for _, f := range []string{GRUBInstall, "/usr/lib/grub/i386-pc/moddep.lst", "/usr/lib/grub/x86_64-efi/moddep.lst"} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s missing (grub2-common, grub-pc-bin, grub-efi-amd64-bin)", f)
		}
	}
	files, err := GRUBFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usr/sbin/grub-install", "lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6",
		"usr/lib/grub/i386-pc/boot.img", "usr/lib/grub/i386-pc/core.img", "usr/lib/grub/i386-pc/biosdisk.mod",
		"usr/lib/grub/i386-pc/ext2.mod", "usr/lib/grub/i386-pc/fshelp.mod", "usr/lib/grub/i386-pc/moddep.lst",
		"usr/lib/grub/x86_64-efi/kernel.img", "usr/lib/grub/x86_64-efi/part_gpt.mod", "usr/lib/grub/x86_64-efi/fat.mod",
		"usr/lib/grub/x86_64-efi/normal.mod", "usr/lib/grub/x86_64-efi/modinfo.sh"} {
		if want == "usr/lib/grub/i386-pc/core.img" {
			continue // not shipped: grub-install makes it
		}
		if files[want] == "" {
			t.Errorf("no %s", want)
		}
	}
	for _, not := range []string{"usr/lib/grub/x86_64-efi/biosdisk.mod", "usr/lib/grub/x86_64-efi/xfs.mod", "usr/lib/grub/i386-pc/btrfs.mod"} {
		if files[not] != "" {
			t.Errorf("%s included", not)
		}
	}
	if src := files["usr/lib/grub/x86_64-efi/fshelp.mod"]; src != "/usr/lib/grub/x86_64-efi/fshelp.mod" {
		t.Errorf("ext2's dependency fshelp: %q", src)
	}
	entries, err := Entries(Spec{Anvil: "/bin/busybox", Busybox: "/bin/busybox", Files: files})
	if err != nil {
		if strings.Contains(err.Error(), "dynamically linked") {
			t.Skip("no static busybox at /bin/busybox")
		}
		t.Fatal(err)
	}
	modes := map[string]uint32{}
	for _, e := range entries {
		modes[e.Name] = e.Mode
	}
	if modes["usr/sbin/grub-install"] != TypeRegular|0o755 || modes["usr/lib/grub/i386-pc/boot.img"] != TypeRegular|0o644 {
		t.Errorf("modes: grub-install %o, boot.img %o", modes["usr/sbin/grub-install"], modes["usr/lib/grub/i386-pc/boot.img"])
	}
	if modes[filepath.Dir("usr/lib/grub/i386-pc/boot.img")] != TypeDir|0o755 {
		t.Error("no directory entry for usr/lib/grub/i386-pc")
	}
}
