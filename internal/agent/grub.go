package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/diskfs/go-diskfs/partition/gpt"

	"github.com/anvil-metal/anvil/internal/disk"
)

// imageGRUBs are where a partition image keeps its own grub-install, as
// IPA's _get_grub2_binary looks for it (Debian and Ubuntu name it grub-,
// Red Hat grub2-).
var imageGRUBs = []string{"usr/sbin/grub2-install", "usr/sbin/grub-install", "sbin/grub2-install", "sbin/grub-install"}

// errNoGRUB is install_bootloader's answer when neither the image nor the
// ramdisk has GRUB: what to do about it.
var errNoGRUB = errors.New("the partition image has no GRUB 2 of its own (/usr/sbin/grub-install) and this deploy ramdisk has none: " +
	"rebuild the ramdisk with `anvil ramdisk build --grub` (which needs grub2-common, grub-pc-bin and grub-efi-amd64-bin on the build machine), " +
	"put GRUB in the image, deploy a whole-disk image, or boot the instance from the network (instance_info/capabilities boot_option:netboot)")

// installGRUB is IPA's _install_grub2 for a partition image on device:
// the root file system (the partition whose file system UUID, or
// PARTUUID, is rootUUID) is mounted, and in UEFI mode the EFI system
// partition on its /boot/efi. When the image has its own grub-install,
// GRUB is installed from it in a chroot with /dev, /proc, /sys and /run
// bound in, and its grub-mkconfig writes /boot/grub/grub.cfg, as IPA does.
// Otherwise the ramdisk's grub-install (`anvil ramdisk build --grub`)
// installs into the image's /boot, and the agent writes a grub.cfg for the
// image's kernel unless the image has one. BIOS: i386-pc into the disk's
// MBR gap or BIOS boot partition; UEFI: x86_64-efi on the EFI system
// partition's removable-media path, whose NVRAM entry manageUEFI writes
// next.
func (a *Agent) installGRUB(ctx context.Context, device, rootUUID string, uefi bool) error {
	f, err := os.Open(device)
	if err != nil {
		return err
	}
	_, parts, tableErr := disk.ReadTable(f)
	var root, esp disk.Partition
	var rootFS string
	if tableErr == nil {
		for _, p := range parts {
			typ, id, perr := disk.FSProbe(f, p.Start)
			if perr == nil && strings.EqualFold(id, rootUUID) || strings.EqualFold(p.UUID, rootUUID) {
				root, rootFS = p, typ
			}
			if typ == disk.FSVFAT && (strings.EqualFold(p.Role, string(gpt.EFISystemPartition)) || p.Role == "0xef") {
				esp = p
			}
		}
	}
	f.Close()
	if tableErr != nil {
		return fmt.Errorf("%s: %w", device, tableErr)
	}
	if root.Number == 0 {
		return fmt.Errorf("no partition of %s holds the root file system %s (by file system UUID or PARTUUID)", device, rootUUID)
	}
	if uefi && esp.Number == 0 {
		return fmt.Errorf("no EFI system partition with a FAT file system on %s: a partition image's local boot in UEFI mode needs one (deploy with boot_mode uefi, so that the agent makes it)", device)
	}
	run := commandRunner{ctx: ctx, a: a}
	mnt, err := os.MkdirTemp("", "anvil-root-")
	if err != nil {
		return err
	}
	defer os.Remove(mnt)
	var mounted []string // unmounted in reverse order
	defer func() {
		for i := len(mounted) - 1; i >= 0; i-- {
			if err := run.quiet("umount", mounted[i]); err != nil {
				a.log.Warn("install_bootloader: unmount failed", "path", mounted[i], "err", err)
			}
		}
	}()
	mount := func(args ...string) error {
		if err := run.quiet("mount", args...); err != nil {
			return err
		}
		mounted = append(mounted, args[len(args)-1])
		return nil
	}
	rootArgs := []string{partitionNode(device, root.Number), mnt}
	if rootFS != "" { // else (found by PARTUUID) mount tries the kernel's file systems
		rootArgs = append([]string{"-t", rootFS}, rootArgs...)
	}
	if err := mount(rootArgs...); err != nil {
		return fmt.Errorf("mount the root file system %s: %w", rootUUID, err)
	}
	if uefi {
		efiDir := filepath.Join(mnt, "boot/efi")
		if err := os.MkdirAll(efiDir, 0o755); err != nil {
			return err
		}
		if err := mount("-t", "vfat", partitionNode(device, esp.Number), efiDir); err != nil {
			return fmt.Errorf("mount the EFI system partition: %w", err)
		}
	}
	own := ""
	for _, p := range imageGRUBs {
		if st, err := os.Stat(filepath.Join(mnt, p)); err == nil && st.Mode().IsRegular() {
			own = "/" + p
			break
		}
	}
	target := "i386-pc"
	if uefi {
		target = "x86_64-efi"
	}
	if own != "" {
		a.log.Info("install_bootloader: installing the image's own GRUB 2 in a chroot", "grub", own, "target", target, "device", device)
		for _, d := range []string{"/dev", "/proc", "/sys", "/run"} {
			if err := os.MkdirAll(filepath.Join(mnt, d), 0o755); err != nil {
				return err
			}
			if err := mount("--bind", d, filepath.Join(mnt, d)); err != nil {
				return fmt.Errorf("bind %s into the image: %w", d, err)
			}
		}
		args := []string{mnt, own, "--target=" + target}
		if uefi {
			args = append(args, "--efi-directory=/boot/efi", "--removable", "--no-nvram")
		}
		if err := run.chroot(append(args, device)...); err != nil {
			return fmt.Errorf("the image's %s: %w", own, err)
		}
		mkconfig := strings.Replace(own, "-install", "-mkconfig", 1)
		cfg := "/boot/grub/grub.cfg"
		if strings.Contains(own, "grub2-") {
			cfg = "/boot/grub2/grub.cfg"
		}
		if err := run.chroot(mnt, "/bin/sh", "-c", mkconfig+" -o "+cfg); err != nil {
			return fmt.Errorf("the image's %s: %w", mkconfig, err)
		}
		return nil
	}
	bin, err := exec.LookPath("grub-install")
	if err != nil {
		return errNoGRUB
	}
	a.log.Info("install_bootloader: the image has no GRUB 2; installing the ramdisk's", "grub", bin, "target", target, "device", device)
	args := []string{"--target=" + target, "--boot-directory=" + filepath.Join(mnt, "boot")}
	if uefi {
		args = append(args, "--efi-directory="+filepath.Join(mnt, "boot/efi"), "--removable", "--no-nvram")
	}
	if err := run.cmd(bin, append(args, device)...); err != nil {
		return fmt.Errorf("grub-install: %w", err)
	}
	cfg := filepath.Join(mnt, "boot/grub/grub.cfg")
	if _, err := os.Stat(cfg); err == nil {
		a.log.Info("install_bootloader: keeping the image's /boot/grub/grub.cfg")
		return nil
	}
	text, err := grubConfig(mnt, rootUUID)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write grub.cfg: %w", err)
	}
	a.log.Info("install_bootloader: wrote /boot/grub/grub.cfg", "root_uuid", rootUUID)
	return nil
}

