package bmcemu

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strings"
)

// agentParam is what marks a deploy ramdisk's boot configuration: the
// kernel parameter handing the agent its API (Anvil's boot endpoint adds
// it to every ISO it builds for the agent).
var agentParam = []byte("ipa-api-url=")

// bootConfigs are the boot loader configurations of an ISO that hold its
// kernel command line (isolinux for BIOS, GRUB for UEFI: the layout of
// internal/isoimage and of most live ISOs).
var bootConfigs = []string{"/isolinux/isolinux.cfg", "/boot/grub/grub.cfg", "/EFI/BOOT/grub.cfg"}

const isoSector = 2048

// mediumRunsAgent says whether booting the virtual CD image at path starts
// the deploy agent. An ISO 9660 image does when a boot configuration of it
// carries ipa-api-url= (Anvil's deploy ISO); one without it is an
// operating system of its own, which the emulator does not run. Anything
// that is not an ISO 9660 image stands for the deploy ramdisk, as tests
// and demos insert a few bytes for it.
func mediumRunsAgent(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	pvd := make([]byte, isoSector)
	if _, err := f.ReadAt(pvd, 16*isoSector); err != nil || pvd[0] != 1 || string(pvd[1:6]) != "CD001" {
		return true
	}
	root := pvd[156 : 156+34] // the root directory's record
	for _, p := range bootConfigs {
		b, ok := isoFile(f, root, p)
		if ok && bytes.Contains(b, agentParam) {
			return true
		}
	}
	return false
}

// isoFile reads (at most 1 MiB of) the file at path in an ISO 9660 image,
// walking directory records from the root's; names compare without case
// and version (";1"), as the primary names of Rock Ridge images are
// upper-case.
func isoFile(r io.ReaderAt, root []byte, path string) ([]byte, bool) {
	rec := root
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		next, ok := isoLookup(r, rec, name)
		if !ok {
			return nil, false
		}
		rec = next
	}
	if rec[25]&2 != 0 { // a directory
		return nil, false
	}
	size := min(binary.LittleEndian.Uint32(rec[10:]), 1<<20)
	b := make([]byte, size)
	if _, err := r.ReadAt(b, int64(binary.LittleEndian.Uint32(rec[2:]))*isoSector); err != nil && err != io.EOF {
		return nil, false
	}
	return b, true
}

// isoLookup finds name in the directory whose record is dir.
func isoLookup(r io.ReaderAt, dir []byte, name string) ([]byte, bool) {
	if dir[25]&2 == 0 {
		return nil, false
	}
	size := min(binary.LittleEndian.Uint32(dir[10:]), 1<<20)
	data := make([]byte, size)
	if _, err := r.ReadAt(data, int64(binary.LittleEndian.Uint32(dir[2:]))*isoSector); err != nil && err != io.EOF {
		return nil, false
	}
	for off := 0; off < len(data); {
		n := int(data[off])
		if n == 0 { // records do not cross sectors: go to the next one
			off = (off/isoSector + 1) * isoSector
			continue
		}
		if n < 34 || off+n > len(data) {
			return nil, false
		}
		rec := data[off : off+n]
		nl := int(rec[32])
		if 33+nl <= n {
			got, _, _ := strings.Cut(string(rec[33:33+nl]), ";")
			if strings.EqualFold(strings.TrimSuffix(got, "."), name) {
				return rec, true
			}
		}
		off += n
	}
	return nil, false
}
