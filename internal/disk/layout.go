package disk

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"
	"github.com/google/uuid"
)

const (
	mib        = 1 << 20
	sectorSize = 512
	// The sizes IPA gives the partitions a local boot needs
	// ([disk_utils]efi_system_partition_size, bios_boot_partition_size).
	efiSystemMB = 550
	biosBootMB  = 1
	// mbrMaxSize is the most an MBR partition table addresses (2 TiB).
	mbrMaxSize = 1 << 41
)

// Partition roles, as IPA names them in make_partitions' result.
const (
	RoleEFI         = "efi system partition"
	RoleBIOSBoot    = "BIOS Boot partition"
	RoleEphemeral   = "ephemeral"
	RoleSwap        = "swap"
	RoleConfigDrive = "configdrive"
	RoleRoot        = "root"
)

// Disk labels (partition table types), as Ironic's disk_label capability
// names them.
const (
	LabelGPT   = "gpt"
	LabelMSDOS = "msdos"
)

// Layout is a partition image's disk layout, IPA's make_partitions: from
// 1 MiB on, an EFI system partition (UEFI, local boot) or a BIOS boot
// partition (BIOS, local boot, GPT), then ephemeral, swap, config drive and
// last the root partition (so that growroot can extend it).
type Layout struct {
	Label         string // LabelGPT or LabelMSDOS; "" picks by BootMode
	BootMode      string // "uefi" or "bios"
	LocalBoot     bool
	RootMB        int64
	SwapMB        int64
	EphemeralMB   int64
	ConfigDriveMB int64
}

// Partition is one planned or found partition.
type Partition struct {
	Role   string
	Number int    // 1-based
	Start  int64  // bytes
	Size   int64  // bytes
	UUID   string // GPT: the partition's unique GUID (set when written)
	// What ReadTable found and writeTable keeps when it rewrites a table
	// (a config drive added behind an image's partitions): the GPT name and
	// attributes, the MBR boot flag.
	Name     string
	Attrs    uint64
	Bootable bool
}

// TableType is the partition table type: Label, else GPT for UEFI, MBR for BIOS.
func (l Layout) TableType() string {
	if l.Label != "" {
		return l.Label
	}
	if l.BootMode == "uefi" {
		return LabelGPT
	}
	return LabelMSDOS
}

// Plan places the partitions on a disk of diskSize bytes.
func (l Layout) Plan(diskSize int64) ([]Partition, error) {
	if l.RootMB <= 0 {
		return nil, errors.New("the root partition size must be positive")
	}
	type want struct {
		role string
		mb   int64
	}
	var ws []want
	if l.LocalBoot && l.BootMode == "uefi" {
		ws = append(ws, want{RoleEFI, efiSystemMB})
	}
	if l.LocalBoot && l.BootMode != "uefi" && l.TableType() == LabelGPT {
		ws = append(ws, want{RoleBIOSBoot, biosBootMB})
	}
	for _, w := range []want{{RoleEphemeral, l.EphemeralMB}, {RoleSwap, l.SwapMB}, {RoleConfigDrive, l.ConfigDriveMB}, {RoleRoot, l.RootMB}} {
		if w.mb < 0 {
			return nil, fmt.Errorf("the %s partition size %d MiB is negative", w.role, w.mb)
		}
		if w.mb > 0 {
			ws = append(ws, w)
		}
	}
	if l.TableType() == LabelMSDOS && len(ws) > 4 {
		return nil, fmt.Errorf("an msdos partition table holds 4 primary partitions, the layout needs %d", len(ws))
	}
	// GPT keeps 33 sectors at the end for its backup.
	usable := diskSize - 33*sectorSize
	start := int64(mib)
	parts := make([]Partition, 0, len(ws))
	for i, w := range ws {
		p := Partition{Role: w.role, Number: i + 1, Start: start, Size: w.mb * mib}
		start += p.Size
		parts = append(parts, p)
	}
	if start > usable {
		return nil, fmt.Errorf("%w: the partitions need %d MiB, the disk has %d MiB", ErrTooSmall, start/mib, diskSize/mib)
	}
	return parts, nil
}

