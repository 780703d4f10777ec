package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// portgroupListParams are the query parameters of GET /v1/portgroups/detail;
// the plain list also takes fields and detail.
var portgroupListParams = []string{"node", "address", "marker", "limit", "sort_key", "sort_dir",
	"shard", "conductor_groups"}

// unsortablePortgroupKeys are the fields Ironic refuses to sort on.
var unsortablePortgroupKeys = []string{"extra", "internal_info", "properties"}

func (hs portgroupAPI) portgroupRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listPortgroups, systemOnly("baremetal:portgroup:list_all")},
		"POST": {hs.createPortgroup, systemOnly("baremetal:portgroup:create")}}, "/v1/portgroups")
	s.handle(endpoint{"GET": {hs.listPortgroupsDetail, systemOnly("baremetal:portgroup:list_all")}}, "/v1/portgroups/detail")
	s.handle(endpoint{"GET": {hs.getPortgroup, systemOnly("baremetal:portgroup:get")},
		"PATCH":  {hs.patchPortgroup, systemOnly("baremetal:portgroup:update")},
		"DELETE": {hs.deletePortgroup, systemOnly("baremetal:portgroup:delete")}},
		"/v1/portgroups/{pg}")
	s.handle(endpoint{"GET": {hs.listPortgroupPorts, systemOnly("baremetal:portgroup:get", "baremetal:port:list_all")}}, "/v1/portgroups/{pg}/ports")
	s.handle(endpoint{"GET": {hs.listPortgroupPortsDetail, systemOnly("baremetal:portgroup:get", "baremetal:port:list_all")}}, "/v1/portgroups/{pg}/ports/detail")
	s.handle(endpoint{"GET": {hs.listNodePortgroups, nodeRule("baremetal:portgroup:list")}}, "/v1/nodes/{ident}/portgroups")
	s.handle(endpoint{"GET": {hs.listNodePortgroupsDetail, nodeRule("baremetal:portgroup:list")}}, "/v1/nodes/{ident}/portgroups/detail")
}

// loadPortgroup resolves the {pg} of the path to a stored portgroup.
func (hs portgroupAPI) loadPortgroup(rc *call) (*model.Portgroup, error) {
	raw := rc.r.PathValue("pg")
	ident, err := uuidOrName("portgroup", raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Nodes.Ports().GetPortgroup, ident, raw, fault.NotFoundFor("Portgroup"))
}

// checkPortgroupFields validates ?fields= for portgroups: versions, then
// names (fields newer than the request are valid names, hidden).
func (hs portgroupAPI) checkPortgroupFields(rc *call, fields []string) error {
	if fields == nil {
		return nil
	}
	if rc.minor < minorFields {
		return notAcceptable()
	}
	if (slices.Contains(fields, "mode") || slices.Contains(fields, "properties")) && rc.minor < minorPortgroupMode {
		return notAcceptable()
	}
	if slices.Contains(fields, "dynamic_portgroup") && rc.minor < minorDynamicPortgroup {
		return notAcceptable()
	}
	return checkFields(fields, fieldNames(portgroupFields))
}

// GET /v1/portgroups/{pg}
func (hs portgroupAPI) getPortgroup(rc *call) error {
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	return show(rc, false, func(fields []string) error { return hs.checkPortgroupFields(rc, fields) }, func() (*model.Portgroup, error) { return hs.loadPortgroup(rc) }, (portAPI{rc.s}).writePortgroup)
}

// POST /v1/portgroups
func (hs portgroupAPI) createPortgroup(rc *call) error {
	s := hs.s
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	v, err := rc.readCreate(true)
	if err != nil {
		return err
	}
	doc, err := validatePortgroup("portgroup", v)
	if err != nil {
		return err
	}
	nodeUUID := docString(doc["node_uuid"])
	if _, err := s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeUUID); errors.Is(err, store.ErrNotFound) {
		return invalid("%s", fault.MissingText("Node", nodeUUID))
	} else if err != nil {
		return err
	}
	if rc.minor < minorPortgroupMode && (isTruthy(doc["mode"]) || isTruthy(doc["properties"])) {
		return notAcceptable()
	}
	if name := docString(doc["name"]); name != "" && !isValidLogicalName(name) {
		return invalid("Cannot create portgroup with invalid name '%s'", name)
	}
	pg := &model.Portgroup{StandalonePortsSupported: true}
	applyPortgroupDoc(pg, doc)
	if pg.Mode == "" {
		pg.Mode = defaultPortgroupMode
	}
	if pg.UUID == "" {
		pg.UUID = uuid.NewString()
	}
	if err := s.cfg.NodeRecords.CreatePortgroup(rc.ctx, pg); err != nil {
		return err
	}
	return created(rc, pg, (portAPI{rc.s}).writePortgroup, "portgroups", pg.UUID)
}

