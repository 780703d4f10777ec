package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// Minor versions of port behaviour.
const (
	minorPortName        = 88
	minorPortNodeIdent   = 94
	minorConductorGroups = 99
	// minorDynamicPortgroup added a port's available_for_dynamic_portgroup
	// (user-editable, default true) and a portgroup's dynamic_portgroup
	// (read-only), Ironic's MINOR_111_DYNAMIC_PORTGROUP.
	minorDynamicPortgroup = 111
)

// portFields lists the port keys in Ironic's order (object_to_dict).
var portFields = []docField[model.Port]{
	{"uuid", 1, func(w *jw, _ *call, p *model.Port) { w.str(p.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, p *model.Port) { w.timestamp(p.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, p *model.Port) { w.timestamp(p.UpdatedAt) }},
	{"address", 1, func(w *jw, _ *call, p *model.Port) { w.str(p.Address) }},
	{"extra", 1, func(w *jw, _ *call, p *model.Port) { w.object(p.Extra) }},
	{"internal_info", 18, func(w *jw, _ *call, p *model.Port) { w.masked(p.InternalInfo) }},
	{"is_smartnic", 53, func(w *jw, _ *call, p *model.Port) { w.boolean(p.IsSmartNIC) }},
	{"local_link_connection", 19, func(w *jw, rc *call, p *model.Port) {
		w.object(shownLocalLink(p.LocalLinkConnection, rc.minor))
	}},
	{"physical_network", 34, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.PhysicalNetwork) }},
	{"pxe_enabled", 19, func(w *jw, _ *call, p *model.Port) { w.boolean(p.PXEEnabled) }},
	{"node_uuid", 1, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.NodeUUID) }},
	{"name", 88, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.Name) }},
	{"description", 97, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.Description) }},
	{"vendor", 100, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.Vendor) }},
	{"category", 101, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.Category) }},
	{"available_for_dynamic_portgroup", minorDynamicPortgroup, func(w *jw, _ *call, p *model.Port) {
		w.boolean(p.DynamicPortgroupAvailable())
	}},
	{"links", 1, func(w *jw, rc *call, p *model.Port) { rc.links(w, "ports", p.UUID) }},
	{"portgroup_uuid", 24, func(w *jw, _ *call, p *model.Port) { w.strOrNull(p.PortgroupUUID) }},
}

// briefPortFields are the keys of a port in a plain list.
var briefPortFields = []string{"uuid", "address"}

// portListParams are the query parameters of GET /v1/ports/detail; the
// plain list also takes fields and detail.
var portListParams = []string{"node", "node_uuid", "address", "marker", "limit", "sort_key",
	"sort_dir", "portgroup", "shard", "description_contains", "conductor_groups"}

// unsortablePortKeys are the port fields Ironic refuses to sort on.
var unsortablePortKeys = []string{"extra", "internal_info", "local_link_connection"}

func (hs portAPI) portRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listPorts, bodyRule("baremetal:port:list")}, "POST": {hs.createPort, bodyRule("baremetal:port:create")}}, "/v1/ports")
	s.handle(endpoint{"GET": {hs.listPortsDetail, bodyRule("baremetal:port:list")}}, "/v1/ports/detail")
	s.handle(endpoint{"GET": {hs.getPort, portRule("baremetal:port:get")},
		"PATCH":  {hs.patchPort, portRule("baremetal:port:update")},
		"DELETE": {hs.deletePort, portRule("baremetal:port:delete")}}, "/v1/ports/{ident}")
	s.handle(endpoint{"GET": {hs.listNodePorts, nodeRule("baremetal:port:list")}}, "/v1/nodes/{ident}/ports")
	s.handle(endpoint{"GET": {hs.listNodePortsDetail, nodeRule("baremetal:port:list")}}, "/v1/nodes/{ident}/ports/detail")
}

// writePort writes a port with the fields visible at the request version
// (all of them, or the requested subset plus links).
func (hs portAPI) writePort(rc *call, w *jw, p *model.Port, fields []string) {
	writeDoc(w, rc, p, portFields, fields)
}

// checkPortFields validates ?fields= for ports: versions, then names.
func (hs portAPI) checkPortFields(rc *call, fields []string) error {
	if fields == nil {
		return nil
	}
	if rc.minor < minorFields {
		return notAcceptable()
	}
	if err := checkPortFieldVersions(fields, rc.minor); err != nil {
		return err
	}
	return checkFields(fields, fieldNames(portFields))
}

// portIdent validates a port identifier: a UUID, or a name from 1.88.
func (hs portAPI) portIdent(rc *call, raw string) (string, error) {
	if rc.minor < minorPortName {
		return uuidArg("port_uuid", raw)
	}
	return uuidOrName("port_ident", raw)
}

