package vm_test

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// assets is the deploy ramdisk `anvil ramdisk build` makes, and the busybox
// the qemu guest forwards run (busybox nc).
type assets struct {
	kernel, initramfs string
	busybox           string
}

func cacheDir(t *testing.T) string { return testbin.VMCacheDir(t) }

// buildRamdisk runs `anvil ramdisk build` (testbin.BuildRamdisk).
func buildRamdisk(t *testing.T) assets {
	t.Helper()
	r := testbin.BuildRamdisk(t, anvilBin, []string{vmSwitch})
	return assets{kernel: r.Kernel, initramfs: r.Initramfs, busybox: r.Busybox}
}
