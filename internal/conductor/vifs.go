package conductor

import (
	"context"
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// TenantVIFKey is the internal_info key of a port or portgroup that holds
// the tenant VIF attached to it (Ironic's tenant_vif_port_id).
const TenantVIFKey = "tenant_vif_port_id"

// VIFs follow the node's network interface, as in Ironic: "noop" attaches
// nothing and lists nothing; "flat" (Ironic's VIF port ID semantics, without
// Neutron: every port's physical network is acceptable) records the VIF in
// the internal_info of a free portgroup or port of the node.

// VIFRequest is the body of POST /v1/nodes/{node}/vifs.
type VIFRequest struct {
	ID            string
	PortUUID      string // attach to this port (1.67)
	PortgroupUUID string // attach to this portgroup (1.67)
}

// portLike is a port or a portgroup a VIF can be attached to.
type portLike struct {
	port  *model.Port
	group *model.Portgroup
}

func (p portLike) info() model.JSON {
	if p.group != nil {
		return p.group.InternalInfo
	}
	return p.port.InternalInfo
}

func (p portLike) vif() string {
	v, _ := p.info()[TenantVIFKey].(string)
	return v
}

// nodePorts reads every port and portgroup of a node, in id order.
func (svc *NodeRecords) nodePorts(ctx context.Context, node string) ([]*model.Port, []*model.Portgroup, error) {
	c := svc.c
	ports, err := c.store.Ports().ListPorts(ctx, store.PortQuery{NodeUUID: node})
	if err != nil {
		return nil, nil, fmt.Errorf("ports of node %s: %w", node, err)
	}
	groups, err := c.store.Ports().ListPortgroups(ctx, store.PortgroupQuery{NodeUUID: node})
	if err != nil {
		return nil, nil, fmt.Errorf("portgroups of node %s: %w", node, err)
	}
	return ports, groups, nil
}

// ListVIFs lists the VIFs attached to a node: ports first, then portgroups.
func (svc *NodeRecords) ListVIFs(ctx context.Context, ident string) ([]string, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	if n.Interfaces.Network == "noop" {
		return []string{}, nil
	}
	ports, groups, err := svc.nodePorts(ctx, n.UUID)
	if err != nil {
		return nil, err
	}
	vifs := []string{}
	for _, pl := range portLikes(ports, groups) {
		if v := pl.vif(); v != "" {
			vifs = append(vifs, v)
		}
	}
	return vifs, nil
}

func portLikes(ports []*model.Port, groups []*model.Portgroup) []portLike {
	out := make([]portLike, 0, len(ports)+len(groups))
	for _, p := range ports {
		out = append(out, portLike{port: p})
	}
	for _, g := range groups {
		out = append(out, portLike{group: g})
	}
	return out
}

// AttachVIF attaches a VIF to a free port or portgroup of the node, under
// its lock. Errors: fault NotFound, Conflict (locked, or the VIF is already
// attached), Invalid (no free port or portgroup).
func (svc *NodeRecords) AttachVIF(ctx context.Context, ident string, req VIFRequest) error {
	c := svc.c
	t, err := c.acquireNode(ctx, ident, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	if t.node.Interfaces.Network == "noop" {
		return nil
	}
	ports, groups, err := svc.nodePorts(ctx, t.node.UUID)
	if err != nil {
		return err
	}
	target, err := freePortLike(ports, groups, req)
	if err != nil {
		return err
	}
	if target.group != nil {
		g := *target.group
		g.InternalInfo = withKey(g.InternalInfo, TenantVIFKey, req.ID)
		return c.store.Ports().UpdatePortgroup(ctx, &g)
	}
	p := *target.port
	p.InternalInfo = withKey(p.InternalInfo, TenantVIFKey, req.ID)
	return c.store.Ports().UpdatePort(ctx, &p)
}

func withKey(m model.JSON, k string, v any) model.JSON {
	out := make(model.JSON, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// freePortLike is Ironic's get_free_port_like_object without physical
// networks: portgroups with free ports before ports, PXE-enabled ports
// before the others, then the order of creation.
func freePortLike(ports []*model.Port, groups []*model.Portgroup, req VIFRequest) (portLike, error) {
	var free []portLike
	byGroup := map[string][]*model.Port{}
	unusable := map[string]bool{}
	for _, p := range ports {
		if req.PortUUID != "" && req.PortUUID != p.UUID {
			continue
		}
		if err := checkAttached(portLike{port: p}, req.ID); err != nil {
			return portLike{}, err
		}
		switch {
		case portLike{port: p}.vif() != "":
			unusable[p.PortgroupUUID] = true
		case p.PortgroupUUID == "" && req.PortgroupUUID == "":
			free = append(free, portLike{port: p})
		default:
			byGroup[p.PortgroupUUID] = append(byGroup[p.PortgroupUUID], p)
		}
	}
	if req.PortUUID == "" {
		for _, g := range groups {
			if req.PortgroupUUID != "" && req.PortgroupUUID != g.UUID {
				continue
			}
			if err := checkAttached(portLike{group: g}, req.ID); err != nil {
				return portLike{}, err
			}
			switch {
			case portLike{group: g}.vif() != "":
			case unusable[g.UUID]:
				if req.PortgroupUUID == "" {
					for _, p := range byGroup[g.UUID] {
						free = append(free, portLike{port: p})
					}
				}
			case len(byGroup[g.UUID]) > 0:
				free = append(free, portLike{group: g})
			}
		}
	}
	if len(free) == 0 {
		return portLike{}, fault.New(fault.Invalid, "Unable to attach VIF %s, not enough free physical ports.", req.ID)
	}
	rank := func(pl portLike) int {
		switch {
		case pl.group != nil:
			return 2
		case pl.port.PXEEnabled:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(free, func(a, b portLike) int { return rank(b) - rank(a) })
	return free[0], nil
}

// checkAttached is Ironic's _vif_attached: the VIF on this port-like
// object already is a conflict.
func checkAttached(pl portLike, vif string) error {
	if pl.vif() != vif {
		return nil
	}
	if pl.group != nil {
		return fault.New(fault.Conflict, "Unable to attach VIF because VIF %s is already attached to Ironic Portgroup %s", vif, pl.group.UUID)
	}
	return fault.New(fault.Conflict, "Unable to attach VIF because VIF %s is already attached to Ironic Port %s", vif, pl.port.UUID)
}

// DetachVIF detaches a VIF from the node's portgroup or port holding it,
// under the node's lock: tenant_vif_port_id leaves its internal_info and
// vif_port_id its extra. Errors: fault NotFound, Conflict (locked),
// Invalid (not attached).
func (svc *NodeRecords) DetachVIF(ctx context.Context, ident, vif string) error {
	c := svc.c
	t, err := c.acquireNode(ctx, ident, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	if t.node.Interfaces.Network == "noop" {
		return nil
	}
	ports, groups, err := svc.nodePorts(ctx, t.node.UUID)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if pl := (portLike{group: g}); pl.vif() == vif {
			return svc.clearVIF(ctx, pl)
		}
	}
	for _, p := range ports {
		if pl := (portLike{port: p}); pl.vif() == vif {
			return svc.clearVIF(ctx, pl)
		}
	}
	return fault.New(fault.Invalid, "Unable to detach VIF %s from node %s because it is not attached to it.", vif, t.node.UUID)
}

// removeVIFs detaches every tenant VIF of a node (Ironic's
// remove_vifs_from_node, run by tear down).
func (svc *NodeRecords) removeVIFs(ctx context.Context, n *model.Node) error {
	if n.Interfaces.Network == "noop" {
		return nil
	}
	ports, groups, err := svc.nodePorts(ctx, n.UUID)
	if err != nil {
		return err
	}
	for _, pl := range portLikes(ports, groups) {
		if pl.vif() != "" {
			if err := svc.clearVIF(ctx, pl); err != nil {
				return err
			}
		}
	}
	return nil
}

// clearVIF detaches the tenant VIF of a port or portgroup: it leaves
// internal_info's tenant_vif_port_id and extra's vif_port_id (Ironic's
// _clear_vif_from_port_like_obj).
func (svc *NodeRecords) clearVIF(ctx context.Context, pl portLike) error {
	c := svc.c
	if pl.group != nil {
		cp := *pl.group
		cp.InternalInfo = withKey(cp.InternalInfo, TenantVIFKey, nil)
		cp.Extra = withKey(cp.Extra, "vif_port_id", nil)
		if err := c.store.Ports().UpdatePortgroup(ctx, &cp); err != nil {
			return fmt.Errorf("portgroup %s: %w", cp.UUID, err)
		}
		return nil
	}
	cp := *pl.port
	cp.InternalInfo = withKey(cp.InternalInfo, TenantVIFKey, nil)
	cp.Extra = withKey(cp.Extra, "vif_port_id", nil)
	if err := c.store.Ports().UpdatePort(ctx, &cp); err != nil {
		return fmt.Errorf("port %s: %w", cp.UUID, err)
	}
	return nil
}
