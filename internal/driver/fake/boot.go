package fake

import (
	"context"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// Boot is the fake boot interface: it publishes nothing and only sets the
// boot device through the node's management interface (pxe for a ramdisk,
// disk for the instance), so an emulated machine boots what it is told.
type Boot struct{ drivers *driver.Registry }

// NewBoot returns the fake boot interface; drivers finds a node's
// management interface.
func NewBoot(drivers *driver.Registry) *Boot { return &Boot{drivers: drivers} }

// Validate needs nothing.
func (b *Boot) Validate(*model.Node) error { return nil }

// PrepareRamdisk sets the boot device to pxe (once).
func (b *Boot) PrepareRamdisk(ctx context.Context, t *driver.Task, _ string) error {
	return b.drivers.SetBootDevice(ctx, t, driver.BootDevice{Device: "pxe"})
}

// CleanUpRamdisk has nothing to withdraw.
func (b *Boot) CleanUpRamdisk(context.Context, *driver.Task) error { return nil }

// PrepareInstance sets the boot device to disk, persistently.
func (b *Boot) PrepareInstance(ctx context.Context, t *driver.Task) error {
	return b.drivers.SetBootDevice(ctx, t, driver.BootDevice{Device: "disk", Persistent: true})
}

// CleanUpInstance has nothing to withdraw.
func (b *Boot) CleanUpInstance(context.Context, *driver.Task) error { return nil }