// partitionNode is partition n of device, waiting a little for the kernel
// to make its node after the table was written.
func partitionNode(device string, n int) string {
	p := disk.PartitionDevice(device, n)
	for i := 0; i < 50; i++ {
		if _, err := os.Stat(p); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// grubConfig is the grub.cfg the agent writes when the image has GRUB
// neither to run nor configured: grub-mkconfig's 10_linux reduced to one
// entry, the newest /boot/vmlinuz-* (else /boot/vmlinuz) with the initrd
// of the same version, on the file system found by rootUUID, with the
// kernel parameters of the image's /etc/default/grub (GRUB_CMDLINE_LINUX
// and GRUB_CMDLINE_LINUX_DEFAULT) after root=UUID=... ro.
func grubConfig(root, rootUUID string) (string, error) {
	kernel, initrd := "", ""
	ks, _ := filepath.Glob(filepath.Join(root, "boot/vmlinuz-*"))
	sort.Slice(ks, func(i, j int) bool { return versionLess(ks[i], ks[j]) })
	if len(ks) > 0 {
		kernel = ks[len(ks)-1]
		v := strings.TrimPrefix(filepath.Base(kernel), "vmlinuz-")
		for _, c := range []string{"initrd.img-" + v, "initramfs-" + v + ".img", "initrd-" + v} {
			if _, err := os.Stat(filepath.Join(root, "boot", c)); err == nil {
				initrd = filepath.Join(root, "boot", c)
				break
			}
		}
	} else if _, err := os.Stat(filepath.Join(root, "boot/vmlinuz")); err == nil {
		kernel = filepath.Join(root, "boot/vmlinuz")
		for _, c := range []string{"initrd.img", "initrd"} {
			if _, err := os.Stat(filepath.Join(root, "boot", c)); err == nil {
				initrd = filepath.Join(root, "boot", c)
				break
			}
		}
	}
	if kernel == "" {
		return "", errors.New("the partition image has no kernel in /boot (vmlinuz-VERSION or vmlinuz) for GRUB to boot")
	}
	params := []string{"root=UUID=" + rootUUID, "ro"}
	def := readShellVars(filepath.Join(root, "etc/default/grub"))
	for _, k := range []string{"GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"} {
		if v := strings.TrimSpace(def[k]); v != "" {
			params = append(params, v)
		}
	}
	rel := func(p string) string { return "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/") }
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by anvil agent's image.install_bootloader: the image has no GRUB 2 of its own.\n")
	fmt.Fprintf(&b, "set timeout=%s\nset default=0\n", orDefault(def["GRUB_TIMEOUT"], "1"))
	fmt.Fprintf(&b, "insmod part_gpt\ninsmod part_msdos\ninsmod ext2\n")
	fmt.Fprintf(&b, "search --no-floppy --fs-uuid --set=root %s\n", rootUUID)
	if strings.Contains(def["GRUB_TERMINAL"], "serial") {
		fmt.Fprintf(&b, "serial %s\nterminal_input serial console\nterminal_output serial console\n", def["GRUB_SERIAL_COMMAND"])
	}
	fmt.Fprintf(&b, "menuentry '%s' {\n\tlinux %s %s\n", orDefault(def["GRUB_DISTRIBUTOR"], "Linux"), rel(kernel), strings.Join(params, " "))
	if initrd != "" {
		fmt.Fprintf(&b, "\tinitrd %s\n", rel(initrd))
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// versionLess orders kernel file names as `sort -V` does for them: runs
// of digits by value (6.1.0-9 before 6.1.0-10), the rest bytewise.
func versionLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return strings.TrimSpace(s)
}

// readShellVars reads KEY=value lines of a shell fragment such as
// /etc/default/grub (quotes removed; no expansion). A missing file is no
// variables.
func readShellVars(path string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.HasPrefix(l, "#") || strings.ContainsAny(k, " \t") {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out
}

// commandRunner runs install_bootloader's commands, logging their output
// on failure.
type commandRunner struct {
	ctx context.Context
	a   *Agent
}

func (r commandRunner) cmd(bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
	out, err := cmd.CombinedOutput()
	r.a.log.Info("install_bootloader: ran", "cmd", bin+" "+strings.Join(args, " "), "output", lastLines(string(out), 20))
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, lastLines(string(out), 5))
	}
	return nil
}

func (r commandRunner) quiet(bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (r commandRunner) chroot(args ...string) error { return r.cmd("chroot", args...) }

// lastLines is the last n lines of s, trimmed.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
