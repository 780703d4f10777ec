package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// validFaults are Ironic's node faults (ironic/common/faults.py).
var validFaults = []string{"power failure", "clean failure", "rescue abort failure", "service failure"}

// filterFault is the ?fault= filter: one of validFaults.
func filterFault(_ *call, sel *nodeSelection, v string) error {
	if !slices.Contains(validFaults, v) {
		return invalid("Unrecognized fault \"%s\" is specified, allowed faults are %s", v, pyrepr.StringTuple(validFaults))
	}
	sel.q.Fault = v
	return nil
}

// nodeListParams are the query parameters of GET /v1/nodes/detail (the
// node field table's filters and these); the plain list also takes fields
// and detail.
var nodeListParams = func() []string {
	params := []string{"chassis_uuid", "instance_uuid", "associated", "maintenance",
		"retired", "provision_state", "marker", "limit", "sort_key", "sort_dir",
		"description_contains", "project", "shard", "sharded", "include_children", "parent_node", "instance_name"}
	for _, f := range nodeFields.filters {
		params = append(params, f.name)
	}
	return params
}()

// nodeSelection is a parsed node list request.
type nodeSelection struct {
	q      store.NodeQuery
	keep   []func(*model.Node) bool // filters the store cannot apply
	link   [][2]string              // filters repeated in the next link
	noNext bool                     // instance_uuid lists never page
}

func (hs nodeAPI) listNodes(rc *call) error       { return hs.nodeList(rc, false) }
func (hs nodeAPI) listNodesDetail(rc *call) error { return hs.nodeList(rc, true) }

// GET /v1/nodes and /v1/nodes/detail
func (hs nodeAPI) nodeList(rc *call, detailPath bool) error {
	allowed := nodeListParams
	if !detailPath {
		allowed = append(slices.Clone(nodeListParams), "fields", "detail")
	}
	p, sel, nodes, err := hs.nodePage(rc, allowed, nil, func(p page) []string {
		fields, _ := shownNodeFields(p, detailPath) // nil when full
		return fields
	})
	if err != nil {
		return err
	}
	return hs.writeNodeList(rc, nodes, p, sel, detailPath)
}

// shownNodeFields are the fields a node list writes: every field (full) on
// /v1/nodes/detail or with detail=True, else those asked for or the brief
// ones.
func shownNodeFields(p page, detailPath bool) (fields []string, full bool) {
	if detailPath || (p.detail != nil && *p.detail) {
		return nil, true
	}
	if p.fields == nil {
		return briefNodeFields, false
	}
	return p.fields, false
}

// nodePage reads a page of a node list: the query against allowed, the
// paging parameters, the filters (nodeSelection's, then more's when
// given), the page checks, in Ironic's order; then the nodes. shown, when
// given, names the fields the page will write (nil: whole nodes).
func (hs nodeAPI) nodePage(rc *call, allowed []string, more func(*nodeSelection) error, shown func(page) []string) (page, nodeSelection, []*model.Node, error) {
	p, err := rc.pagePrelude(allowed...)
	if err != nil {
		return p, nodeSelection{}, nil, err
	}
	if err := hs.checkNodeFieldVersions(rc, p); err != nil {
		return p, nodeSelection{}, nil, err
	}
	sel, err := hs.nodeSelection(rc)
	if err != nil {
		return p, sel, nil, err
	}
	if more != nil {
		if err := more(&sel); err != nil {
			return p, sel, nil, err
		}
	}
	if err := hs.checkNodeListPage(rc, &p); err != nil {
		return p, sel, nil, err
	}
	if shown != nil && len(sel.keep) == 0 && rc.redact == nil {
		// Only these fields are written, and nothing else reads the nodes:
		// the store may read them from their columns.
		sel.q.Only = shown(p)
	}
	nodes, err := hs.fetchNodes(rc, &sel, p)
	return p, sel, nodes, err
}

// checkNodeFieldVersions gates the requested fields and the sort key on
// the version (406), as Ironic does before anything else.
func (hs nodeAPI) checkNodeFieldVersions(rc *call, p page) error {
	for _, f := range p.fields {
		if fieldMinor(f) > rc.minor {
			return notAcceptable()
		}
	}
	if fieldMinor(p.sortKey) > rc.minor {
		return notAcceptable()
	}
	return nil
}

