package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf16"

	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/disk"
)

// efiBootloaders are the file names IPA accepts as UEFI boot loaders on an
// EFI system partition (efi_utils.BOOTLOADERS_EFI), lower-cased; the .csv
// ones are shim's pointers to the real loader and its label.
var efiBootloaders = []string{
	"bootx64.csv", "bootaa64.csv", "boot.csv",
	"bootia32.efi", "bootx64.efi", "bootia64.efi", "bootarm.efi", "bootaa64.efi",
	"bootriscv32.efi", "bootriscv64.efi", "bootriscv128.efi", "grubaa64.efi", "winload.efi",
}

// defaultEFIVars is where the kernel mounts efivarfs.
const defaultEFIVars = "/sys/firmware/efi/efivars"

// efiVarsDir is the UEFI variable store the agent writes boot entries to.
func (a *Agent) efiVarsDir() string {
	if a.cfg.EFIVarsDir != "" {
		return a.cfg.EFIVarsDir
	}
	return filepath.Join(rootOr(a.cfg.RootDir), defaultEFIVars)
}

func rootOr(root string) string {
	if root == "" {
		return "/"
	}
	return root
}

// bootModeUEFI is IPA's get_boot_info().current_boot_mode == "uefi": the
// machine booted by UEFI (the kernel shows /sys/firmware/efi), or a test
// named a variable store.
func (a *Agent) bootModeUEFI() bool {
	if a.cfg.BIOS {
		return false
	}
	if a.cfg.EFIVarsDir != "" {
		return true
	}
	_, err := os.Stat(filepath.Join(rootOr(a.cfg.RootDir), "/sys/firmware/efi"))
	return err == nil
}

// installBootloader is image.install_bootloader, with IPA's semantics
// (extensions/image.py install_bootloader): in UEFI boot mode the image's
// EFI system partition is looked for first and, when it holds a boot
// loader, a UEFI boot entry for it is written to NVRAM and nothing else is
// done; then a whole-disk image (no root_uuid, or "0x00000000") needs
// nothing more; a partition image gets GRUB 2 (installGRUB) and, in UEFI
// mode, the boot entry of the loader GRUB put on the EFI system partition.
// A failure is ignored when
// ignore_bootloader_failure is true. Success is IPA's null result.
func (a *Agent) installBootloader(ctx context.Context, p map[string]any, _ *atomic.Int64) (map[string]any, error) {
	rootUUID, _ := p["root_uuid"].(string)
	efiUUID, _ := p["efi_system_part_uuid"].(string)
	ignore, _ := p["ignore_bootloader_failure"].(bool)
	target, _ := p["target_boot_mode"].(string)
	device, err := a.bootDevice()
	if err != nil {
		return nil, fmt.Errorf("install_bootloader: %w", err)
	}
	a.log.Info("install_bootloader", "device", device, "root_uuid", rootUUID, "efi_system_part_uuid", efiUUID,
		"target_boot_mode", target, "uefi", a.bootModeUEFI())
	if target != "" && (target == "uefi") != a.bootModeUEFI() {
		a.log.Warn("install_bootloader: boot mode mismatch: installing the boot loader may fail or work incorrectly", "target_boot_mode", target)
	}
	if a.bootModeUEFI() {
		done, err := a.manageUEFI(device, efiUUID)
		switch {
		case err != nil && !ignore:
			return nil, err
		case err != nil:
			a.log.Error("install_bootloader: setting up the UEFI boot loader failed; ignored", "err", err)
		case done:
			return nil, nil
		}
	}
	if rootUUID == "" || rootUUID == "0x00000000" {
		a.log.Info("install_bootloader: not installing GRUB since no root UUID is given: a whole-disk image", "device", device)
		return nil, nil
	}
	uefi := a.bootModeUEFI()
	err = a.installGRUB(ctx, device, rootUUID, uefi)
	if err == nil && uefi {
		var done bool
		if done, err = a.manageUEFI(device, efiUUID); err == nil && !done {
			err = errors.New("GRUB left no boot loader on the EFI system partition")
		}
	}
	if err != nil {
		err = fmt.Errorf("install_bootloader: installing GRUB 2 on %s failed: %w", device, err)
		if ignore {
			a.log.Error("install_bootloader: ignored", "err", err)
			return nil, nil
		}
		return nil, err
	}
	a.log.Info("install_bootloader: GRUB 2 installed", "device", device, "root_uuid", rootUUID, "uefi", uefi)
	return nil, nil
}

