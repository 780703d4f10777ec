package redfish

import (
	"context"
	"fmt"

	"github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"

	"github.com/anvil-metal/anvil/internal/driver"
)

var (
	_ driver.NMIInjector  = (*Driver)(nil)
	_ driver.HealthReader = (*Driver)(nil)

	_ driver.BootModeManager = (*Driver)(nil)
)

// PowerStateHealth reads the power state and the system's Status.Health in
// one GET of the system (what the power sync calls; Ironic's
// get_node_health reads the same field).
func (d *Driver) PowerStateHealth(ctx context.Context, t *driver.Task) (power, health string, err error) {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return "", "", err
	}
	return powerState(sys.PowerState), healthOf(sys.Status.Health), nil
}

// healthOf maps Redfish Health to Ironic's health states ("" when the BMC
// reports none, or something else).
func healthOf(h common.Health) string {
	switch h {
	case common.OKHealth:
		return driver.HealthOK
	case common.WarningHealth:
		return driver.HealthWarning
	case common.CriticalHealth:
		return driver.HealthCritical
	}
	return ""
}

// InjectNMI asks the system for a ComputerSystem.Reset with ResetType Nmi
// (Ironic's redfish inject_nmi).
func (d *Driver) InjectNMI(ctx context.Context, t *driver.Task) error {
	sys, err := d.system(ctx, t.Node)
	if err == nil {
		err = sys.Reset(redfish.NmiResetType)
	}
	if err != nil {
		return &driver.CallError{Err: err,
			Msg: fmt.Sprintf("Redfish exception occurred. Error: Redfish inject NMI failed for node %s. Error: %v", t.Node.UUID, err)}
	}
	return nil
}
