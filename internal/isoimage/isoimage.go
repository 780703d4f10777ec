package isoimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// Loaders are the boot loader files an image is built with.
type Loaders struct {
	ISOLinux string // isolinux.bin (Debian package isolinux)
	LDLinux  string // ldlinux.c32 (Debian package syslinux-common)
	EFI      string // the EFI loader installed as BOOTX64.EFI: GRUB for CD boot, gcdx64.efi (Debian package grub-efi-amd64-bin)
}

// DefaultLoaders are where Debian's packages install the loaders.
func DefaultLoaders() Loaders {
	return Loaders{
		ISOLinux: "/usr/lib/ISOLINUX/isolinux.bin",
		LDLinux:  "/usr/lib/syslinux/modules/bios/ldlinux.c32",
		EFI:      "/usr/lib/grub/x86_64-efi/monolithic/gcdx64.efi",
	}
}

// ErrLoaderMissing is wrapped by the errors of Check when a loader file is absent.
var ErrLoaderMissing = errors.New("ISO boot loader not found")

// Check reports every loader file that cannot be read, naming the Debian
// package that provides it.
func (l Loaders) Check() error {
	var problems []string
	for _, f := range []struct{ path, what, pkg string }{
		{l.ISOLinux, "isolinux.bin (BIOS boot)", "isolinux"},
		{l.LDLinux, "ldlinux.c32 (BIOS boot)", "syslinux-common"},
		{l.EFI, "the EFI loader gcdx64.efi (UEFI boot)", "grub-efi-amd64-bin"},
	} {
		if f.path == "" {
			problems = append(problems, fmt.Sprintf("%s: no path given (Debian package %s provides it)", f.what, f.pkg))
			continue
		}
		st, err := os.Stat(f.path)
		if err == nil && !st.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s at %s: %v (install Debian package %s, or point Anvil at the file)", f.what, f.path, unwrapPath(err), f.pkg))
		}
	}
	if problems != nil {
		return fmt.Errorf("%w: %s", ErrLoaderMissing, strings.Join(problems, "; "))
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Input is what the image boots.
type Input struct {
	Kernel  string // path of the kernel
	Ramdisk string // path of the initramfs
	Cmdline string // kernel command line
}

// CheckCmdline refuses a command line that either loader's syntax would
// change: control characters, quotes, backslashes and GRUB's special
// characters ($ ; { } | & < >).
func CheckCmdline(s string) error {
	if i := strings.IndexFunc(s, func(r rune) bool {
		return r < 0x20 || r == 0x7f || strings.ContainsRune(`"'\$;{}|&<>`, r)
	}); i >= 0 {
		return fmt.Errorf("kernel command line %q: character %q cannot be put in a boot loader configuration", s, s[i])
	}
	return nil
}

// Names inside the image.
const (
	kernelName  = "vmlinuz"
	ramdiskName = "initrd"
	espName     = "boot/efiboot.img"
	volumeID    = "ANVIL_BOOT"
)

// Build writes the bootable image of in to dst (replacing it atomically).
// Large inputs are hard-linked into the build's workspace where possible.
func Build(ctx context.Context, dst string, in Input, l Loaders) error {
	if err := l.Check(); err != nil {
		return err
	}
	if err := CheckCmdline(in.Cmdline); err != nil {
		return err
	}
	ws, err := os.MkdirTemp(filepath.Dir(dst), ".iso-work-*")
	if err != nil {
		return fmt.Errorf("building ISO: %w", err)
	}
	defer os.RemoveAll(ws)
	if err := fill(ctx, ws, in, l); err != nil {
		return fmt.Errorf("building ISO: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".iso-*")
	if err != nil {
		return fmt.Errorf("building ISO: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	err = finalize(tmp, ws)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return fmt.Errorf("building ISO: %w", err)
	}
	return nil
}

// fill lays the image's tree out in ws.
func fill(ctx context.Context, ws string, in Input, l Loaders) error {
	for _, d := range []string{"isolinux", "boot/grub", ".disk"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o700); err != nil {
			return err
		}
	}
	for _, f := range []struct{ src, dst string }{
		{in.Kernel, kernelName}, {in.Ramdisk, ramdiskName},
		{l.ISOLinux, "isolinux/isolinux.bin"}, {l.LDLinux, "isolinux/ldlinux.c32"},
	} {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := linkOrCopy(f.src, filepath.Join(ws, f.dst)); err != nil {
			return err
		}
	}
	files := map[string]string{
		"isolinux/isolinux.cfg": isolinuxConfig(in.Cmdline),
		"boot/grub/grub.cfg":    grubConfig(in.Cmdline),
		".disk/info":            "Anvil agent ramdisk\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return writeESP(filepath.Join(ws, espName), l.EFI)
}

// isolinuxConfig boots the kernel at once, without a prompt.
func isolinuxConfig(cmdline string) string {
	return "DEFAULT anvil\nPROMPT 0\nTIMEOUT 0\nLABEL anvil\n  KERNEL /" + kernelName +
		"\n  APPEND initrd=/" + ramdiskName + " " + cmdline + "\n"
}

// grubConfig boots the kernel at once, without a menu.
func grubConfig(cmdline string) string {
	return "set timeout=0\nset default=0\nmenuentry \"Anvil agent ramdisk\" {\n  linux /" + kernelName + " " + cmdline +
		"\n  initrd /" + ramdiskName + "\n}\n"
}

// writeESP writes a FAT12 EFI system partition image (FAT12, as the EFI
// images of Debian's installer discs: OVMF ignores a FAT32 volume too small
// to count as FAT32 by its clusters) holding efi as
// /EFI/BOOT/BOOTX64.EFI, sized to fit.
func writeESP(path, efi string) error {
	data, err := os.ReadFile(efi)
	if err != nil {
		return err
	}
	const mib = 1 << 20
	size := (int64(len(data))/mib + 2) * mib // the file, the FATs and the directories
	store, err := file.CreateFromPath(path, size)
	if err != nil {
		return err
	}
	defer func() {
		if f, err := store.Sys(); err == nil {
			f.Close()
		}
	}()
	fs, err := fat12.Create(store, size, 0, 512, "ANVIL_EFI", true)
	if err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	if err := fs.Mkdir("/EFI/BOOT"); err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	f, err := fs.OpenFile("/EFI/BOOT/BOOTX64.EFI", os.O_CREATE|os.O_RDWR)
	if err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	return f.Close()
}

// finalize writes the ISO 9660 image of ws to out.
func finalize(out *os.File, ws string) error {
	fs, err := iso9660.Create(file.New(out, false), 0, 0, 2048, ws)
	if err != nil {
		return err
	}
	bios := &iso9660.ElToritoEntry{Platform: iso9660.BIOS, Emulation: iso9660.NoEmulation,
		BootFile: "/isolinux/isolinux.bin", BootTable: true}
	bios.SetLoadSize(4)
	return fs.Finalize(iso9660.FinalizeOptions{
		RockRidge:        true,
		VolumeIdentifier: volumeID,
		ElTorito: &iso9660.ElTorito{
			BootCatalog: "/isolinux/boot.cat",
			Entries: []*iso9660.ElToritoEntry{
				bios,
				{Platform: iso9660.EFI, Emulation: iso9660.NoEmulation, BootFile: "/" + espName},
			},
		},
	})
}

// linkOrCopy makes dst a hard link to src, or a copy where links are not possible.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
