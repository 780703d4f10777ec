package disk

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"testing"
	"unicode/utf16"
)

// The tests read partition tables with this reader of their own (written
// from the UEFI specification, not go-diskfs) so that a table go-diskfs
// writes wrongly is caught.

type entry struct {
	typ        string // GPT type GUID, or MBR type as 0xNN
	start, end int64  // bytes, end exclusive
	name       string
	guid       string // GPT unique partition GUID
}

// guidString renders a GPT GUID (mixed-endian) in its text form.
func guidString(g []byte) string {
	return fmt.Sprintf("%08X-%04X-%04X-%X-%X", binary.LittleEndian.Uint32(g[0:]), binary.LittleEndian.Uint16(g[4:]),
		binary.LittleEndian.Uint16(g[6:]), g[8:10], g[10:16])
}

// readGPT checks the primary GPT header's signature and both CRCs and
// returns the used entries in table order.
func readGPT(t *testing.T, disk []byte) []entry {
	t.Helper()
	h := disk[512:1024]
	if string(h[:8]) != "EFI PART" {
		t.Fatalf("no GPT signature at LBA 1")
	}
	hsize := binary.LittleEndian.Uint32(h[12:])
	crc := binary.LittleEndian.Uint32(h[16:])
	hc := append([]byte(nil), h[:hsize]...)
	binary.LittleEndian.PutUint32(hc[16:], 0)
	if crc32.ChecksumIEEE(hc) != crc {
		t.Fatalf("GPT header CRC mismatch")
	}
	if backup := int64(binary.LittleEndian.Uint64(h[32:])); backup != int64(len(disk))/512-1 {
		t.Errorf("backup GPT header at LBA %d, want the disk's last LBA %d", backup, len(disk)/512-1)
	}
	lba := int64(binary.LittleEndian.Uint64(h[72:]))
	count := int64(binary.LittleEndian.Uint32(h[80:]))
	esize := int64(binary.LittleEndian.Uint32(h[84:]))
	arr := disk[lba*512 : lba*512+count*esize]
	if crc32.ChecksumIEEE(arr) != binary.LittleEndian.Uint32(h[88:]) {
		t.Fatalf("GPT partition array CRC mismatch")
	}
	var out []entry
	for i := int64(0); i < count; i++ {
		e := arr[i*esize : (i+1)*esize]
		typ := guidString(e[:16])
		if typ == "00000000-0000-0000-0000-000000000000" {
			continue
		}
		var u []uint16
		for j := 56; j+1 < 128; j += 2 {
			if c := binary.LittleEndian.Uint16(e[j:]); c != 0 {
				u = append(u, c)
			}
		}
		out = append(out, entry{typ: typ, start: int64(binary.LittleEndian.Uint64(e[32:])) * 512,
			end: (int64(binary.LittleEndian.Uint64(e[40:])) + 1) * 512, name: string(utf16.Decode(u)), guid: guidString(e[16:32])})
	}
	return out
}

// readMBR returns the used primary entries of an MBR.
func readMBR(t *testing.T, disk []byte) []entry {
	t.Helper()
	if disk[510] != 0x55 || disk[511] != 0xAA {
		t.Fatalf("no MBR signature")
	}
	var out []entry
	for i := 0; i < 4; i++ {
		e := disk[446+16*i : 446+16*(i+1)]
		if e[4] == 0 {
			continue
		}
		start := int64(binary.LittleEndian.Uint32(e[8:])) * 512
		out = append(out, entry{typ: fmt.Sprintf("0x%02x", e[4]), start: start, end: start + int64(binary.LittleEndian.Uint32(e[12:]))*512})
	}
	return out
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
