package noop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
)

// ManagementName is Ironic's "noop" management interface (NoopManagement),
// of the manual-management hardware type.
const ManagementName = "noop"

// Management is Ironic's NoopManagement: the operator has set the
// machine's boot order (network first, then disk) by hand, so setting a
// boot device does nothing once the device is one of those.
type Management struct{}

var noopBootDevices = []string{"pxe", "disk"}

// Validate accepts any node.
func (Management) Validate(*driver.Task) error { return nil }

// BootDevice is always network boot, persistent (Ironic's answer).
func (Management) BootDevice(context.Context, *driver.Task) (driver.BootDevice, error) {
	return driver.BootDevice{Device: "pxe", Persistent: true}, nil
}

// SetBootDevice checks the device and does nothing.
func (Management) SetBootDevice(_ context.Context, _ *driver.Task, dev driver.BootDevice) error {
	if !slices.Contains(noopBootDevices, dev.Device) {
		return fmt.Errorf("Invalid boot device %s specified, supported are %s.", dev.Device, strings.Join(noopBootDevices, ", "))
	}
	return nil
}

// SupportedBootDevices are pxe and disk.
func (Management) SupportedBootDevices(context.Context, *driver.Task) ([]string, error) {
	return slices.Clone(noopBootDevices), nil
}