// bootDevice is the disk the last image went to, else the install disk.
func (a *Agent) bootDevice() (string, error) {
	a.mu.Lock()
	d := a.imageDisk
	a.mu.Unlock()
	if d != "" {
		return d, nil
	}
	return a.installDevice(nil)
}

// efiLoader is one boot entry to write: the loader's path on the ESP and
// the entry's label.
type efiLoader struct{ Path, Label string }

// manageUEFI is IPA's efi_utils.manage_uefi: the EFI system partition of
// device (by its partition type; else the one named efiUUID), its boot
// loaders (findEFILoaders), and for each a boot entry replacing those of
// the same label. It reports false, nil when the partition holds no boot
// loader.
func (a *Agent) manageUEFI(device, efiUUID string) (bool, error) {
	esp, err := findESP(device, efiUUID)
	if err != nil {
		return false, err
	}
	loaders, err := readEFILoaders(device, esp)
	if err != nil {
		return false, fmt.Errorf("Could not configure UEFI boot on device %s: %w", device, err)
	}
	if len(loaders) == 0 {
		a.log.Warn("install_bootloader: empty EFI partition detected", "device", device, "partition", esp.Number)
		return false, nil
	}
	vars := efiVars{dir: a.efiVarsDir()}
	if err := ensureEFIVars(vars.dir, a.cfg.EFIVarsDir == ""); err != nil {
		return false, fmt.Errorf("Could not configure UEFI boot on device %s: %w", device, err)
	}
	for _, l := range loaders {
		if err := vars.removeByLabel(l.Label); err != nil {
			return false, fmt.Errorf("Could not configure UEFI boot on device %s: %w", device, err)
		}
		n, err := vars.addBoot(loadOption{Active: true, Description: l.Label, HD: esp.hd, File: l.Path})
		if err != nil {
			return false, fmt.Errorf("Could not configure UEFI boot on device %s: %w", device, err)
		}
		a.log.Info("install_bootloader: UEFI boot entry written", "entry", bootName(n), "label", l.Label,
			"loader", l.Path, "device", device, "partition", esp.hd.Partition)
	}
	return true, nil
}

// espInfo is an EFI system partition found on a disk.
type espInfo struct {
	disk.Partition
	hd hdPath
}

// findESP is IPA's EFI partition search: the first partition whose type is
// the EFI system partition's (GPT C12A7328-..., the 'esp' flag), else the
// partition whose unique GUID is efiUUID.
func findESP(device, efiUUID string) (espInfo, error) {
	f, err := os.Open(device)
	if err != nil {
		return espInfo{}, fmt.Errorf("install_bootloader: %w", err)
	}
	defer f.Close()
	label, parts, err := disk.ReadTable(f)
	if err != nil || label != disk.LabelGPT {
		// An MBR disk's HD() would carry its 32-bit signature; the images
		// Ironic deploys in UEFI mode are GPT, as IPA's own layouts are.
		parts = nil
	}
	pick := func(match func(disk.Partition) bool) (espInfo, bool) {
		for _, p := range parts {
			if !match(p) {
				continue
			}
			u, err := uuid.Parse(p.UUID)
			if err != nil {
				continue
			}
			return espInfo{Partition: p, hd: hdPath{Partition: uint32(p.Number), Start: uint64(p.Start / 512),
				Size: uint64(p.Size / 512), PartUUID: u}}, true
		}
		return espInfo{}, false
	}
	if e, ok := pick(func(p disk.Partition) bool { return strings.EqualFold(p.Role, string(gpt.EFISystemPartition)) }); ok {
		return e, nil
	}
	if efiUUID != "" {
		if e, ok := pick(func(p disk.Partition) bool { return strings.EqualFold(p.UUID, efiUUID) }); ok {
			return e, nil
		}
	}
	return espInfo{}, fmt.Errorf("No EFI partition could be detected on device %s and EFI partition UUID has not been recorded during deployment (which is often the case for whole disk images). Are you using a UEFI-compatible image?", device)
}

