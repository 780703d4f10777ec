package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/google/uuid"
)

// The UEFI boot manager's variables, as efibootmgr writes them through
// efivarfs: each file is named <Variable>-<vendor GUID> and holds the
// variable's 4-byte attributes (little endian) followed by its data.
const (
	// efiGlobalVariable is EFI_GLOBAL_VARIABLE, the vendor GUID of Boot####
	// and BootOrder.
	efiGlobalVariable = "8be4df61-93ca-11d2-aa0d-00e098032b8c"
	// efiVarAttrs: non-volatile, boot-service and runtime access, as
	// efibootmgr sets them.
	efiVarAttrs = 0x1 | 0x2 | 0x4
	// loadOptionActive is EFI_LOAD_OPTION's LOAD_OPTION_ACTIVE.
	loadOptionActive = 0x1
)

// EFI device path node types (UEFI spec 10.3).
const (
	dpMedia       = 0x04
	dpMediaHD     = 0x01
	dpMediaFile   = 0x04
	dpEnd         = 0x7f
	dpEndEntire   = 0xff
	hdMBRTypeGPT  = 0x02
	hdSigTypeGUID = 0x02
)

// hdPath is the hard drive media device path node HD(): the boot
// partition's number, start and size in LBAs, and its GPT unique GUID.
type hdPath struct {
	Partition uint32
	Start     uint64 // LBA
	Size      uint64 // LBAs
	PartUUID  uuid.UUID
}

// loadOption is an EFI_LOAD_OPTION for a file on a GPT partition, the
// entry `efibootmgr -c -d DISK -p N -L LABEL -l LOADER` makes (its
// abbreviated HD()/File() path, no optional data).
type loadOption struct {
	Active      bool
	Description string
	HD          hdPath
	File        string // \EFI\BOOT\BOOTX64.EFI
}

// ucs2z is s in UCS-2 (UTF-16LE), NUL-terminated.
func ucs2z(s string) []byte {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 0, 2*len(u)+2)
	for _, c := range u {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return append(b, 0, 0)
}

// guidBytes is a GUID in EFI's binary layout: the first three fields
// little endian, the rest as written.
func guidBytes(u uuid.UUID) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b[0:], binary.BigEndian.Uint32(u[0:4]))
	binary.LittleEndian.PutUint16(b[4:], binary.BigEndian.Uint16(u[4:6]))
	binary.LittleEndian.PutUint16(b[6:], binary.BigEndian.Uint16(u[6:8]))
	copy(b[8:], u[8:])
	return b
}

func guidFromBytes(b []byte) uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint32(u[0:], binary.LittleEndian.Uint32(b[0:4]))
	binary.BigEndian.PutUint16(u[4:], binary.LittleEndian.Uint16(b[4:6]))
	binary.BigEndian.PutUint16(u[6:], binary.LittleEndian.Uint16(b[6:8]))
	copy(u[8:], b[8:16])
	return u
}

// devicePath is HD(...)/File(...)/End.
func (o loadOption) devicePath() []byte {
	var dp []byte
	dp = append(dp, dpMedia, dpMediaHD)
	dp = binary.LittleEndian.AppendUint16(dp, 42)
	dp = binary.LittleEndian.AppendUint32(dp, o.HD.Partition)
	dp = binary.LittleEndian.AppendUint64(dp, o.HD.Start)
	dp = binary.LittleEndian.AppendUint64(dp, o.HD.Size)
	dp = append(dp, guidBytes(o.HD.PartUUID)...)
	dp = append(dp, hdMBRTypeGPT, hdSigTypeGUID)
	file := ucs2z(o.File)
	dp = append(dp, dpMedia, dpMediaFile)
	dp = binary.LittleEndian.AppendUint16(dp, uint16(4+len(file)))
	dp = append(dp, file...)
	return append(dp, dpEnd, dpEndEntire, 4, 0)
}

// MarshalBinary is the EFI_LOAD_OPTION: attributes, the device path's
// length, the NUL-terminated UCS-2 description, the device path.
func (o loadOption) MarshalBinary() ([]byte, error) {
	if len(o.File) == 0 || o.File[0] != '\\' {
		return nil, fmt.Errorf("EFI loader path %q is not absolute (\\EFI\\...)", o.File)
	}
	dp := o.devicePath()
	if len(dp) > 0xffff {
		return nil, errors.New("EFI loader path too long")
	}
	var b []byte
	attrs := uint32(0)
	if o.Active {
		attrs |= loadOptionActive
	}
	b = binary.LittleEndian.AppendUint32(b, attrs)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(dp)))
	b = append(b, ucs2z(o.Description)...)
	return append(b, dp...), nil
}

