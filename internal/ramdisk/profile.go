package ramdisk

import (
	"fmt"
	"sort"
)

// Profiles name the module sets a ramdisk starts from; --modules adds to
// them. Dependencies are not listed: Tree.Resolve adds them.
var profiles = map[string][]string{
	// qemu/KVM machines: virtio disks and NICs (PCI transport), virtio-scsi
	// disks (sd_mod), qemu's default e1000/e1000e NICs and its AHCI (q35).
	"vm": {"virtio_pci", "virtio_net", "virtio_blk", "virtio_scsi", "sd_mod", "e1000", "e1000e", "ahci"},
	// physical servers: the vm set plus the common server NICs and storage
	// controllers of Debian's kernel (see docs/ramdisk.md).
	"server": {
		"virtio_pci", "virtio_net", "virtio_blk", "virtio_scsi", "sd_mod", "e1000",
		// Intel 1/10/25/40/100 GbE and their virtual functions
		"e1000e", "igb", "igc", "ixgbe", "ixgbevf", "i40e", "iavf", "ice",
		// Mellanox/NVIDIA ConnectX-4 and later, Broadcom NetXtreme-C/E and tg3
		"mlx5_core", "bnxt_en", "tg3",
		// SATA AHCI, NVMe, Broadcom/LSI MegaRAID and SAS HBAs, Intel C600 SAS
		// (isci, whose firmware Debian's main archive ships), HPE Smart Array
		"ahci", "nvme", "megaraid_sas", "mpt3sas", "isci", "hpsa", "smartpqi",
	},
}

// optionalModules join every profile when the kernel has them as modules
// (a kernel may build them in): efivarfs, through which the agent writes
// the UEFI boot entry (coldplug loads it on a UEFI machine).
var optionalModules = []string{"efivarfs"}

// DefaultProfile is the profile of `anvil ramdisk build` without --profile.
const DefaultProfile = "server"

// ProfileModules returns the modules of the named profile.
func ProfileModules(name string) ([]string, error) {
	m, ok := profiles[name]
	if !ok {
		return nil, fmt.Errorf("ramdisk: unknown profile %q (known: %v)", name, ProfileNames())
	}
	return append([]string(nil), m...), nil
}

// ProfileNames lists the profiles.
func ProfileNames() []string {
	out := make([]string, 0, len(profiles))
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
