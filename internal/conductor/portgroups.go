package conductor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func portgroupDuplicate(err error) error {
	var d *store.DuplicateError
	if !errors.As(err, &d) {
		return err
	}
	switch d.Field {
	case "address":
		return fault.New(fault.Conflict, "A portgroup with MAC address %s already exists.", d.Value)
	case "name":
		return fault.New(fault.Conflict, "A portgroup with name %s already exists.", d.Value)
	}
	return fault.New(fault.Conflict, "A portgroup with UUID %s already exists.", d.Value)
}

// CreatePortgroup adds a portgroup to an existing node (no lock, as in
// Ironic, whose API creates it). Errors: fault NotFound (node), Conflict
// (duplicate uuid, name or address).
func (svc *NodeRecords) CreatePortgroup(ctx context.Context, pg *model.Portgroup) error {
	c := svc.c
	if _, err := c.getNode(ctx, pg.NodeUUID); err != nil {
		return err
	}
	if pg.CreatedAt.IsZero() {
		pg.CreatedAt = c.now().UTC()
	}
	if err := c.store.Ports().CreatePortgroup(ctx, pg); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fault.NodeNotFound(pg.NodeUUID)
		}
		return portgroupDuplicate(err)
	}
	return nil
}

// portgroupMoveStates are the states in which a portgroup may move to
// another node (Ironic's update_portgroup).
var portgroupMoveStates = []string{fsm.Enroll, fsm.Inspecting, fsm.InspectWait, fsm.Manageable}

// UpdatePortgroup changes a portgroup under its node's lock. Moving it to
// another node needs the node in enroll, inspecting, inspect wait or
// manageable (or maintenance) and the group without ports; a new physical
// network is given to its ports too.
func (svc *NodeRecords) UpdatePortgroup(ctx context.Context, ident string, apply func(pg *model.Portgroup) error) (*model.Portgroup, error) {
	c := svc.c
	pg, err := c.store.Ports().GetPortgroup(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Missing("Portgroup", ident)
	} else if err != nil {
		return nil, err
	}
	t, err := c.acquireNode(ctx, pg.NodeUUID, "", false)
	if err != nil {
		return nil, err
	}
	defer t.release()
	if pg, err = c.store.Ports().GetPortgroup(ctx, pg.UUID); err != nil {
		return nil, fault.Missing("Portgroup", ident)
	}
	cp := *pg
	if err := apply(&cp); err != nil {
		return nil, err
	}
	if cp.NodeUUID != pg.NodeUUID {
		if err := svc.checkPortgroupMove(ctx, t.node, pg, cp.NodeUUID); err != nil {
			return nil, err
		}
	}
	if err := svc.checkGroupStandalone(ctx, t.node, pg, &cp); err != nil {
		return nil, err
	}
	if err := c.store.Ports().UpdatePortgroup(ctx, &cp); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.NodeNotFound(cp.NodeUUID)
		}
		return nil, portgroupDuplicate(err)
	}
	if cp.PhysicalNetwork != pg.PhysicalNetwork {
		if err := svc.setMemberPhysnet(ctx, &cp); err != nil {
			return nil, err
		}
	}
	return &cp, nil
}

// setMemberPhysnet gives the group's ports its physical network (Ironic's
// update_portgroup_physical_network).
func (svc *NodeRecords) setMemberPhysnet(ctx context.Context, pg *model.Portgroup) error {
	c := svc.c
	ports, err := c.store.Ports().ListPorts(ctx, store.PortQuery{PortgroupUUID: pg.UUID})
	if err != nil {
		return fmt.Errorf("ports of portgroup %s: %w", pg.UUID, err)
	}
	for _, p := range ports {
		p.PhysicalNetwork = pg.PhysicalNetwork
		if err := c.store.Ports().UpdatePort(ctx, p); err != nil {
			return fmt.Errorf("physical network of port %s: %w", p.UUID, err)
		}
	}
	return nil
}

