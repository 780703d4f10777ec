package conductor

import (
	"context"
	"errors"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// raidUnsupported is Ironic's UnsupportedDriverExtension for RAID, which
// the RAID endpoints answer with 404.
func raidUnsupported(driverName string) error {
	return fault.New(fault.NotFound, "Driver %s does not support raid (disabled or not implemented).", driverName)
}

// SetTargetRAIDConfig stores a node's target RAID configuration under its
// lock, in any state (Ironic's set_target_raid_config): a non-empty one is
// first validated by the node's raid interface; an empty one clears it.
// Errors: fault NotFound (node; a raid interface without RAID, such as
// no-raid), Conflict (locked), Invalid (the configuration, with Ironic's text).
func (svc *Nodes) SetTargetRAIDConfig(ctx context.Context, ident string, cfg model.JSON) error {
	c := svc.c
	t, err := c.acquireNode(ctx, ident, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	drv, err := c.reg.For(t.node)
	if err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	r, ok := drv.Interface("raid").(driver.RAID)
	if !ok {
		return raidUnsupported(t.node.Driver)
	}
	if len(cfg) > 0 {
		if err := r.ValidateRAIDConfig(t.node, cfg); err != nil {
			if errors.Is(err, driver.ErrUnsupported) {
				return fault.Wrap(fault.NotFound, err, err.Error())
			}
			return fault.Wrap(fault.Invalid, err, err.Error())
		}
	}
	n, err := clone(t.node)
	if err != nil {
		return err
	}
	n.TargetRaidConfig = cfg
	if len(cfg) == 0 {
		n.TargetRaidConfig = nil
	}
	return c.store.Nodes().UpdateNode(ctx, n)
}

// RAIDLogicalDiskProperties returns what the default raid interface of an
// enabled hardware type takes in a logical disk (Ironic's
// get_raid_logical_disk_properties). Errors: fault NotFound (unknown driver,
// or a default raid interface without RAID).
func (svc *Hardware) RAIDLogicalDiskProperties(driverName string) (map[string]string, error) {
	c := svc.c
	ht, ok := c.reg.HardwareType(driverName)
	if !ok {
		return nil, driverNotFound(driverName)
	}
	if len(ht.Supported["raid"]) == 0 {
		return nil, raidUnsupported(driverName)
	}
	n := &model.Node{Driver: driverName}
	n.Interfaces.Raid = ht.Supported["raid"][0]
	drv, err := c.reg.For(n)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	r, ok := drv.Interface("raid").(driver.RAID)
	if !ok {
		return nil, raidUnsupported(driverName)
	}
	return r.LogicalDiskProperties(), nil
}
