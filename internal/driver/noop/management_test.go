package noop

import (
	"context"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
)

func TestNoopManagement(t *testing.T) {
	var m Management
	ctx := context.Background()
	if d, err := m.BootDevice(ctx, nil); err != nil || d != (driver.BootDevice{Device: "pxe", Persistent: true}) {
		t.Errorf("BootDevice = %+v, %v", d, err)
	}
	for _, dev := range []string{"pxe", "disk"} {
		if err := m.SetBootDevice(ctx, nil, driver.BootDevice{Device: dev}); err != nil {
			t.Errorf("%s: %v", dev, err)
		}
	}
	if err := m.SetBootDevice(ctx, nil, driver.BootDevice{Device: "cdrom"}); err == nil ||
		err.Error() != "Invalid boot device cdrom specified, supported are pxe, disk." {
		t.Errorf("cdrom: %v", err)
	}
}