// loadPort reads the port the path names.
func (hs portAPI) loadPort(rc *call) (*model.Port, error) {
	raw := rc.r.PathValue("ident")
	ident, err := hs.portIdent(rc, raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Nodes.Ports().GetPort, ident, raw, fault.NotFoundFor("Port"))
}

// GET /v1/ports/{ident}
func (hs portAPI) getPort(rc *call) error {
	return show(rc, false, func(fields []string) error { return hs.checkPortFields(rc, fields) }, func() (*model.Port, error) { return hs.loadPort(rc) }, hs.writePort)
}

// POST /v1/ports
func (hs portAPI) createPort(rc *call) error {
	s := hs.s
	v, err := rc.readCreate(true)
	if err != nil {
		return err
	}
	doc, err := validatePort("port", v)
	if err != nil {
		return err
	}
	if err := hs.resolvePortNode(rc, doc); err != nil {
		return err
	}
	if err := checkPortFieldVersions(portBodyFields(doc), rc.minor); err != nil {
		return err
	}
	_, phys := doc["physical_network"]
	if err := hs.checkPortPortgroup(rc, doc, nil); err != nil {
		return err
	}
	if err := checkPortSemantics(doc, nil, phys); err != nil {
		return err
	}
	p := &model.Port{PXEEnabled: true}
	applyPortDoc(p, doc)
	if p.UUID == "" {
		p.UUID = uuid.NewString()
	}
	if err := s.cfg.NodeRecords.CreatePort(rc.ctx, p); err != nil {
		return err
	}
	return created(rc, p, hs.writePort, "ports", p.UUID)
}

// resolvePortNode finds the node of a port to create: node_uuid, or from
// 1.94 node_ident (a UUID or a name). The body then names it by UUID. An
// unknown node is a 400 naming what the client sent (Ironic names
// node_uuid, so it says "Node None" for an unknown node_ident).
func (hs portAPI) resolvePortNode(rc *call, doc map[string]any) error {
	ident, _ := doc["node_ident"].(string)
	if ident != "" && rc.minor < minorPortNodeIdent {
		return notAcceptable()
	}
	if ident == "" { // Ironic treats an empty node_ident as absent
		ident, _ = doc["node_uuid"].(string)
	}
	switch {
	case isUUIDLike(ident):
		ident = canonicalUUID(ident)
	case !isValidLogicalName(ident):
		return invalid("Expected a logical name or UUID but received %s.", pyrepr.Str(nilIfEmpty(ident)))
	}
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return invalid("%s", fault.MissingText("Node", ident))
	} else if err != nil {
		return err
	}
	if err := rc.authorize(n, "baremetal:port:create"); fault.KindOf(err) == fault.NotFound {
		return invalid("%s", fault.MissingText("Node", ident)) // as if absent: no existence oracle
	} else if err != nil {
		return err
	}
	delete(doc, "node_ident")
	doc["node_uuid"] = n.UUID
	return nil
}

// PATCH /v1/ports/{ident}
func (hs portAPI) patchPort(rc *call) error {
	s := hs.s
	ident, ops, err := rc.readPatch(true, func() (string, error) { return hs.portIdent(rc, rc.r.PathValue("ident")) })
	if err != nil {
		return err
	}
	if err := hs.checkPortPatch(rc, ops); err != nil {
		return err
	}
	return updated(rc, ident, s.cfg.NodeRecords.UpdatePort, func(p *model.Port) error {
		return hs.applyPortPatch(rc, p, ops)
	}, hs.writePort)
}

// checkPortPatch runs the checks that need no port: allowed fields and
// the version of every field the patch sets or removes.
func (hs portAPI) checkPortPatch(rc *call, ops []patchOp) error {
	if err := checkAllowedFields(ops, portPatchAllowed); err != nil {
		return err
	}
	var touched []string
	for f := range portFieldMinor {
		if touches(ops, "/"+f) {
			touched = append(touched, f)
		}
	}
	if err := checkPortFieldVersions(touched, rc.minor); err != nil {
		return err
	}
	return nil
}

