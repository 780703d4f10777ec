package conductor

import (
	"context"
	"errors"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// CreatePort adds a port to an existing node (no lock needed, as in Ironic).
func (svc *NodeRecords) CreatePort(ctx context.Context, p *model.Port) error {
	c := svc.c
	if _, err := c.getNode(ctx, p.NodeUUID); err != nil {
		return err
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = c.now().UTC()
	}
	if err := c.store.Ports().CreatePort(ctx, p); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fault.NodeNotFound(p.NodeUUID)
		}
		return portDuplicate(err)
	}
	return nil
}

func portDuplicate(err error) error {
	var d *store.DuplicateError
	if !errors.As(err, &d) {
		return err
	}
	switch d.Field {
	case "address":
		return fault.New(fault.Conflict, "A port with MAC address %s already exists.", d.Value)
	case "name":
		return fault.New(fault.Conflict, "A port with name %s already exists.", d.Value)
	}
	return fault.New(fault.Conflict, "A port with UUID %s already exists.", d.Value)
}

// UpdatePort changes a port under its node's lock.
func (svc *NodeRecords) UpdatePort(ctx context.Context, ident string, apply func(p *model.Port) error) (*model.Port, error) {
	c := svc.c
	p, err := c.store.Ports().GetPort(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Missing("Port", ident)
	} else if err != nil {
		return nil, err
	}
	t, err := c.acquire(ctx, p.NodeUUID, "")
	if err != nil {
		return nil, err
	}
	defer t.release()
	if p, err = c.store.Ports().GetPort(ctx, p.UUID); err != nil {
		return nil, fault.Missing("Port", ident)
	}
	cp := *p
	if err := apply(&cp); err != nil {
		return nil, err
	}
	if cp.NodeUUID != p.NodeUUID {
		if _, err := c.getNode(ctx, cp.NodeUUID); err != nil {
			return nil, err
		}
	}
	if cp.PortgroupUUID != "" {
		g, err := c.store.Ports().GetPortgroup(ctx, cp.PortgroupUUID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if err := standaloneConflict(t.node, g, p, &cp); err != nil {
			return nil, err
		}
	}
	if err := c.store.Ports().UpdatePort(ctx, &cp); err != nil {
		return nil, portDuplicate(err)
	}
	return &cp, nil
}

// DeletePort removes a port under its node's lock.
func (svc *NodeRecords) DeletePort(ctx context.Context, ident string) error {
	c := svc.c
	p, err := c.store.Ports().GetPort(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Port", ident)
	} else if err != nil {
		return err
	}
	t, err := c.acquire(ctx, p.NodeUUID, "")
	if err != nil {
		return err
	}
	defer t.release()
	if err := c.store.Ports().DeletePort(ctx, p.UUID); errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Port", ident)
	} else if err != nil {
		return err
	}
	return nil
}