func (svc *NodeRecords) checkPortgroupMove(ctx context.Context, n *model.Node, pg *model.Portgroup, to string) error {
	c := svc.c
	if !slices.Contains(portgroupMoveStates, n.ProvisionState) && !n.Maintenance {
		return fault.New(fault.Conflict, "Portgroup %s can not be associated to node %s unless the node is in a %s state or in maintenance mode. Current state is '%s'.",
			pg.UUID, n.UUID, strings.Join(portgroupMoveStates, ", "), n.ProvisionState)
	}
	ports, err := c.store.Ports().ListPorts(ctx, store.PortQuery{PortgroupUUID: pg.UUID, Limit: 1})
	if err != nil {
		return fmt.Errorf("ports of portgroup %s: %w", pg.UUID, err)
	}
	if len(ports) > 0 {
		return fault.New(fault.Invalid, "Portgroup %s can not be associated with node %s because there are ports associated with this portgroup.",
			pg.UUID, n.UUID)
	}
	if _, err := c.getNode(ctx, to); err != nil {
		return err
	}
	return nil
}

// DeletePortgroup removes a portgroup without ports under its node's lock.
// Errors: fault NotFound, Conflict (locked), Invalid (it has ports).
func (svc *NodeRecords) DeletePortgroup(ctx context.Context, ident string) error {
	c := svc.c
	pg, err := c.store.Ports().GetPortgroup(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Portgroup", ident)
	} else if err != nil {
		return err
	}
	t, err := c.acquireNode(ctx, pg.NodeUUID, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	ports, err := c.store.Ports().ListPorts(ctx, store.PortQuery{PortgroupUUID: pg.UUID, Limit: 1})
	if err != nil {
		return fmt.Errorf("ports of portgroup %s: %w", pg.UUID, err)
	}
	if len(ports) > 0 {
		return fault.New(fault.Invalid, "Cannot complete the requested action because portgroup %s contains ports.", pg.UUID)
	}
	if err := c.store.Ports().DeletePortgroup(ctx, pg.UUID); errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Portgroup", ident)
	} else if err != nil {
		return err
	}
	return nil
}

// standaloneConflict is Ironic's port_changed / portgroup_changed check for
// nodes on the flat network: a port in a group without standalone port
// support may be neither PXE-enabled nor hold a VIF. It checks port p
// (old is its stored version, nil for none) against its group g.
func standaloneConflict(n *model.Node, g *model.Portgroup, old, p *model.Port) error {
	if n.Interfaces.Network != "flat" || g == nil || g.StandalonePortsSupported {
		return nil
	}
	vif := portLike{port: p}.vif()
	changed := old == nil || old.PXEEnabled != p.PXEEnabled || old.PortgroupUUID != p.PortgroupUUID
	if !changed && vif == "" {
		return nil
	}
	var reasons []string
	if p.PXEEnabled {
		reasons = append(reasons, "'pxe_enabled' was set to True")
	}
	if vif != "" {
		reasons = append(reasons, "VIF "+vif+" is attached to the port")
	}
	if len(reasons) == 0 {
		return nil
	}
	return fault.New(fault.Conflict, "Port group %s doesn't support standalone ports. This port %s cannot be  a member of that port group because of: %s",
		g.UUID, p.UUID, strings.Join(reasons, ", "))
}

// checkGroupStandalone refuses to turn standalone port support off while a
// member port is PXE-enabled or holds a VIF (flat network).
func (svc *NodeRecords) checkGroupStandalone(ctx context.Context, n *model.Node, old, g *model.Portgroup) error {
	c := svc.c
	if n.Interfaces.Network != "flat" || g.StandalonePortsSupported || !old.StandalonePortsSupported {
		return nil
	}
	ports, err := c.store.Ports().ListPorts(ctx, store.PortQuery{PortgroupUUID: g.UUID})
	if err != nil {
		return fmt.Errorf("ports of portgroup %s: %w", g.UUID, err)
	}
	for _, p := range ports {
		var reasons []string
		if p.PXEEnabled {
			reasons = append(reasons, "'pxe_enabled' is set to True")
		}
		if vif := (portLike{port: p}).vif(); vif != "" {
			reasons = append(reasons, "VIF "+vif+" is attached to this port")
		}
		if len(reasons) > 0 {
			return fault.New(fault.Conflict, "standalone_ports_supported can not be set to False, because the port group %s contains port with %s",
				g.UUID, strings.Join(reasons, ", "))
		}
	}
	return nil
}
