package conductor

import (
	"context"
	"errors"
	"slices"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Volume connectors and targets (boot from volume, API 1.32), with
// Ironic's rules: the API creates them without a lock or a state check;
// an update takes the lock of the node the changed record names and needs
// it powered off (update_volume_connector, update_volume_target); a
// deletion takes its node's lock and needs it powered off or in one of
// DELETE_ALLOWED_STATES (destroy_volume_connector, destroy_volume_target).

// connectorWriteErr maps a store error of a connector write to Ironic's.
func connectorWriteErr(err error, vc *model.VolumeConnector) error {
	var d *store.DuplicateError
	switch {
	case errors.As(err, &d) && d.Field == "type":
		return fault.New(fault.Conflict, "A volume connector with type %s and connector ID %s already exists.",
			vc.Type, vc.ConnectorID)
	case errors.As(err, &d):
		return fault.New(fault.Conflict, "A volume connector with UUID %s already exists.", vc.UUID)
	case errors.Is(err, store.ErrNotFound):
		return fault.NodeNotFound(vc.NodeUUID)
	case errors.Is(err, store.ErrStale):
		return fault.New(fault.Conflict, "Volume connector %s was changed by another request; try again.", vc.UUID)
	}
	return err
}

// targetWriteErr maps a store error of a target write to Ironic's.
func targetWriteErr(err error, vt *model.VolumeTarget) error {
	var d *store.DuplicateError
	switch {
	case errors.As(err, &d) && d.Field == "boot_index":
		return fault.New(fault.Conflict, "A volume target with boot index '%d' for the same node already exists.", vt.BootIndex)
	case errors.As(err, &d):
		return fault.New(fault.Conflict, "A volume target with UUID %s already exists.", vt.UUID)
	case errors.Is(err, store.ErrNotFound):
		return fault.NodeNotFound(vt.NodeUUID)
	case errors.Is(err, store.ErrStale):
		return fault.New(fault.Conflict, "Volume target %s was changed by another request; try again.", vt.UUID)
	}
	return err
}

// CreateVolumeConnector stores a connector of an existing node. Errors:
// fault Conflict (uuid, or type and connector_id, taken), NotFound (node).
func (svc *NodeRecords) CreateVolumeConnector(ctx context.Context, vc *model.VolumeConnector) error {
	c := svc.c
	if vc.CreatedAt.IsZero() {
		vc.CreatedAt = c.now().UTC()
	}
	return connectorWriteErr(c.store.Volumes().CreateVolumeConnector(ctx, vc), vc)
}

// CreateVolumeTarget stores a target of an existing node. Errors: fault
// Conflict (uuid, or the node's boot index, taken), NotFound (node).
func (svc *NodeRecords) CreateVolumeTarget(ctx context.Context, vt *model.VolumeTarget) error {
	c := svc.c
	if vt.CreatedAt.IsZero() {
		vt.CreatedAt = c.now().UTC()
	}
	return targetWriteErr(c.store.Volumes().CreateVolumeTarget(ctx, vt), vt)
}

// UpdateVolumeConnector applies apply to a copy of the connector, then,
// under the lock of the node the copy names, saves it if that node is
// powered off. Errors: fault NotFound, Invalid (InvalidStateRequested),
// Conflict (locked, duplicate), apply's own.
func (svc *NodeRecords) UpdateVolumeConnector(ctx context.Context, id string, apply func(vc *model.VolumeConnector) error) (*model.VolumeConnector, error) {
	c := svc.c
	vc, err := c.store.Volumes().GetVolumeConnector(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Missing("Volume connector", id)
	} else if err != nil {
		return nil, err
	}
	cp := *vc
	if err := apply(&cp); err != nil {
		return nil, err
	}
	err = svc.underPoweredOff(ctx, cp.NodeUUID, "volume connector update", func() error {
		return connectorWriteErr(c.store.Volumes().UpdateVolumeConnector(ctx, &cp), &cp)
	})
	if err != nil {
		return nil, err
	}
	return &cp, nil
}

// UpdateVolumeTarget is UpdateVolumeConnector for a target.
func (svc *NodeRecords) UpdateVolumeTarget(ctx context.Context, id string, apply func(vt *model.VolumeTarget) error) (*model.VolumeTarget, error) {
	c := svc.c
	vt, err := c.store.Volumes().GetVolumeTarget(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Missing("Volume target", id)
	} else if err != nil {
		return nil, err
	}
	cp := *vt
	if err := apply(&cp); err != nil {
		return nil, err
	}
	err = svc.underPoweredOff(ctx, cp.NodeUUID, "volume target update", func() error {
		return targetWriteErr(c.store.Volumes().UpdateVolumeTarget(ctx, &cp), &cp)
	})
	if err != nil {
		return nil, err
	}
	return &cp, nil
}

// DeleteVolumeConnector removes a connector under its node's lock, if the
// node is powered off or in one of Ironic's DELETE_ALLOWED_STATES.
// Errors: fault NotFound, Invalid, Conflict (locked).
func (svc *NodeRecords) DeleteVolumeConnector(ctx context.Context, id string) error {
	c := svc.c
	vc, err := c.store.Volumes().GetVolumeConnector(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Volume connector", id)
	} else if err != nil {
		return err
	}
	return svc.underDeletable(ctx, vc.NodeUUID, "volume connector deletion", func() error {
		if err := c.store.Volumes().DeleteVolumeConnector(ctx, vc.UUID); errors.Is(err, store.ErrNotFound) {
			return fault.Missing("Volume connector", id)
		} else if err != nil {
			return err
		}
		return nil
	})
}

// DeleteVolumeTarget is DeleteVolumeConnector for a target.
func (svc *NodeRecords) DeleteVolumeTarget(ctx context.Context, id string) error {
	c := svc.c
	vt, err := c.store.Volumes().GetVolumeTarget(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Volume target", id)
	} else if err != nil {
		return err
	}
	return svc.underDeletable(ctx, vt.NodeUUID, "volume target deletion", func() error {
		if err := c.store.Volumes().DeleteVolumeTarget(ctx, vt.UUID); errors.Is(err, store.ErrNotFound) {
			return fault.Missing("Volume target", id)
		} else if err != nil {
			return err
		}
		return nil
	})
}

// underPoweredOff runs write under the node's lock if the node is powered
// off; otherwise it answers Ironic's InvalidStateRequested for action.
func (svc *NodeRecords) underPoweredOff(ctx context.Context, node, action string, write func() error) error {
	return svc.underNodeLock(ctx, node, action, func(n *model.Node) bool { return n.PowerState == fsm.PowerOff }, write)
}

// underDeletable runs write under the node's lock if the node is powered
// off or in one of DELETE_ALLOWED_STATES.
func (svc *NodeRecords) underDeletable(ctx context.Context, node, action string, write func() error) error {
	return svc.underNodeLock(ctx, node, action, func(n *model.Node) bool {
		return n.PowerState == fsm.PowerOff || slices.Contains(fsm.IronicDeleteAllowedStates(), n.ProvisionState)
	}, write)
}

func (svc *NodeRecords) underNodeLock(ctx context.Context, node, action string, ok func(*model.Node) bool, write func() error) error {
	c := svc.c
	t, err := c.acquireNode(ctx, node, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	if !ok(t.node) {
		return fault.InvalidState(action, t.node.UUID, powerName(t.node.PowerState))
	}
	return write()
}