// PATCH /v1/portgroups/{pg}
func (hs portgroupAPI) patchPortgroup(rc *call) error {
	s := hs.s
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	_, ops, err := rc.readPatch(true, nil)
	if err != nil {
		return err
	}
	cur, err := hs.loadPortgroup(rc)
	if err != nil {
		return err
	}
	if rc.minor < minorPortgroupMode && (touches(ops, "/mode") || touches(ops, "/properties")) {
		return notAcceptable()
	}
	if err := checkAllowedFields(ops, portgroupPatchAllowed); err != nil {
		return err
	}
	for _, name := range patchValues(ops, "/name") {
		if s, _ := name.(string); s != "" && !isValidLogicalName(s) {
			return invalid("Portgroup %s: Cannot change name to invalid name '%s'", rc.r.PathValue("pg"), s)
		}
	}
	return updated(rc, cur.UUID, s.cfg.NodeRecords.UpdatePortgroup, func(pg *model.Portgroup) error {
		return hs.applyPortgroupPatch(rc, pg, ops)
	}, (portAPI{rc.s}).writePortgroup)
}

// applyPortgroupPatch runs under the node lock.
func (hs portgroupAPI) applyPortgroupPatch(rc *call, pg *model.Portgroup, ops []patchOp) error {
	patched, err := (portAPI{rc.s}).patchLinked(rc, portgroupDoc(pg), pg.NodeUUID, ops)
	if err != nil {
		return err
	}
	if _, ok := patched["mode"]; !ok {
		return invalid("'mode' is a mandatory attribute and can not be removed")
	}
	if err := requireKeys(patched, "node_uuid"); err != nil {
		return err
	}
	fillRemoved(patched, portgroupProps)
	doc, err := validatePortgroup("patch", patched)
	if err != nil {
		return err
	}
	if n, err := (portAPI{rc.s}).inspectingNode(rc, docString(doc["node_uuid"])); err != nil {
		return err
	} else if n != nil {
		return fault.New(fault.Conflict, "Cannot update portgroup \"%s\" on node \"%s\" while it is in state \"%s\".",
			pg.UUID, n.UUID, fsm.Inspecting)
	}
	applyPortgroupDoc(pg, doc)
	if doc["standalone_ports_supported"] == nil {
		pg.StandalonePortsSupported = true
	}
	return nil
}

// DELETE /v1/portgroups/{pg}
func (hs portgroupAPI) deletePortgroup(rc *call) error {
	s := hs.s
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	return rc.remove(loaded(func() (*model.Portgroup, error) { return hs.loadPortgroup(rc) }, func(pg *model.Portgroup) string { return pg.UUID }),
		s.cfg.NodeRecords.DeletePortgroup)
}

func (hs portgroupAPI) listPortgroups(rc *call) error {
	return hs.portgroupList(rc, false, "")
}
func (hs portgroupAPI) listPortgroupsDetail(rc *call) error {
	return hs.portgroupList(rc, true, "")
}
func (hs portgroupAPI) listNodePortgroups(rc *call) error {
	return hs.portgroupList(rc, false, rc.r.PathValue("ident"))
}
func (hs portgroupAPI) listNodePortgroupsDetail(rc *call) error {
	return hs.portgroupList(rc, true, rc.r.PathValue("ident"))
}

// portgroupList serves GET /v1/portgroups[/detail] and
// /v1/nodes/{node}/portgroups[/detail].
func (hs portgroupAPI) portgroupList(rc *call, detailPath bool, parentNode string) error {
	if rc.minor < minorPortgroups || (parentNode != "" && rc.minor < minorPortgroupSub) {
		return errNotFound()
	}
	allowed := portgroupListParams
	if !detailPath {
		allowed = append(slices.Clone(portgroupListParams), "fields", "detail")
	}
	p, err := rc.pagePrelude(allowed...)
	if err != nil {
		return err
	}
	q, keep, link, err := hs.portgroupSelection(rc, parentNode)
	if err != nil {
		return err
	}
	if err := hs.checkPortgroupListPage(rc, &p); err != nil {
		return err
	}
	pgs, err := scan(p, func(key, dir, marker string, n int) ([]*model.Portgroup, error) {
		q.SortKey, q.SortDir, q.Marker, q.Limit = key, dir, marker, n
		return rc.s.cfg.Nodes.Ports().ListPortgroups(rc.ctx, q)
	}, func(pg *model.Portgroup) string { return pg.UUID }, keep)
	if err != nil {
		return err
	}
	return hs.writePortgroupList(rc, pgs, p, link, detailPath, parentNode)
}

func (hs portgroupAPI) checkPortgroupListPage(rc *call, p *page) error {
	if err := hs.checkPortgroupFields(rc, p.fields); err != nil {
		return err
	}
	if err := hs.checkPortgroupFields(rc, []string{p.sortKey}); err != nil && fault.KindOf(err) == fault.NotAcceptable {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, rc.s.cfg.Nodes.Ports().GetPortgroup, fault.NotFoundFor("Portgroup")); err != nil {
		return err
	}
	return checkSortKey(p.sortKey, unsortablePortgroupKeys, store.PortgroupSortKeys)
}