// applyPortPatch runs under the node lock.
func (hs portAPI) applyPortPatch(rc *call, p *model.Port, ops []patchOp) error {
	patched, err := hs.patchLinked(rc, portDoc(p), p.NodeUUID, ops)
	if err != nil {
		return err
	}
	if err := requireKeys(patched, "address", "node_uuid"); err != nil {
		return err
	}
	fillRemoved(patched, portProps)
	delete(patched, "node_ident")
	doc, err := validatePort("patch", patched)
	if err != nil {
		return err
	}
	if err := hs.checkPortPortgroup(rc, doc, p); err != nil {
		return err
	}
	if err := checkPortSemantics(doc, p, touches(ops, "/physical_network")); err != nil {
		return err
	}
	if n, err := hs.inspectingNode(rc, docString(doc["node_uuid"])); err != nil {
		return err
	} else if n != nil {
		return fault.New(fault.Conflict, "Cannot update port \"%s\" on \"%s\" while it is in state \"%s\".",
			p.UUID, n.UUID, fsm.Inspecting)
	}
	applyPortDoc(p, doc)
	return nil
}

// patchLinked applies ops to doc, the document of a port or portgroup on
// node from; a node_uuid the patch sets must pass checkPortNodeLink first.
func (hs portAPI) patchLinked(rc *call, doc map[string]any, from string, ops []patchOp) (map[string]any, error) {
	if vals := patchValues(ops, "/node_uuid"); len(vals) > 0 {
		if err := hs.checkPortNodeLink(rc, vals[0], from); err != nil {
			return nil, err
		}
	}
	return applyPatch(rc.ctx, doc, ops)
}

// requireKeys is the schema's check that a patched document kept its
// required properties.
func requireKeys(doc map[string]any, keys ...string) error {
	for _, k := range keys {
		if _, ok := doc[k]; !ok {
			return schemaError("patch", "'%s' is a required property", k)
		}
	}
	return nil
}

// inspectingNode is the node uuid names (that of a port or portgroup
// being updated) when it is inspecting and the version makes the update
// wait for that (inspectWaits); nil otherwise or when there is none.
func (hs portAPI) inspectingNode(rc *call, uuid string) (*model.Node, error) {
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if !(nodeAPI{rc.s}).inspectWaits(rc, n.ProvisionState) {
		return nil, nil
	}
	return n, nil
}

// checkPortNodeLink is Ironic's authorize_node_link for a port, portgroup,
// volume connector or target moved from node from to node v: v must name
// an existing node with the same owner (one answer for both, so as not to
// tell whether the node exists).
func (hs portAPI) checkPortNodeLink(rc *call, v any, from string) error {
	s, _ := v.(string)
	bad := invalid("Unable to apply the requested node_uuid '%s'. Requested value was invalid.", pyrepr.Str(v))
	if !isUUIDLike(s) {
		return bad
	}
	to, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, canonicalUUID(s))
	if errors.Is(err, store.ErrNotFound) {
		return bad
	} else if err != nil {
		return err
	}
	if rc.scoped() && !rc.allowed("baremetal:node:get", nodeTarget(to)) {
		return bad // a node the principal may not see is as good as none
	}
	orig, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, from)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if orig != nil && orig.Owner != to.Owner {
		return bad
	}
	return nil
}

// DELETE /v1/ports/{ident}
func (hs portAPI) deletePort(rc *call) error {
	s := hs.s
	return rc.remove(func() (string, error) { return uuidArg("port_uuid", rc.r.PathValue("ident")) },
		s.cfg.NodeRecords.DeletePort)
}

func (hs portAPI) listPorts(rc *call) error       { return hs.portListIn(rc, false, "", "") }
func (hs portAPI) listPortsDetail(rc *call) error { return hs.portListIn(rc, true, "", "") }
func (hs portAPI) listNodePorts(rc *call) error {
	return hs.portListIn(rc, false, rc.r.PathValue("ident"), "")
}
func (hs portAPI) listNodePortsDetail(rc *call) error {
	return hs.portListIn(rc, true, rc.r.PathValue("ident"), "")
}

// checkPortPortgroup checks the portgroup a port joins: it must exist and
// belong to the port's node.
func (hs portAPI) checkPortPortgroup(rc *call, doc map[string]any, old *model.Port) error {
	pgUUID, _ := doc["portgroup_uuid"].(string)
	if pgUUID == "" || (old != nil && pgUUID == old.PortgroupUUID && docString(doc["node_uuid"]) == old.NodeUUID) {
		return nil
	}
	pg, err := rc.s.cfg.Nodes.Ports().GetPortgroup(rc.ctx, pgUUID)
	if errors.Is(err, store.ErrNotFound) {
		return invalid("%s", fault.MissingText("Portgroup", pgUUID))
	} else if err != nil {
		return err
	}
	if pg.NodeUUID != docString(doc["node_uuid"]) {
		return invalid("Port can not be added to a portgroup belonging to a different node.")
	}
	return nil
}

// portSelection is a parsed port list request.
type portSelection struct {
	q    store.PortQuery
	keep []func(*model.Port) bool
	link [][2]string
}

