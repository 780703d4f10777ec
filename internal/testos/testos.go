package testos

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/anvil-metal/anvil/internal/agent/efitest"
	"github.com/anvil-metal/anvil/internal/ramdisk"
)

// Console lines the system prints.
const (
	BootedLine   = "anvil-test-os: booted from disk"
	HostnameLine = "anvil-test-os: hostname "   // + the config drive's hostname
	KeyLine      = "anvil-test-os: public key " // + SHA256:... (type comment)
	NoDriveLine  = "anvil-test-os: no config drive"
)

// Modules are the kernel modules the system loads (Debian builds them as
// =m), in dependency order: virtio disks, and ISO 9660 for the config drive.
func Modules() []string {
	return []string{"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci", "virtio_blk", "cdrom", "isofs"}
}

// Options are the parts of the image.
type Options struct {
	Kernel  string   // vmlinuz (Debian's, with an EFI stub)
	Modules []string // .ko files of Modules(), in that order
	Busybox string   // static busybox
	SizeMiB int64    // the disk (default 96)
	// OwnGRUB gives the partition image GRUB 2 of its own, from this
	// machine: grub-install and grub-mkconfig with the programs, scripts
	// (/etc/grub.d/00_header, 10_linux) and libraries they use, GRUB's
	// i386-pc and x86_64-efi files and busybox's applets as commands, so
	// that the agent runs them in a chroot as IPA does.
	OwnGRUB bool
	// BIOS makes the whole-disk image boot on BIOS machines too: GRUB for
	// i386-pc (grub-mkstandalone, grubConfig inside) in a BIOS boot
	// partition, GRUB's boot.img in the MBR pointing at it.
	BIOS bool
}

// BuildWholeDisk writes the image to dir/disk.img.
func BuildWholeDisk(ctx context.Context, dir string, o Options) (efitest.Image, error) {
	if o.SizeMiB == 0 {
		o.SizeMiB = 96
	}
	kernel, err := os.ReadFile(o.Kernel)
	if err != nil {
		return efitest.Image{}, err
	}
	initrd, err := initramfs(o)
	if err != nil {
		return efitest.Image{}, err
	}
	grub, err := grubEFI(ctx, dir)
	if err != nil {
		return efitest.Image{}, err
	}
	spec := efitest.Spec{SizeMiB: o.SizeMiB, ESPMiB: 48, Files: []efitest.File{
		{Path: "EFI/BOOT/BOOTX64.EFI", Data: grub},
		{Path: "anvil-test-os", Data: []byte("anvil test OS\n")},
		{Path: "vmlinuz", Data: kernel},
		{Path: "initrd", Data: initrd},
	}}
	var bootImg []byte
	if o.BIOS {
		if spec.BIOSBoot, err = grubStandalone(ctx, dir, "i386-pc", "biosdisk part_gpt fat search search_fs_file linux normal configfile echo memdisk tar boot"); err != nil {
			return efitest.Image{}, err
		}
		if bootImg, err = os.ReadFile("/usr/lib/grub/i386-pc/boot.img"); err != nil {
			return efitest.Image{}, fmt.Errorf("GRUB's i386-pc boot.img (grub-pc-bin): %w", err)
		}
	}
	img, err := efitest.Build(ctx, dir, spec)
	if err != nil || !o.BIOS {
		return img, err
	}
	return img, setupBIOSBoot(img.Path, bootImg, img.BIOSBoot.Start, len(spec.BIOSBoot))
}