// WriteTable writes a fresh partition table of type label holding parts
// to the disk at path, as the only table on it: the first and last MiB
// are zeroed first (IPA's destroy_disk_metadata), so no earlier GPT or
// its backup survives under a new MBR.
func WriteTable(path, label string, parts []Partition) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open disk %s: %w", path, err)
	}
	defer f.Close()
	size, err := Size(f)
	if err != nil {
		return err
	}
	zero := make([]byte, min(mib, size))
	for _, off := range []int64{0, max(0, size-mib)} {
		if _, err := f.WriteAt(zero, off); err != nil {
			return fmt.Errorf("wipe %s: %w", path, err)
		}
	}
	if err := writeTable(f, size, label, parts); err != nil {
		return fmt.Errorf("partition %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	rereadPartitions(f)
	return nil
}

func writeTable(f *os.File, size int64, label string, parts []Partition) error {
	switch label {
	case LabelGPT:
		t := &gpt.Table{LogicalSectorSize: sectorSize, PhysicalSectorSize: sectorSize, ProtectiveMBR: true}
		for i, p := range parts {
			if p.UUID == "" {
				parts[i].UUID = strings.ToUpper(uuid.NewString())
			}
			t.Partitions = append(t.Partitions, &gpt.Partition{Index: p.Number,
				Start: uint64(p.Start / sectorSize), End: uint64((p.Start+p.Size)/sectorSize - 1),
				Size: uint64(p.Size), Type: gptType(p.Role), Name: gptName(p), GUID: parts[i].UUID, Attributes: p.Attrs})
		}
		return t.Write(f, size)
	case LabelMSDOS:
		if size > mbrMaxSize {
			size = mbrMaxSize
		}
		t := &mbr.Table{LogicalSectorSize: sectorSize, PhysicalSectorSize: sectorSize}
		for _, p := range parts {
			t.Partitions = append(t.Partitions, &mbr.Partition{Type: mbrType(p.Role), Bootable: p.Bootable,
				Start: uint32(p.Start / sectorSize), Size: uint32(p.Size / sectorSize)})
		}
		return t.Write(f, size)
	}
	return fmt.Errorf("unknown disk label %q (gpt or msdos)", label)
}

// gptType is the partition type of a role; a role ReadTable found (the
// type's GUID) stays that type.
func gptType(role string) gpt.Type {
	if _, err := uuid.Parse(role); err == nil {
		return gpt.Type(strings.ToUpper(role))
	}
	switch role {
	case RoleEFI:
		return gpt.EFISystemPartition
	case RoleBIOSBoot:
		return gpt.BIOSBoot
	case RoleSwap:
		return gpt.LinuxSwap
	}
	return gpt.LinuxFilesystem
}

func gptName(p Partition) string {
	switch {
	case p.Name != "":
		return p.Name
	case p.Role == RoleConfigDrive:
		return ConfigDriveLabel
	}
	if _, err := uuid.Parse(p.Role); err == nil {
		return ""
	}
	return p.Role
}

// mbrType is the partition type of a role; a role ReadTable found
// ("0x83") stays that type.
func mbrType(role string) mbr.Type {
	if h, ok := strings.CutPrefix(role, "0x"); ok {
		if v, err := strconv.ParseUint(h, 16, 8); err == nil {
			return mbr.Type(v)
		}
	}
	switch role {
	case RoleEFI:
		return mbr.EFISystem
	case RoleSwap:
		return mbr.LinuxSwap
	}
	return mbr.Linux
}

// AddConfigDrivePartition adds a MaxConfigDriveSize partition at the end of
// the disk at path, behind the partitions the image already has, as IPA's
// create_config_drive_partition does for whole-disk images (GPT: its
// backup moved to the disk's end; MBR: at most 3 existing primary
// partitions). It returns the new partition.
func AddConfigDrivePartition(path string) (Partition, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return Partition{}, fmt.Errorf("open disk %s: %w", path, err)
	}
	defer f.Close()
	size, err := Size(f)
	if err != nil {
		return Partition{}, err
	}
	label, parts, err := ReadTable(f)
	if err != nil {
		return Partition{}, fmt.Errorf("config drive on %s: %w", path, err)
	}
	if label == LabelMSDOS && len(parts) > 3 {
		return Partition{}, fmt.Errorf("Config drive cannot be created: disk %s uses MBR partitioning and already has %d primary partitions", path, len(parts))
	}
	end := size
	if label == LabelGPT {
		end -= 33 * sectorSize
	} else if end > mbrMaxSize {
		end = mbrMaxSize
	}
	start := (end - MaxConfigDriveSize) &^ (mib - 1) // aligned as sgdisk and parted align
	for _, p := range parts {
		if p.Start+p.Size > start {
			return Partition{}, fmt.Errorf("%w: no room for a config drive after partition %d of %s", ErrTooSmall, p.Number, path)
		}
	}
	cd := Partition{Role: RoleConfigDrive, Number: len(parts) + 1, Start: start, Size: end - start}
	if label == LabelGPT {
		cd.Size = (end - start) &^ (sectorSize - 1)
	}
	all := append(parts, cd)
	if err := writeTable(f, size, label, all); err != nil {
		return Partition{}, fmt.Errorf("config drive on %s: %w", path, err)
	}
	cd = all[len(all)-1]
	if err := f.Sync(); err != nil {
		return Partition{}, err
	}
	rereadPartitions(f)
	return cd, nil
}

// ReadTable reads the disk's partition table: its label and partitions
// in table order.
func ReadTable(f *os.File) (string, []Partition, error) {
	if t, err := gpt.Read(f, sectorSize, sectorSize); err == nil {
		var parts []Partition
		for i, p := range t.Partitions {
			if p.Type == gpt.Unused {
				continue
			}
			parts = append(parts, Partition{Role: string(p.Type), Number: i + 1,
				Start: int64(p.Start) * sectorSize, Size: int64(p.End-p.Start+1) * sectorSize, UUID: strings.ToUpper(p.GUID),
				Name: p.Name, Attrs: p.Attributes})
		}
		return LabelGPT, parts, nil
	}
	t, err := mbr.Read(f, sectorSize, sectorSize)
	if err != nil {
		return "", nil, errors.New("the disk has no partition table (neither GPT nor MBR)")
	}
	var parts []Partition
	for i, p := range t.Partitions {
		if p.Type == mbr.Empty || p.Size == 0 {
			continue
		}
		parts = append(parts, Partition{Role: fmt.Sprintf("0x%02x", byte(p.Type)), Number: i + 1,
			Start: int64(p.Start) * sectorSize, Size: int64(p.Size) * sectorSize, Bootable: p.Bootable})
	}
	return LabelMSDOS, parts, nil
}
