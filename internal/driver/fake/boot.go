package fake

import (
	"context"

	"github.com/anvil-metal/anvil/internal/driver"
)

// Boot is the fake boot interface: it publishes nothing and only sets the
// boot device through the task's management interface (pxe for a ramdisk,
// disk for the instance), so an emulated machine boots what it is told.
type Boot struct{}

// NewBoot returns the fake boot interface.
func NewBoot() *Boot { return &Boot{} }

// Validate needs nothing.
func (b *Boot) Validate(*driver.Task) error { return nil }

// PrepareRamdisk sets the boot device to pxe (once).
func (b *Boot) PrepareRamdisk(ctx context.Context, t *driver.Task, _ string) error {
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "pxe"})
}

// CleanUpRamdisk has nothing to withdraw.
func (b *Boot) CleanUpRamdisk(context.Context, *driver.Task) error { return nil }

// PrepareInstance sets the boot device to disk, persistently.
func (b *Boot) PrepareInstance(ctx context.Context, t *driver.Task) error {
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "disk", Persistent: true})
}

// CleanUpInstance has nothing to withdraw.
func (b *Boot) CleanUpInstance(context.Context, *driver.Task) error { return nil }