// parseLoadOption reads an EFI_LOAD_OPTION's description and, when its
// device path is HD()/File(), those nodes; other paths (firmware volumes,
// PCI devices) leave HD and File zero.
func parseLoadOption(b []byte) (loadOption, error) {
	if len(b) < 6 {
		return loadOption{}, errors.New("load option too short")
	}
	o := loadOption{Active: binary.LittleEndian.Uint32(b)&loadOptionActive != 0}
	dpLen := int(binary.LittleEndian.Uint16(b[4:]))
	rest := b[6:]
	var desc []uint16
	for {
		if len(rest) < 2 {
			return loadOption{}, errors.New("load option description not terminated")
		}
		c := binary.LittleEndian.Uint16(rest)
		rest = rest[2:]
		if c == 0 {
			break
		}
		desc = append(desc, c)
	}
	o.Description = string(utf16.Decode(desc))
	if dpLen > len(rest) {
		return loadOption{}, errors.New("load option device path truncated")
	}
	dp := rest[:dpLen]
	for len(dp) >= 4 {
		typ, sub, n := dp[0], dp[1], int(binary.LittleEndian.Uint16(dp[2:]))
		if n < 4 || n > len(dp) {
			return loadOption{}, errors.New("malformed device path node")
		}
		node := dp[4:n]
		switch {
		case typ == dpMedia && sub == dpMediaHD && len(node) >= 38:
			o.HD = hdPath{Partition: binary.LittleEndian.Uint32(node), Start: binary.LittleEndian.Uint64(node[4:]),
				Size: binary.LittleEndian.Uint64(node[12:]), PartUUID: guidFromBytes(node[20:36])}
		case typ == dpMedia && sub == dpMediaFile:
			var u []uint16
			for i := 0; i+1 < len(node); i += 2 {
				if c := binary.LittleEndian.Uint16(node[i:]); c != 0 {
					u = append(u, c)
				}
			}
			o.File = string(utf16.Decode(u))
		case typ == dpEnd && sub == dpEndEntire:
			return o, nil
		}
		dp = dp[n:]
	}
	return o, nil
}

// efiVars is the UEFI variable store seen through efivarfs (the kernel's
// /sys/firmware/efi/efivars, or any directory of files in its format).
type efiVars struct{ dir string }

func (v efiVars) path(name string) string {
	return filepath.Join(v.dir, name+"-"+efiGlobalVariable)
}

// get returns a global variable's data (without its attributes); a
// missing variable is (nil, nil).
func (v efiVars) get(name string) ([]byte, error) {
	b, err := os.ReadFile(v.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("EFI variable %s: %d bytes, no attributes", name, len(b))
	}
	return b[4:], nil
}

// set replaces a global variable as libefivar does on efivarfs: the old
// file removed, the new one written with its attributes in one write.
func (v efiVars) set(name string, data []byte) error {
	p := v.path(name)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("EFI variable %s: %w", name, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("EFI variable %s: %w", name, err)
	}
	buf := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(data)), efiVarAttrs)
	buf = append(buf, data...)
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("EFI variable %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("EFI variable %s: %w", name, err)
	}
	return nil
}

// bootEntries are the Boot#### variables' numbers, ascending.
func (v efiVars) bootEntries() ([]uint16, error) {
	ents, err := os.ReadDir(v.dir)
	if err != nil {
		return nil, err
	}
	var nums []uint16
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), "-"+efiGlobalVariable)
		if !ok || len(name) != 8 || !strings.HasPrefix(name, "Boot") {
			continue
		}
		n, err := strconv.ParseUint(name[4:], 16, 16)
		if err != nil || strings.ToUpper(name[4:]) != name[4:] {
			continue
		}
		nums = append(nums, uint16(n))
	}
	slices.Sort(nums)
	return nums, nil
}

func bootName(n uint16) string { return fmt.Sprintf("Boot%04X", n) }

func (v efiVars) bootOrder() ([]uint16, error) {
	b, err := v.get("BootOrder")
	if err != nil {
		return nil, err
	}
	order := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		order = append(order, binary.LittleEndian.Uint16(b[i:]))
	}
	return order, nil
}

func (v efiVars) setBootOrder(order []uint16) error {
	var b []byte
	for _, n := range order {
		b = binary.LittleEndian.AppendUint16(b, n)
	}
	return v.set("BootOrder", b)
}

// removeBoot is `efibootmgr -b N -B`: the entry deleted and dropped from
// BootOrder.
func (v efiVars) removeBoot(n uint16) error {
	if err := os.Remove(v.path(bootName(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("EFI variable %s: %w", bootName(n), err)
	}
	order, err := v.bootOrder()
	if err != nil {
		return err
	}
	if i := slices.Index(order, n); i >= 0 {
		return v.setBootOrder(slices.Delete(order, i, i+1))
	}
	return nil
}

// addBoot is `efibootmgr -c`: the option written to the lowest free
// Boot#### and put first in BootOrder. It returns the entry's number.
func (v efiVars) addBoot(o loadOption) (uint16, error) {
	data, err := o.MarshalBinary()
	if err != nil {
		return 0, err
	}
	used, err := v.bootEntries()
	if err != nil {
		return 0, err
	}
	var n uint16
	for slices.Contains(used, n) {
		if n == 0xffff {
			return 0, errors.New("no free Boot#### variable")
		}
		n++
	}
	if err := v.set(bootName(n), data); err != nil {
		return 0, err
	}
	order, err := v.bootOrder()
	if err != nil {
		return 0, err
	}
	order = slices.DeleteFunc(order, func(x uint16) bool { return x == n })
	return n, v.setBootOrder(append([]uint16{n}, order...))
}

// removeByLabel deletes every Boot#### entry whose description is label,
// as IPA does before adding its own (efi_utils._run_efibootmgr).
func (v efiVars) removeByLabel(label string) error {
	nums, err := v.bootEntries()
	if err != nil {
		return err
	}
	for _, n := range nums {
		b, err := v.get(bootName(n))
		if err != nil || b == nil {
			continue
		}
		if o, err := parseLoadOption(b); err == nil && o.Description == label {
			if err := v.removeBoot(n); err != nil {
				return err
			}
		}
	}
	return nil
}