// setupBIOSBoot does what grub-bios-setup does for a GPT disk with a BIOS
// boot partition, on an image file: GRUB's boot.img becomes the MBR's
// code (the disk signature and partition table kept), told the sector the
// core image starts at; the core image's first sector (diskboot.img) is
// given the block list of the rest of it, which follows contiguously.
func setupBIOSBoot(path string, bootImg []byte, coreStart int64, coreLen int) error {
	const (
		kernelSector = 0x5c  // GRUB_BOOT_MACHINE_KERNEL_SECTOR in boot.img
		keepFrom     = 0x1b8 // disk signature, partition table, 0x55AA
		blocklistAt  = 512 - 12
	)
	if len(bootImg) != 512 {
		return fmt.Errorf("boot.img is %d bytes, not 512", len(bootImg))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	mbr := make([]byte, 512)
	if _, err := f.ReadAt(mbr, 0); err != nil {
		return err
	}
	code := append([]byte(nil), bootImg[:keepFrom]...)
	binary.LittleEndian.PutUint64(code[kernelSector:], uint64(coreStart/512))
	copy(mbr, code)
	if _, err := f.WriteAt(mbr, 0); err != nil {
		return err
	}
	first := make([]byte, 512)
	if _, err := f.ReadAt(first, coreStart); err != nil {
		return err
	}
	// struct grub_boot_blocklist { u64 start; u16 len; u16 segment; }
	binary.LittleEndian.PutUint64(first[blocklistAt:], uint64(coreStart/512+1))
	binary.LittleEndian.PutUint16(first[blocklistAt+8:], uint16((coreLen+511)/512-1))
	if _, err := f.WriteAt(first, coreStart); err != nil {
		return err
	}
	return f.Sync()
}

// grubConfig finds the ESP by its marker file and boots the kernel on it.
const grubConfig = `insmod part_gpt
insmod fat
search --no-floppy --file /anvil-test-os --set=root
linux /vmlinuz console=ttyS0 panic=-1 loglevel=4
initrd /initrd
boot
`

// grubEFI is a standalone GRUB for x86_64-efi with grubConfig inside.
func grubEFI(ctx context.Context, dir string) ([]byte, error) {
	return grubStandalone(ctx, dir, "x86_64-efi", "")
}

// grubStandalone is grub-mkstandalone's image for platform with
// grubConfig inside (in its memdisk) and, if set, only the modules named
// (and what they need; the default is every module).
func grubStandalone(ctx context.Context, dir, platform, modules string) ([]byte, error) {
	cfg := filepath.Join(dir, "testos-grub.cfg")
	if err := os.WriteFile(cfg, []byte(grubConfig), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "testos-grub-"+platform+".img")
	args := []string{"-O", platform, "-o", out, "--locales=", "--fonts=", "--themes="}
	if modules != "" {
		args = append(args, "--install-modules="+modules, "--modules="+modules)
	}
	cmd := exec.CommandContext(ctx, "grub-mkstandalone", append(args, "boot/grub/grub.cfg="+cfg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("grub-mkstandalone: %v: %s", err, b)
	}
	defer os.Remove(out)
	return os.ReadFile(out)
}

// mountBase mounts the kernel's file systems (devtmpfs unless the partition
// image's ramdisk moved it there) and installs busybox's links.
const mountBase = `/bin/busybox mkdir -p /proc /sys /dev /mnt /tmp /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox grep -q "^devtmpfs /dev " /proc/mounts || /bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
`

func insmods(modules []string) string {
	return "for m in " + strings.Join(modules, " ") + "; do insmod /lib/modules/$m.ko 2>/dev/null; done\n"
}

// initScript is the whole-disk system's /init.
func initScript(modules []string) string {
	return "#!/bin/busybox sh\n" + mountBase + insmods(modules) + "echo \"" + BootedLine + "\"\n" + cloudInit
}

// cloudInit is what the system does once up: read the config drive.
const cloudInit = `dev=""
i=0
while [ -z "$dev" ] && [ $i -lt 50 ]; do
  dev=$(findfs LABEL=config-2 2>/dev/null)
  if [ -z "$dev" ]; then # an ISO 9660 volume identifier, at byte 32808
    for b in /sys/class/block/*; do
      [ "$(dd if=/dev/${b##*/} bs=1 skip=32808 count=9 2>/dev/null)" = "config-2 " ] && { dev=/dev/${b##*/}; break; }
    done
  fi
  [ -n "$dev" ] || { sleep 0.2; i=$((i+1)); }
done
if [ -n "$dev" ] && mount -t iso9660 -o ro "$dev" /mnt; then
  meta=/mnt/openstack/latest/meta_data.json
  host=$(sed -n 's/.*"hostname": *"\([^"]*\)".*/\1/p' "$meta")
  [ -n "$host" ] && hostname "$host"
  echo "` + HostnameLine + `$(hostname)"
  key=$(sed -n 's/.*"public_keys": *{[^}]*"\(ssh-[a-z0-9-]* [A-Za-z0-9+\/=]*\)[^"]*".*/\1/p' "$meta")
  if [ -n "$key" ]; then
    type=${key%% *}
    hex=$(echo "${key#* }" | base64 -d | sha256sum | cut -d' ' -f1)
    fp=$(printf "$(echo "$hex" | sed 's/../\\x&/g')" | base64 | tr -d '=\n')
    echo "` + KeyLine + `SHA256:$fp ($type)"
  fi
  umount /mnt
else
  echo "` + NoDriveLine + `"
fi
sync
poweroff -f
`

func initramfs(o Options) ([]byte, error) {
	return cpio(o, Modules(), initScript(Modules()), nil)
}

// cpio is an uncompressed newc archive: busybox, the modules (named as
// names) under /lib/modules, /init, and extra entries.
func cpio(o Options, names []string, init string, extra []ramdisk.Entry) ([]byte, error) {
	bb, err := os.ReadFile(o.Busybox)
	if err != nil {
		return nil, err
	}
	if len(o.Modules) != len(names) {
		return nil, fmt.Errorf("testos: %d modules given, want %d (%v)", len(o.Modules), len(names), names)
	}
	dir := func(name string) ramdisk.Entry { return ramdisk.Entry{Name: name, Mode: ramdisk.TypeDir | 0o755} }
	entries := []ramdisk.Entry{dir("bin"), dir("dev"), dir("lib"), dir("lib/modules"),
		{Name: "dev/console", Mode: ramdisk.TypeCharDev | 0o600, DevMajor: 5, DevMinor: 1},
		{Name: "bin/busybox", Mode: ramdisk.TypeRegular | 0o755, Data: bb},
		{Name: "bin/sh", Mode: ramdisk.TypeSymlink | 0o777, Link: "busybox"},
		{Name: "init", Mode: ramdisk.TypeRegular | 0o755, Data: []byte(init)},
	}
	entries = append(entries, extra...)
	for i, m := range o.Modules {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		entries = append(entries, ramdisk.Entry{Name: "lib/modules/" + names[i] + ".ko", Mode: ramdisk.TypeRegular | 0o644, Data: b})
	}
	var buf bytes.Buffer
	if err := ramdisk.WriteNewc(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ownGRUBFiles are what grub-mkconfig runs besides grub-install.
var ownGRUBFiles = []string{"/usr/sbin/grub-mkconfig", "/usr/sbin/grub-probe", "/usr/bin/grub-script-check",
	"/usr/bin/grub-mkrelpath", "/usr/bin/grub-editenv", "/usr/bin/grub-file", "/usr/share/grub/grub-mkconfig_lib",
	"/etc/grub.d/00_header", "/etc/grub.d/10_linux"}

// ownGRUB copies this machine's GRUB (ramdisk.GRUBFiles with
// ownGRUBFiles) into the tree and links busybox's applets in /bin.
func ownGRUB(ctx context.Context, tree, busybox string) error {
	files, err := ramdisk.GRUBFiles(ownGRUBFiles...)
	if err != nil {
		return err
	}
	for dst, src := range files {
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(dst)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tree, dst), b, st.Mode().Perm()); err != nil {
			return err
		}
	}
	out, err := exec.CommandContext(ctx, busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		link := filepath.Join(tree, "bin", applet)
		if _, err := os.Lstat(link); err == nil || applet == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", link); err != nil {
			return err
		}
	}
	return nil
}

// RootLabel is the partition image's file system label.
const RootLabel = "anvil-root"

// PartitionModules are the modules the partition image's ramdisk loads:
// Modules() and ext4 with its dependencies.
func PartitionModules() []string {
	return append(Modules(), "crc16", "mbcache", "jbd2", "crc32c_generic", "ext4")
}

// Partition is a partition image: the root file system and the kernel
// and ramdisk that boot it (instance_info's image_source, kernel and
// ramdisk).
type Partition struct {
	Root, Kernel, Ramdisk string
}

// KernelName is the file name of the kernel in the partition image's
// /boot (its initramfs is initrd.img-<the same version>), as Debian names
// them, so that a boot loader configuration generator finds them: the
// version starts with a digit, as grub-mkconfig's 10_linux takes what
// follows the last "-" before the first digit for the version.
const KernelName = "vmlinuz-0.0.0-anvil-test-os"

// BuildPartition writes a partition image to dir: root.img, an ext4 file
// system (mkfs.ext4 -d, labelled RootLabel) holding busybox, an
// /sbin/init that reads the config drive, and in /boot the kernel and the
// ramdisk (as a distribution's image has them, for a local boot's GRUB)
// with /etc/default/grub putting the console on the serial port; ramdisk,
// which loads PartitionModules() (o.Modules in that order), mounts the
// file system labelled RootLabel and switches to it. The kernel is
// o.Kernel. The file system holds no GRUB: the agent installs its
// ramdisk's.
func BuildPartition(ctx context.Context, dir string, o Options, rootMiB int64) (Partition, error) {
	p := Partition{Root: filepath.Join(dir, "root.img"), Kernel: o.Kernel, Ramdisk: filepath.Join(dir, "ramdisk")}
	tree := filepath.Join(dir, "rootfs")
	for _, d := range []string{"bin", "sbin", "dev", "proc", "sys", "mnt", "tmp", "etc/default", "boot"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			return p, err
		}
	}
	bb, err := os.ReadFile(o.Busybox)
	if err != nil {
		return p, err
	}
	init := "#!/bin/busybox sh\n" + mountBase + "echo \"" + BootedLine + " (partition image, root " + RootLabel + ")\"\n" + cloudInit
	for name, f := range map[string]struct {
		data []byte
		mode os.FileMode
	}{"bin/busybox": {bb, 0o755}, "sbin/init": {[]byte(init), 0o755}, "etc/anvil-test-os": {[]byte("partition image\n"), 0o644}} {
		if err := os.WriteFile(filepath.Join(tree, name), f.data, f.mode); err != nil {
			return p, err
		}
	}
	if err := os.Symlink("busybox", filepath.Join(tree, "bin/sh")); err != nil {
		return p, err
	}
	mods := PartitionModules()
	rd := "#!/bin/busybox sh\n" + mountBase + insmods(mods) + `mkdir -p /newroot
i=0
while ! mount -t ext4 "$(findfs LABEL=` + RootLabel + ` 2>/dev/null)" /newroot 2>/dev/null; do
  i=$((i+1)); [ $i -lt 50 ] || { echo "anvil-test-os: no root file system ` + RootLabel + `"; poweroff -f; }
  sleep 0.2
done
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
`
	b, err := cpio(o, mods, rd, nil)
	if err != nil {
		return p, err
	}
	if err := os.WriteFile(p.Ramdisk, b, 0o644); err != nil {
		return p, err
	}
	kernel, err := os.ReadFile(o.Kernel)
	if err != nil {
		return p, err
	}
	version := strings.TrimPrefix(KernelName, "vmlinuz-")
	for name, data := range map[string][]byte{"boot/" + KernelName: kernel, "boot/initrd.img-" + version: b,
		"etc/default/grub": []byte("GRUB_TIMEOUT=0\nGRUB_DISTRIBUTOR=\"anvil test OS\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0 panic=-1 loglevel=4\"\n" +
			"GRUB_TERMINAL=\"serial console\"\nGRUB_SERIAL_COMMAND=\"serial --unit=0 --speed=115200\"\n")} {
		if err := os.WriteFile(filepath.Join(tree, name), data, 0o644); err != nil {
			return p, err
		}
	}
	if o.OwnGRUB {
		if err := ownGRUB(ctx, tree, o.Busybox); err != nil {
			return p, err
		}
	}
	_ = os.Remove(p.Root)
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-L", RootLabel, "-d", tree, p.Root, fmt.Sprintf("%dM", rootMiB))
	if b, err := cmd.CombinedOutput(); err != nil {
		return p, fmt.Errorf("mkfs.ext4: %v: %s", err, b)
	}
	return p, nil
}
