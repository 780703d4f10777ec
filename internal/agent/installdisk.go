package agent

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultMinDiskSize is IPA's minimum install disk size (guess_root_disk's
// min_size_required, 4 GiB).
const DefaultMinDiskSize = 4 << 30

// IPA's disk wait (ipa-disk-wait-attempts, ipa-disk-wait-delay).
const (
	diskWaitAttempts = 10
	diskWaitDelay    = 3 * time.Second
)

// InstallDisk chooses the disk an image goes to when none is named, as IPA
// does without root device hints (hardware.get_os_install_device →
// utils.guess_root_disk): among the whole disks under root's /sys/block
// (no partitions, loop, ram, zram, floppy, optical, device-mapper or
// removable devices; none of size 0), ordered by size then name, the first
// of at least min bytes. It returns the device path (/dev/NAME).
func InstallDisk(root string, min int64) (string, error) {
	type disk struct {
		name string
		size int64
	}
	ents, err := os.ReadDir(filepath.Join(root, "/sys/block"))
	if err != nil {
		return "", fmt.Errorf("agent: list disks: %w", err)
	}
	read := func(name, file string) string {
		b, _ := os.ReadFile(filepath.Join(root, "/sys/block", name, file))
		return strings.TrimSpace(string(b))
	}
	var disks []disk
	for _, e := range ents {
		n := e.Name()
		if hasAnyPrefix(n, "loop", "ram", "zram", "fd", "sr", "dm-", "nbd") || read(n, "removable") == "1" {
			continue
		}
		sectors, _ := strconv.ParseInt(read(n, "size"), 10, 64)
		if sectors <= 0 {
			continue
		}
		disks = append(disks, disk{n, sectors * 512})
	}
	slices.SortFunc(disks, func(a, b disk) int { return cmp.Or(cmp.Compare(a.size, b.size), cmp.Compare(a.name, b.name)) })
	for _, d := range disks {
		if d.size >= min {
			return "/dev/" + d.name, nil
		}
	}
	return "", fmt.Errorf("agent: no install disk: %d disks found, none of at least %d bytes", len(disks), min)
}

// waitInstallDisk retries InstallDisk up to attempts times, diskWaitDelay
// apart.
func waitInstallDisk(ctx context.Context, root string, min int64, attempts int) (string, error) {
	for i := 1; ; i++ {
		d, err := InstallDisk(root, min)
		if err == nil || i >= attempts {
			return d, err
		}
		if err := sleep(ctx, diskWaitDelay); err != nil {
			return "", err
		}
	}
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
