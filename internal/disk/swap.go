package disk

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
)

// swapPage is the page size mkswap assumes on x86-64 and arm64 (4 KiB).
const swapPage = 4096

// FormatSwap makes p a Linux swap area labelled label (what mkswap -L
// writes: a version-1 header in the first page ending in "SWAPSPACE2"),
// as IPA's work_on_disk does with mkswap on the swap partition.
func FormatSwap(path string, p Partition, label string) error {
	if p.Size < 10*swapPage {
		return fmt.Errorf("swap partition of %d bytes is too small", p.Size)
	}
	page := make([]byte, swapPage)
	binary.LittleEndian.PutUint32(page[1024:], 1)                         // version
	binary.LittleEndian.PutUint32(page[1028:], uint32(p.Size/swapPage-1)) // last_page
	_, _ = rand.Read(page[1036:1052])                                     // uuid
	page[1036+6] = page[1036+6]&0x0f | 0x40                               // version 4
	page[1036+8] = page[1036+8]&0x3f | 0x80                               // variant
	copy(page[1052:1068], label)                                          // volume name
	copy(page[swapPage-10:], "SWAPSPACE2")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(page, p.Start); err != nil {
		return err
	}
	return f.Sync()
}
