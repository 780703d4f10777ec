package efitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/disk"
)

// File is one file on the ESP, by its path (EFI/BOOT/BOOTX64.EFI); files
// are copied in the order given, so directories appear on disk in the
// order their first file names them.
type File struct {
	Path string
	Data []byte
}

// Spec describes a whole-disk image.
type Spec struct {
	SizeMiB int64 // the disk
	ESPMiB  int64 // the EFI system partition, from 1 MiB on
	FATBits int   // 12, 16 or 32; 0: mkfs.fat's choice
	Files   []File
	RootMiB int64 // a Linux root partition after the ESP (0: none)
	// RootData is written at the root partition's start.
	RootData []byte
	// BIOSBoot, if set, is the content of a GPT BIOS boot partition after
	// the ESP (whole MiBs), e.g. a GRUB i386-pc core image.
	BIOSBoot []byte
}

// Image is a built image.
type Image struct {
	Path string
	ESP  disk.Partition
	Root disk.Partition // zero without a root partition
	// BIOSBoot is the BIOS boot partition (zero without Spec.BIOSBoot).
	BIOSBoot disk.Partition
}

// Build writes the image to dir/disk.img.
func Build(ctx context.Context, dir string, s Spec) (Image, error) {
	const mib = 1 << 20
	img := Image{Path: filepath.Join(dir, "disk.img")}
	if err := os.WriteFile(img.Path, nil, 0o644); err != nil {
		return img, err
	}
	if err := os.Truncate(img.Path, s.SizeMiB*mib); err != nil {
		return img, err
	}
	parts := []disk.Partition{{Role: disk.RoleEFI, Number: 1, Start: mib, Size: s.ESPMiB * mib}}
	next := (1 + s.ESPMiB) * mib
	if len(s.BIOSBoot) > 0 {
		size := (int64(len(s.BIOSBoot)) + mib - 1) / mib * mib
		parts = append(parts, disk.Partition{Role: disk.RoleBIOSBoot, Number: len(parts) + 1, Start: next, Size: size})
		next += size
	}
	if s.RootMiB > 0 {
		parts = append(parts, disk.Partition{Role: disk.RoleRoot, Number: len(parts) + 1, Start: next, Size: s.RootMiB * mib})
	}
	if err := disk.WriteTable(img.Path, disk.LabelGPT, parts); err != nil {
		return img, err
	}
	f, err := os.Open(img.Path)
	if err != nil {
		return img, err
	}
	_, got, err := disk.ReadTable(f)
	f.Close()
	if err != nil || len(got) != len(parts) {
		return img, fmt.Errorf("efitest: reading back the table: %v (%d partitions)", err, len(got))
	}
	img.ESP = got[0]
	for i, p := range parts[1:] {
		switch p.Role {
		case disk.RoleBIOSBoot:
			img.BIOSBoot = got[i+1]
		case disk.RoleRoot:
			img.Root = got[i+1]
		}
	}
	fat := filepath.Join(dir, "esp.fat")
	_ = os.Remove(fat)
	args := []string{"-C", "-n", "ESP"}
	if s.FATBits != 0 {
		args = append(args, "-F", fmt.Sprint(s.FATBits))
	}
	if err := run(ctx, "mkfs.fat", append(args, fat, fmt.Sprint(s.ESPMiB*1024))...); err != nil {
		return img, err
	}
	made := map[string]bool{}
	for _, file := range s.Files {
		var dirs []string
		for d := path.Dir(file.Path); d != "." && d != "/"; d = path.Dir(d) {
			dirs = append(dirs, d)
		}
		slices.Reverse(dirs)
		for _, d := range dirs {
			if !made[d] {
				if err := run(ctx, "mmd", "-i", fat, "::/"+d); err != nil {
					return img, err
				}
				made[d] = true
			}
		}
		src := filepath.Join(dir, "efitest.src")
		if err := os.WriteFile(src, file.Data, 0o644); err != nil {
			return img, err
		}
		if err := run(ctx, "mcopy", "-i", fat, src, "::/"+file.Path); err != nil {
			return img, err
		}
		os.Remove(src)
	}
	b, err := os.ReadFile(fat)
	if err != nil {
		return img, err
	}
	os.Remove(fat)
	out, err := os.OpenFile(img.Path, os.O_RDWR, 0)
	if err != nil {
		return img, err
	}
	defer out.Close()
	if _, err := out.WriteAt(b, img.ESP.Start); err != nil {
		return img, err
	}
	if len(s.BIOSBoot) > 0 {
		if _, err := out.WriteAt(s.BIOSBoot, img.BIOSBoot.Start); err != nil {
			return img, err
		}
	}
	if len(s.RootData) > 0 && img.Root.Number > 0 {
		if _, err := out.WriteAt(s.RootData, img.Root.Start); err != nil {
			return img, err
		}
	}
	return img, out.Sync()
}

func run(ctx context.Context, name string, args ...string) error {
	bin := name
	if p, err := exec.LookPath(name); err == nil {
		bin = p
	} else if _, err := os.Stat("/usr/sbin/" + name); err == nil {
		bin = "/usr/sbin/" + name
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("efitest: %s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