// checkNodeListPage runs the paging checks in Ironic's order.
func (hs nodeAPI) checkNodeListPage(rc *call, p *page) error {
	if err := p.check(rc); err != nil {
		return err
	}
	if p.fields != nil {
		if err := hs.checkNodeFields(rc, p.fields); err != nil {
			return err
		}
	}
	if nodeFields.unsortable(p.sortKey) {
		return badSortKey(p.sortKey, false)
	}
	if !slices.Contains(store.NodeSortKeys, p.sortKey) {
		return badSortKey(p.sortKey, true)
	}
	if p.marker != "" {
		if _, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, p.marker); errors.Is(err, store.ErrNotFound) {
			return fault.NodeNotFound(p.marker)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// nodeSelection parses the filters, with their version gates.
func (hs nodeAPI) nodeSelection(rc *call) (nodeSelection, error) {
	var sel nodeSelection
	steps := []func(*nodeSelection) error{
		func(sel *nodeSelection) error { return hs.nodeFilterIdentity(rc, sel) }, func(sel *nodeSelection) error { return hs.nodeFilterBools(rc, sel) }, func(sel *nodeSelection) error { return hs.nodeFilterState(rc, sel) },
		func(sel *nodeSelection) error { return hs.nodeFilterStrings(rc, sel) }, func(sel *nodeSelection) error { return hs.nodeFilterFamily(rc, sel) },
	}
	for _, step := range steps {
		if err := step(&sel); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

func (hs nodeAPI) nodeFilterIdentity(rc *call, sel *nodeSelection) error {
	chassis, err := rc.uuidParam("chassis_uuid")
	if err != nil {
		return err
	}
	if chassis != "" {
		// Ironic's node query looks the chassis up first: 404 when unknown.
		if _, err := rc.s.cfg.Catalog.Chassis().GetChassis(rc.ctx, chassis); errors.Is(err, store.ErrNotFound) {
			return fault.Missing("Chassis", chassis)
		} else if err != nil {
			return err
		}
		sel.q.ChassisUUID = chassis
		sel.link = append(sel.link, [2]string{"chassis_uuid", chassis})
	}
	inst, err := rc.uuidParam("instance_uuid")
	if err != nil {
		return err
	}
	if inst != "" {
		sel.q.InstanceUUID = inst
		sel.noNext = true
	}
	return nil
}

func (hs nodeAPI) nodeFilterBools(rc *call, sel *nodeSelection) error {
	for _, name := range []string{"associated", "maintenance", "retired"} {
		b, err := rc.boolParam(name)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		sel.link = append(sel.link, [2]string{name, pyrepr.Bool(*b)})
		switch name {
		case "associated":
			sel.q.Associated = b
		case "maintenance":
			sel.q.Maintenance = b
		default:
			want := *b
			sel.keep = append(sel.keep, func(n *model.Node) bool { return n.Retired == want })
		}
	}
	return nil
}

func (hs nodeAPI) nodeFilterState(rc *call, sel *nodeSelection) error {
	ps, ok := rc.param("provision_state")
	if !ok {
		return nil
	}
	if rc.minor < 9 {
		return notAcceptable()
	}
	if !fsm.IsState(ps) {
		return invalid("Provision state \"%s\" is not valid", ps)
	}
	sel.q.ProvisionState = ps
	sel.link = append(sel.link, [2]string{"provision_state", ps})
	return nil
}

// nodeFilterStrings handles the plain string filters (the node field
// table's, node_fields.go) with their gates.
func (hs nodeAPI) nodeFilterStrings(rc *call, sel *nodeSelection) error {
	for _, f := range nodeFields.filters {
		v, ok := rc.param(f.name)
		if !ok {
			continue
		}
		if rc.minor < f.filter {
			return minVersionRequired(f.filter)
		}
		if err := f.where(rc, sel, v); err != nil {
			return err
		}
		sel.link = append(sel.link, [2]string{f.name, v})
	}
	if v, ok := rc.param("project"); ok {
		sel.q.Project = v // owner or lessee, in the store's query (so counted)
		sel.link = append(sel.link, [2]string{"project", v})
	}
	if v, ok := rc.param("description_contains"); ok {
		sel.keep = append(sel.keep, func(n *model.Node) bool { return strings.Contains(n.Description, v) })
		sel.link = append(sel.link, [2]string{"description_contains", v})
	}
	return nil
}

// nodeFilterFamily handles shards, child nodes and instance names.
func (hs nodeAPI) nodeFilterFamily(rc *call, sel *nodeSelection) error {
	if err := hs.nodeFilterShard(rc, sel); err != nil {
		return err
	}
	if name, ok := rc.param("instance_name"); ok {
		if rc.minor < minorInstanceName {
			return fault.New(fault.NotAcceptable, "instance_name is not acceptable in this API version")
		}
		// An exact match, as Ironic's SQL filter: an empty value (SQL
		// '' is not NULL) matches no node.
		sel.keep = append(sel.keep, func(n *model.Node) bool { return name != "" && n.InstanceName == name })
		sel.link = append(sel.link, [2]string{"instance_name", name})
	}
	children, err := rc.boolParam("include_children")
	if err != nil {
		return err
	}
	parent, hasParent := rc.param("parent_node")
	if (children != nil || hasParent) && rc.minor < 83 {
		return minVersionRequired(83)
	}
	switch {
	case children != nil && *children:
		sel.link = append(sel.link, [2]string{"include_children", "True"})
	case hasParent:
		sel.q.ParentNode = &parent
		sel.link = append(sel.link, [2]string{"parent_node", parent})
	default:
		noParent := ""
		sel.q.ParentNode = &noParent
	}
	return nil
}

func (hs nodeAPI) nodeFilterShard(rc *call, sel *nodeSelection) error {
	raw, hasShard := rc.param("shard")
	sharded, err := rc.boolParam("sharded")
	if err != nil {
		return err
	}
	if (hasShard || sharded != nil) && rc.minor < 82 {
		return minVersionRequired(82)
	}
	if hasShard {
		var shards []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
				shards = append(shards, s)
			}
		}
		sel.keep = append(sel.keep, func(n *model.Node) bool { return slices.Contains(shards, strings.ToLower(n.Shard)) })
		sel.link = append(sel.link, [2]string{"shard", raw})
	}
	if sharded != nil {
		want := *sharded
		sel.keep = append(sel.keep, func(n *model.Node) bool { return (n.Shard != "") == want })
		sel.link = append(sel.link, [2]string{"sharded", pyrepr.Bool(want)})
	}
	return nil
}

// fetchNodes reads one page; filters the store cannot apply are applied
// while scanning forward, so pages stay full and markers stay valid.
func (hs nodeAPI) fetchNodes(rc *call, sel *nodeSelection, p page) ([]*model.Node, error) {
	q := sel.q
	return scan(p, func(key, dir, marker string, n int) ([]*model.Node, error) {
		q.SortKey, q.SortDir, q.Marker, q.Limit = key, dir, marker, n
		return rc.s.cfg.Nodes.Nodes().ListNodes(rc.ctx, q)
	}, func(n *model.Node) string { return n.UUID }, sel.keep)
}

// writeNodeList renders {"nodes": [...], "next": ...}.
func (hs nodeAPI) writeNodeList(rc *call, nodes []*model.Node, p page, sel nodeSelection, detailPath bool) error {
	fields, full := shownNodeFields(p, detailPath)
	plan := rc.nodePlan(fields)
	w := rc.s.listWriter(256 + len(nodes)*len(plan)*48)
	w.rootObj()
	w.key("nodes")
	w.arr()
	for _, n := range nodes {
		rc.writeNode(w, n, plan)
	}
	w.endArr()
	if len(nodes) > 0 && len(nodes) == p.limit && !sel.noNext {
		params := [][2]string{{"sort_key", p.sortKey}, {"sort_dir", p.sortDir}}
		params = append(params, sel.link...)
		if p.detail != nil {
			params = append(params, [2]string{"detail", pyrepr.Bool(*p.detail)})
		}
		if !full {
			params = append(params, [2]string{"fields", strings.Join(fields, ",")})
		}
		resource := "nodes"
		if detailPath {
			resource = "nodes/detail"
		}
		w.key("next")
		w.str(rc.nextLink(resource, params, p.limit, nodes[len(nodes)-1].UUID))
	}
	w.endObj()
	return rc.json(200, w)
}