// portListIn serves GET /v1/ports[/detail], /v1/nodes/{node}/ports[/detail]
// and /v1/portgroups/{pg}/ports[/detail].
func (hs portAPI) portListIn(rc *call, detailPath bool, parentNode, parentPG string) error {
	allowed := portListParams
	if !detailPath {
		allowed = append(slices.Clone(portListParams), "fields", "detail")
	}
	p, err := rc.pagePrelude(allowed...)
	if err != nil {
		return err
	}
	sel, err := hs.portSelection(rc, parentNode, parentPG)
	if err != nil {
		return err
	}
	if err := hs.checkPortListPage(rc, &p); err != nil {
		return err
	}
	ports, err := hs.fetchPorts(rc, &sel, p)
	if err != nil {
		return err
	}
	parent := ""
	switch {
	case parentNode != "":
		parent = "nodes/" + pathEscape(parentNode)
	case parentPG != "":
		parent = "portgroups/" + pathEscape(parentPG)
	}
	return hs.writePortList(rc, ports, p, sel, detailPath, parent)
}

func (hs portAPI) checkPortListPage(rc *call, p *page) error {
	if err := hs.checkPortFields(rc, p.fields); err != nil {
		return err
	}
	if err := checkPortFieldVersions([]string{p.sortKey}, rc.minor); err != nil {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, rc.s.cfg.Nodes.Ports().GetPort, fault.NotFoundFor("Port")); err != nil {
		return err
	}
	return checkSortKey(p.sortKey, unsortablePortKeys, store.PortSortKeys)
}

// portSelection parses the port filters with their checks.
func (hs portAPI) portSelection(rc *call, parentNode, parentPG string) (portSelection, error) {
	var sel portSelection
	node, hasNode := rc.param("node")
	if parentNode != "" {
		node, hasNode = parentNode, true
	}
	if hasNode && !isUUIDLike(node) && !isValidLogicalName(node) {
		return sel, invalid("Expected UUID or name for node: %s", node)
	}
	nodeUUID, err := rc.uuidParam("node_uuid")
	if err != nil {
		return sel, err
	}
	if err := hs.portAddressFilter(rc, &sel); err != nil {
		return sel, err
	}
	if err := hs.portOtherFilters(rc, &sel, parentPG, hasNode || nodeUUID != "", sel.q.Address != ""); err != nil {
		return sel, err
	}
	if parentNode != "" {
		nodeUUID = "" // the path's node wins over ?node_uuid=, as Ironic's parent_node_ident
	}
	if nodeUUID == "" && hasNode {
		if !isUUIDLike(node) && rc.minor < minorNodeName {
			return sel, notAcceptable()
		}
		nodeUUID = node
		if parentNode == "" {
			sel.link = append(sel.link, [2]string{"node", node})
		}
	} else if nodeUUID != "" {
		sel.link = append(sel.link, [2]string{"node_uuid", nodeUUID})
	}
	top := parentNode == "" && parentPG == "" // GET /v1/ports: authorized here
	if nodeUUID != "" {
		n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeIdentForLookup(nodeUUID))
		if errors.Is(err, store.ErrNotFound) {
			return sel, fault.NodeNotFound(nodeUUID)
		} else if err != nil {
			return sel, err
		}
		if top {
			if err := rc.authorize(n, "baremetal:port:list"); err != nil {
				return sel, err
			}
		}
		sel.q.NodeUUID = n.UUID
	} else if top && rc.scoped() && !rc.allowed("baremetal:port:list_all", nil) {
		return sel, fault.New(fault.Forbidden, "A project-scoped token lists the ports of one node: add ?node=<node>.")
	} else if top {
		rc.auth.pending = false
	}
	return sel, nil
}

func nodeIdentForLookup(s string) string {
	if isUUIDLike(s) {
		return canonicalUUID(s)
	}
	return s
}

func (hs portAPI) portAddressFilter(rc *call, sel *portSelection) error {
	addr, ok := rc.param("address")
	if !ok {
		return nil
	}
	mac, valid := normalizeMAC(addr)
	if !valid {
		return invalid("Expected valid MAC address for address: %s", addr)
	}
	sel.q.Address = mac
	sel.link = append(sel.link, [2]string{"address", mac})
	return nil
}