// readEFILoaders is IPA's _get_efi_bootloaders and the label choice of
// _run_efibootmgr: walking the ESP top-down, every file whose name is in
// efiBootloaders, labelled ironic1, ironic2, ...; the first .csv found
// instead names the only loader (its first field, in its directory) and
// its label (second field).
func readEFILoaders(device string, esp espInfo) ([]efiLoader, error) {
	f, err := os.Open(device)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fs, err := openFAT(f, esp.Start, esp.Size)
	if err != nil {
		return nil, fmt.Errorf("EFI system partition %d: %w", esp.Number, err)
	}
	var found []string
	var csv *fatEntry
	var csvPath string
	err = fs.walk(func(dir string, files []fatEntry) (bool, error) {
		for i, e := range files {
			name := strings.ToLower(e.Name)
			if !slices.Contains(efiBootloaders, name) {
				continue
			}
			p := path.Join(dir, e.Name)
			if strings.HasSuffix(name, ".csv") {
				csv, csvPath = &files[i], p
				return false, nil
			}
			found = append(found, p)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("EFI system partition %d: %w", esp.Number, err)
	}
	if csv != nil {
		b, err := fs.readFile(*csv)
		if err != nil {
			return nil, fmt.Errorf("EFI system partition %d: %w", esp.Number, err)
		}
		fields := strings.SplitN(decodeUTF16(b), ",", 4)
		if len(fields) < 2 || fields[0] == "" {
			return nil, fmt.Errorf("boot loader hint %s names no loader and label", csvPath)
		}
		return []efiLoader{{Path: efiPath(path.Join(path.Dir(csvPath), fields[0])), Label: fields[1]}}, nil
	}
	out := make([]efiLoader, len(found))
	for i, p := range found {
		out[i] = efiLoader{Path: efiPath(p), Label: fmt.Sprintf("ironic%d", i+1)}
	}
	return out, nil
}

// efiPath is a path on the ESP as UEFI writes it: \EFI\BOOT\BOOTX64.EFI.
func efiPath(p string) string { return `\` + strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", `\`) }

// decodeUTF16 reads shim's CSV files: UTF-16, little endian unless a
// byte order mark says otherwise (Python's 'utf-16' codec).
func decodeUTF16(b []byte) string {
	order := binary.ByteOrder(binary.LittleEndian)
	switch {
	case len(b) >= 2 && b[0] == 0xff && b[1] == 0xfe:
		b = b[2:]
	case len(b) >= 2 && b[0] == 0xfe && b[1] == 0xff:
		b, order = b[2:], binary.BigEndian
	}
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, order.Uint16(b[i:]))
	}
	return string(utf16.Decode(u))
}

// ensureEFIVars checks the variable store is there; the kernel's is
// mounted first when it is not (a ramdisk's init may not have).
func ensureEFIVars(dir string, kernel bool) error {
	if ents, err := os.ReadDir(dir); err == nil && (len(ents) > 0 || !kernel) {
		return nil
	}
	if !kernel {
		return fmt.Errorf("no EFI variable store at %s", dir)
	}
	if err := mountEFIVars(dir); err != nil {
		return fmt.Errorf("the EFI variables (efivarfs) are not available at %s: %w", dir, err)
	}
	return nil
}