// portgroupSelection parses the portgroup filters: node, address, shard
// (1.106) and conductor_groups (1.99), at most one of them.
func (hs portgroupAPI) portgroupSelection(rc *call, parentNode string) (store.PortgroupQuery, []func(*model.Portgroup) bool, [][2]string, error) {
	var (
		q    store.PortgroupQuery
		keep []func(*model.Portgroup) bool
		link [][2]string
	)
	node, hasNode := rc.param("node")
	if parentNode != "" {
		node, hasNode = parentNode, true
	}
	addr, hasAddr := rc.param("address")
	rawShard, hasShard := rc.param("shard")
	if hasShard && rc.minor < minorPortgroupShard {
		return q, nil, nil, fault.New(fault.NotAcceptable, "Request not acceptable. The minimal required API version should be 1.%d", minorPortgroupShard)
	}
	rawGroups, hasGroups := rc.param("conductor_groups")
	if hasGroups && rc.minor < minorConductorGroups {
		return q, nil, nil, notAcceptable()
	}
	shards, groups := stringList(rawShard), stringList(rawGroups)
	count := 0
	for _, set := range []bool{hasNode && node != "", hasAddr && addr != "", len(shards) > 0, len(groups) > 0} {
		if set {
			count++
		}
	}
	if count > 1 {
		return q, nil, nil, invalid("Filtering by node, address, or shard simultaneously is not supported.")
	}
	switch {
	case hasNode && node != "":
		if !isUUIDLike(node) && !isValidLogicalName(node) {
			return q, nil, nil, invalid("Expected UUID or name for node: %s", node)
		}
		n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeIdentForLookup(node))
		if errors.Is(err, store.ErrNotFound) {
			return q, nil, nil, fault.NodeNotFound(node)
		} else if err != nil {
			return q, nil, nil, err
		}
		q.NodeUUID = n.UUID
		if parentNode == "" {
			link = append(link, [2]string{"node", node})
		}
	case hasAddr && addr != "":
		mac, ok := normalizeMAC(addr)
		if !ok {
			return q, nil, nil, invalid("Expected valid MAC address for address: %s", addr)
		}
		q.Address = mac
		link = append(link, [2]string{"address", addr})
	case len(shards) > 0:
		keep = append(keep, hs.portgroupNodeFilter(rc, func(n *model.Node) bool {
			return slices.Contains(shards, strings.ToLower(n.Shard))
		}))
		link = append(link, [2]string{"shard", rawShard})
	case len(groups) > 0:
		keep = append(keep, hs.portgroupNodeFilter(rc, func(n *model.Node) bool {
			return slices.Contains(groups, strings.ToLower(n.ConductorGroup))
		}))
		link = append(link, [2]string{"conductor_groups", rawGroups})
	}
	return q, keep, link, nil
}

// portgroupNodeFilter keeps portgroups whose node matches, reading each
// node once.
func (hs portgroupAPI) portgroupNodeFilter(rc *call, match func(n *model.Node) bool) func(*model.Portgroup) bool {
	byNode := (portAPI{rc.s}).portNodeFilter(rc, match)
	return func(pg *model.Portgroup) bool { return byNode(&model.Port{NodeUUID: pg.NodeUUID}) }
}

// writePortgroupList renders {"portgroups": [...], "next": ...}.
// (the next link repeats the fields written, and detail as given).
func (hs portgroupAPI) writePortgroupList(rc *call, pgs []*model.Portgroup, p page, link [][2]string, detailPath bool, parentNode string) error {
	fields := p.shown(briefPortgroupFields, detailPath)
	parent := ""
	if parentNode != "" {
		parent = "nodes/" + pathEscape(parentNode)
	}
	return writeList(rc, "portgroups", pgs, p.limit, 256,
		func(w *jw, pg *model.Portgroup) { (portAPI{rc.s}).writePortgroup(rc, w, pg, fields) },
		func(last *model.Portgroup) string {
			return rc.nextLink(listPath(parent, "portgroups", detailPath), p.nextQuery(p.pyDetail(), link, fields),
				p.limit, last.UUID)
		})
}

// GET /v1/portgroups/{pg}/ports[/detail] (1.24).
func (hs portgroupAPI) listPortgroupPorts(rc *call) error {
	return hs.portgroupPorts(rc, false)
}
func (hs portgroupAPI) listPortgroupPortsDetail(rc *call) error {
	return hs.portgroupPorts(rc, true)
}

func (hs portgroupAPI) portgroupPorts(rc *call, detail bool) error {
	s := hs.s
	if rc.minor < minorPortgroupSub {
		return errNotFound()
	}
	return (portAPI{s}).portListIn(rc, detail, "", rc.r.PathValue("pg"))
}
