package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat32"
	"github.com/google/uuid"
)

// File system types FSProbe recognises, as blkid names them.
const (
	FSExt2 = "ext2"
	FSExt3 = "ext3"
	FSExt4 = "ext4"
	FSVFAT = "vfat"
)

// ESPLabel is the label IPA's work_on_disk gives the EFI system partition
// it makes for a partition image's local boot in UEFI mode.
const ESPLabel = "efi-part"

// FSProbe reads the file system at offset off of r, as `blkid -s TYPE -s
// UUID` would: its type (ext2/3/4 or vfat) and UUID (ext: the 128-bit
// UUID in its textual form; FAT: the volume serial, XXXX-XXXX).
func FSProbe(r io.ReaderAt, off int64) (fstype, id string, err error) {
	sb := make([]byte, 2048)
	if _, err := r.ReadAt(sb, off); err != nil && !errors.Is(err, io.EOF) {
		return "", "", err
	}
	// ext2/3/4: superblock at 1024, magic 0xEF53 at 0x38, UUID at 0x68;
	// has_journal (compat 0x4) makes ext3, extents or 64bit ext4.
	if binary.LittleEndian.Uint16(sb[1024+0x38:]) == 0xEF53 {
		u, _ := uuid.FromBytes(sb[1024+0x68 : 1024+0x78])
		compat := binary.LittleEndian.Uint32(sb[1024+0x5c:])
		incompat := binary.LittleEndian.Uint32(sb[1024+0x60:])
		t := FSExt2
		switch {
		case incompat&(0x40|0x80|0x200) != 0: // extents, 64bit, flex_bg
			t = FSExt4
		case compat&0x4 != 0:
			t = FSExt3
		}
		return t, u.String(), nil
	}
	// FAT: boot signature 0x55AA; FAT32's extended BPB (signature 0x29 at
	// 0x42) holds the serial at 0x43, FAT12/16's (0x29 at 0x26) at 0x27.
	if sb[510] == 0x55 && sb[511] == 0xaa {
		for _, at := range []int{0x42, 0x26} {
			if sb[at] == 0x29 && (string(sb[at+0x10:at+0x15]) == "FAT32" || string(sb[at+0x10:at+0x13]) == "FAT") {
				s := binary.LittleEndian.Uint32(sb[at+1:])
				return FSVFAT, fmt.Sprintf("%04X-%04X", s>>16, s&0xffff), nil
			}
		}
	}
	return "", "", errors.New("no ext2/3/4 or FAT file system")
}

// FormatESP makes a FAT32 file system labelled ESPLabel on partition p of
// the disk at path (ironic-lib's mkfs -t vfat -n efi-part), written at the
// partition's offset of the whole disk, and returns its serial.
func FormatESP(path string, p Partition) (string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("open disk %s: %w", path, err)
	}
	defer f.Close()
	if _, err := fat32.Create(file.New(f, false), p.Size, p.Start, sectorSize, strings.ToUpper(ESPLabel), false); err != nil {
		return "", fmt.Errorf("EFI system partition: %w", err)
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	_, id, err := FSProbe(f, p.Start)
	return id, err
}

// PartitionDevice is the device node of partition n of the disk device
// dev, as the kernel names it: /dev/sda1, /dev/vda1, /dev/nvme0n1p1,
// /dev/mmcblk0p1 (a p when the disk's name ends in a digit).
func PartitionDevice(dev string, n int) string {
	base := filepath.Base(dev)
	if base != "" && unicode.IsDigit(rune(base[len(base)-1])) {
		return dev + "p" + strconv.Itoa(n)
	}
	return dev + strconv.Itoa(n)
}
