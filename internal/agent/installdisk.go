package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/disk"
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
// (disk.Discover), ordered by size then name, the first of at least min
// bytes. It returns the device path (/dev/NAME).
func InstallDisk(root string, min int64) (string, error) {
	disks, err := disk.Discover(root)
	if err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	slices.SortFunc(disks, func(a, b disk.Device) int { return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Name, b.Name)) })
	for _, d := range disks {
		if d.Size >= min {
			return d.Name, nil
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
		if err := clock.Sleep(ctx, diskWaitDelay); err != nil {
			return "", err
		}
	}
}

// fileDisks parses the --disk specs (disk.FileDisk: PATH[,attr=value...]).
func fileDisks(specs []string) ([]disk.Device, error) {
	var out []disk.Device
	for _, s := range specs {
		d, err := disk.FileDisk(s)
		if err != nil {
			return nil, fmt.Errorf("agent: --disk: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// devices are the disks root device hints choose among: the disks named
// with --disk when there are any (the machine's own disks are then never
// considered), else the machine's (disk.Discover under RootDir).
func (a *Agent) devices() ([]disk.Device, error) {
	if len(a.cfg.Disks) > 0 {
		return fileDisks(a.cfg.Disks) // re-read: sizes may change between deploys
	}
	return disk.Discover(a.cfg.RootDir)
}

// installDevice is the disk an image goes to: the first device matching
// the root device hints (IPA's get_os_install_device), else the agent's
// disk (the first --disk, or the one InstallDisk chose).
func (a *Agent) installDevice(hints map[string]any) (string, error) {
	if len(hints) == 0 {
		if a.cfg.Disk == "" {
			return "", fmt.Errorf("no install disk")
		}
		return a.cfg.Disk, nil
	}
	if _, err := disk.ParseHints(hints); err != nil {
		return "", err
	}
	devs, err := a.devices()
	if err != nil {
		return "", err
	}
	d, err := disk.Select(devs, hints)
	if err != nil {
		return "", err
	}
	a.log.Info("install disk chosen by root device hints", "disk", d.Name)
	return d.Name, nil
}
