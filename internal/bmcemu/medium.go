package bmcemu

import (
	"bytes"
	"io"
	"os"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// agentParam is what marks a deploy ramdisk's boot configuration: the
// kernel parameter handing the agent its API (Anvil's boot endpoint adds
// it to every ISO it builds for the agent).
var agentParam = []byte("ipa-api-url=")

// bootConfigs are the boot loader configurations of an ISO that hold its
// kernel command line (isolinux for BIOS, GRUB for UEFI, the layout of
// internal/isoimage and of most live ISOs).
var bootConfigs = []string{"/isolinux/isolinux.cfg", "/boot/grub/grub.cfg", "/EFI/BOOT/grub.cfg"}

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
	magic := make([]byte, 5)
	if _, err := f.ReadAt(magic, 16*2048+1); err != nil || string(magic) != "CD001" {
		return true
	}
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	fs, err := iso9660.Read(file.New(f, true), fi.Size(), 0, 2048)
	if err != nil {
		return true
	}
	for _, p := range bootConfigs {
		cf, err := fs.OpenFile(p, os.O_RDONLY)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(cf, 1<<20))
		cf.Close()
		if bytes.Contains(b, agentParam) {
			return true
		}
	}
	return false
}
