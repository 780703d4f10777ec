package redfish

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// HTTPSBootName is the boot interface's name (Ironic master's
// RedfishHttpsBoot).
const HTTPSBootName = "redfish-https"

// HTTPSBoot is the redfish-https boot interface: the node boots the same
// ISO redfish-virtual-media would insert, but the BMC is asked to have the
// firmware download it by UEFI HTTP boot — boot source override UefiHttp
// with Boot.HttpBootUri set to the ISO's URL — instead of mounting it as a
// virtual CD. UEFI firmware boots an ISO it downloaded from a RAM disk.
// What it boots, and the driver_info keys it reads, are
// redfish-virtual-media's (deploy_iso, or deploy_kernel and deploy_ramdisk
// that Anvil's boot endpoint builds an ISO of).
//
// Differences from Ironic: Anvil does not read the system's
// BootSourceOverrideTarget allowable values before booting (Ironic's
// validate refuses a system that does not list UefiHttp); a BMC that does
// not support it refuses the PATCH, and that error is the node's
// last_error.
type HTTPSBoot struct{ vm *VirtualMediaBoot }

// NewHTTPSBoot returns the interface, talking to BMCs through d.
func (d *Driver) NewHTTPSBoot(cfg BootConfig) *HTTPSBoot {
	return &HTTPSBoot{vm: d.NewVirtualMediaBoot(cfg)}
}

var (
	_ driver.Boot            = (*HTTPSBoot)(nil)
	_ driver.RescueValidator = (*HTTPSBoot)(nil)
	_ driver.RamdiskBooter   = (*HTTPSBoot)(nil)
)

// Validate is redfish-virtual-media's.
func (b *HTTPSBoot) Validate(t *driver.Task) error { return b.vm.Validate(t) }

// ValidateRescue is redfish-virtual-media's.
func (b *HTTPSBoot) ValidateRescue(n *model.Node) error { return b.vm.ValidateRescue(n) }

// ValidateRamdiskBoot is redfish-virtual-media's.
func (b *HTTPSBoot) ValidateRamdiskBoot(n *model.Node) error { return b.vm.ValidateRamdiskBoot(n) }

// PrepareRamdisk publishes mode's ISO (or takes deploy_iso/rescue_iso) and
// sets a one-time UEFI HTTP boot of its URL; the caller powers the node on.
// On failure the published ISO is withdrawn.
func (b *HTTPSBoot) PrepareRamdisk(ctx context.Context, t *driver.Task, mode string) (err error) {
	if err := b.vm.validate(t.Node, mode); err != nil {
		return err
	}
	src, _ := parseBootInfo(t.Node, mode)
	iso := src.iso
	if iso == "" {
		iso, err = b.vm.cfg.Publisher.PublishISO(ctx, t.Node.UUID, ISORamdisk{Kernel: src.kernel, Ramdisk: src.ramdisk, KernelParams: b.vm.kernelParams(t.Node)})
		if err != nil {
			return fmt.Errorf("building the %s ISO: %w", mode, err)
		}
		defer b.withdrawOnError(ctx, t, &err)
	}
	if err := t.SetBootDevice(ctx, driver.BootDevice{Device: "uefihttp", HTTPBootURI: iso}); err != nil {
		return err
	}
	b.vm.d.cfg.Log.Info("next boot: UEFI HTTP boot of the ISO", "node", t.Node.UUID, "mode", mode)
	return nil
}

func (b *HTTPSBoot) withdrawOnError(ctx context.Context, t *driver.Task, err *error) {
	if *err == nil {
		return
	}
	if werr := b.vm.withdraw(ctx, t); werr != nil {
		b.vm.d.cfg.Log.Error("withdrawing the ISO after a failed boot override", "node", t.Node.UUID, "err", werr)
	}
}

// CleanUpRamdisk withdraws the ISO.
func (b *HTTPSBoot) CleanUpRamdisk(ctx context.Context, t *driver.Task) error {
	return b.vm.withdraw(ctx, t)
}

// PrepareInstance withdraws the ramdisk's ISO and makes the node boot its
// disk.
func (b *HTTPSBoot) PrepareInstance(ctx context.Context, t *driver.Task) error {
	if err := b.vm.withdraw(ctx, t); err != nil {
		return err
	}
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "disk", Persistent: true})
}

// CleanUpInstance withdraws any ISO.
func (b *HTTPSBoot) CleanUpInstance(ctx context.Context, t *driver.Task) error {
	return b.vm.withdraw(ctx, t)
}

// PrepareRamdiskBoot makes the node boot the instance's ISO (boot_iso, or
// one built of its kernel and ramdisk) by UEFI HTTP boot on every boot
// (Ironic's ramdisk deploy with redfish-https: a persistent override).
func (b *HTTPSBoot) PrepareRamdiskBoot(ctx context.Context, t *driver.Task) (err error) {
	if err := b.vm.ValidateRamdiskBoot(t.Node); err != nil {
		return err
	}
	ib, _ := driver.InstanceBootOf(t.Node)
	iso := ib.ISO
	if iso == "" {
		iso, err = b.vm.cfg.Publisher.PublishISO(ctx, t.Node.UUID, ISORamdisk{Kernel: ib.Kernel, Ramdisk: ib.Ramdisk, KernelParams: ib.KernelParams})
		if err != nil {
			return fmt.Errorf("building the instance's ISO: %w", err)
		}
		defer b.withdrawOnError(ctx, t, &err)
	}
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "uefihttp", Persistent: true, HTTPBootURI: iso})
}