func (hs portAPI) portOtherFilters(rc *call, sel *portSelection, parentPG string, byNode, byAddress bool) error {
	pg, byPortgroup := rc.param("portgroup")
	if parentPG != "" {
		pg, byPortgroup = parentPG, true
	}
	if byPortgroup && parentPG == "" {
		if rc.minor < minorPortgroupSub {
			return notAcceptable()
		}
		if !isUUIDLike(pg) && !isValidLogicalName(pg) {
			return invalid("Expected UUID or name for portgroup: %s", pg)
		}
	}
	rawGroups, byGroups := rc.param("conductor_groups")
	if byGroups && rc.minor < minorConductorGroups {
		return notAcceptable()
	}
	rawShard, byShard := rc.param("shard")
	if byShard {
		if rc.minor < 82 {
			return minVersionRequired(82)
		}
		if byNode || byPortgroup {
			return invalid("Operation not permitted.")
		}
	}
	groups := stringList(rawGroups)
	if len(groups) > 0 && (byNode || byPortgroup || byAddress) {
		return invalid("Filtering by conductor_groups cannot be combined with node_ident, portgroup_ident, or node address filters.")
	}
	if byPortgroup && byNode && !byShard {
		return invalid("Operation not permitted.")
	}
	if byPortgroup {
		got, err := rc.s.cfg.Nodes.Ports().GetPortgroup(rc.ctx, nodeIdentForLookup(pg))
		if errors.Is(err, store.ErrNotFound) {
			return fault.Missing("Portgroup", pg)
		} else if err != nil {
			return err
		}
		sel.q.PortgroupUUID = got.UUID
		if parentPG == "" {
			sel.link = append(sel.link, [2]string{"portgroup", pg})
		}
	}
	switch {
	case byShard:
		// Ironic lists by shard and ignores conductor_groups then.
		hs.portShardFilter(rc, sel, rawShard)
	case len(groups) > 0:
		hs.portGroupFilter(rc, sel, groups)
		sel.link = append(sel.link, [2]string{"conductor_groups", rawGroups})
	}
	if v, ok := rc.param("description_contains"); ok {
		sel.keep = append(sel.keep, func(p *model.Port) bool { return strings.Contains(p.Description, v) })
		sel.link = append(sel.link, [2]string{"description_contains", v})
	}
	return nil
}

// stringList is Ironic's args.string_list: comma separated, blanks
// trimmed, lower-cased, empty items and duplicates dropped.
func stringList(raw string) []string {
	var out []string
	for _, s := range strings.Split(raw, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// portShardFilter keeps ports whose node is in one of the shards.
func (hs portAPI) portShardFilter(rc *call, sel *portSelection, raw string) {
	shards := stringList(raw)
	sel.keep = append(sel.keep, hs.portNodeFilter(rc, func(n *model.Node) bool {
		return slices.Contains(shards, strings.ToLower(n.Shard))
	}))
	sel.link = append(sel.link, [2]string{"shard", raw})
}

// portGroupFilter keeps ports whose node is in one of the conductor
// groups (1.99).
func (hs portAPI) portGroupFilter(rc *call, sel *portSelection, groups []string) {
	sel.keep = append(sel.keep, hs.portNodeFilter(rc, func(n *model.Node) bool {
		return slices.Contains(groups, strings.ToLower(n.ConductorGroup))
	}))
}

// portNodeFilter keeps ports whose node matches, reading each node once.
func (hs portAPI) portNodeFilter(rc *call, match func(n *model.Node) bool) func(*model.Port) bool {
	cache := map[string]bool{}
	return func(p *model.Port) bool {
		in, ok := cache[p.NodeUUID]
		if !ok {
			n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, p.NodeUUID)
			in = err == nil && match(n)
			cache[p.NodeUUID] = in
		}
		return in
	}
}

// fetchPorts reads one page, scanning past ports the store cannot filter.
func (hs portAPI) fetchPorts(rc *call, sel *portSelection, p page) ([]*model.Port, error) {
	q := sel.q
	return scan(p, func(key, dir, marker string, n int) ([]*model.Port, error) {
		q.SortKey, q.SortDir, q.Marker, q.Limit = key, dir, marker, n
		return rc.s.cfg.Nodes.Ports().ListPorts(rc.ctx, q)
	}, func(p *model.Port) string { return p.UUID }, sel.keep)
}

// writePortList renders {"ports": [...], "next": ...}.
// (the next link repeats the fields written, and detail as given).
func (hs portAPI) writePortList(rc *call, ports []*model.Port, p page, sel portSelection, detailPath bool, parent string) error {
	fields := p.shown(briefPortFields, detailPath)
	return writeList(rc, "ports", ports, p.limit, 256, func(w *jw, port *model.Port) { hs.writePort(rc, w, port, fields) },
		func(last *model.Port) string {
			return rc.nextLink(listPath(parent, "ports", detailPath), p.nextQuery(p.pyDetail(), sel.link, fields),
				p.limit, last.UUID)
		})
}
