package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// portgroupListParams are the query parameters of GET /v1/portgroups/detail;
// the plain list also takes fields and detail.
var portgroupListParams = []string{"node", "address", "marker", "limit", "sort_key", "sort_dir",
	"shard", "conductor_groups"}

// unsortablePortgroupKeys are the fields Ironic refuses to sort on.
var unsortablePortgroupKeys = []string{"extra", "internal_info", "properties"}

func (s *Server) portgroupRoutes() {
	s.handle(endpoint{"GET": s.listPortgroups, "POST": s.createPortgroup}, "/v1/portgroups")
	s.handle(endpoint{"GET": s.listPortgroupsDetail}, "/v1/portgroups/detail")
	s.handle(endpoint{"GET": s.getPortgroup, "PATCH": s.patchPortgroup, "DELETE": s.deletePortgroup},
		"/v1/portgroups/{pg}")
	s.handle(endpoint{"GET": s.listPortgroupPorts}, "/v1/portgroups/{pg}/ports")
	s.handle(endpoint{"GET": s.listPortgroupPortsDetail}, "/v1/portgroups/{pg}/ports/detail")
	s.handle(endpoint{"GET": s.listNodePortgroups}, "/v1/nodes/{ident}/portgroups")
	s.handle(endpoint{"GET": s.listNodePortgroupsDetail}, "/v1/nodes/{ident}/portgroups/detail")
}

// portgroupIdent validates a portgroup identifier (args.uuid_or_name).
func portgroupIdent(raw string) (string, error) {
	if isUUIDLike(raw) {
		return canonicalUUID(raw), nil
	}
	if !isValidLogicalName(raw) {
		return "", invalid("Expected UUID or name for portgroup: %s", raw)
	}
	return raw, nil
}

// loadPortgroup resolves the {pg} of the path to a stored portgroup.
func (rc *call) loadPortgroup() (*model.Portgroup, string, error) {
	raw := rc.r.PathValue("pg")
	ident, err := portgroupIdent(raw)
	if err != nil {
		return nil, raw, err
	}
	pg, err := rc.s.cfg.Store.GetPortgroup(rc.ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, raw, conductor.PortgroupNotFound(raw)
	}
	return pg, raw, err
}

// checkPortgroupFields validates ?fields= for portgroups: versions, then
// names (fields newer than the request are valid names, hidden).
func (rc *call) checkPortgroupFields(fields []string) error {
	if fields == nil {
		return nil
	}
	if rc.minor < minorFields {
		return notAcceptable()
	}
	if (slices.Contains(fields, "mode") || slices.Contains(fields, "properties")) && rc.minor < minorPortgroupMode {
		return notAcceptable()
	}
	var bad []string
	for _, f := range fields {
		if !slices.ContainsFunc(portgroupFields, func(pf portgroupField) bool { return pf.name == f }) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
	}
	return nil
}

// GET /v1/portgroups/{pg}
func (s *Server) getPortgroup(rc *call) error {
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	pg, _, err := rc.loadPortgroup()
	if err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if err := rc.checkPortgroupFields(fields); err != nil {
		return err
	}
	w := &jw{}
	rc.writePortgroup(w, pg, fields)
	return rc.json(200, w)
}

// POST /v1/portgroups
func (s *Server) createPortgroup(rc *call) error {
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	v, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if v == nil {
		v = map[string]any{}
	}
	doc, err := validatePortgroup("portgroup", v)
	if err != nil {
		return err
	}
	nodeUUID := docString(doc["node_uuid"])
	if _, err := s.cfg.Store.GetNode(rc.ctx, nodeUUID); errors.Is(err, store.ErrNotFound) {
		return invalid("Node %s could not be found.", nodeUUID)
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
	if err := s.cfg.Conductor.CreatePortgroup(rc.ctx, pg); err != nil {
		return err
	}
	rc.w.Header().Set("Location", rc.link(false, "portgroups", pg.UUID))
	w := &jw{}
	rc.writePortgroup(w, pg, nil)
	return rc.json(201, w)
}

// PATCH /v1/portgroups/{pg}
func (s *Server) patchPortgroup(rc *call) error {
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	v, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if v == nil {
		v = map[string]any{}
	}
	ops, err := parsePatch(v, rc.minor)
	if err != nil {
		return err
	}
	cur, raw, err := rc.loadPortgroup()
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
			return invalid("Portgroup %s: Cannot change name to invalid name '%s'", raw, s)
		}
	}
	pg, err := s.cfg.Conductor.UpdatePortgroup(rc.ctx, cur.UUID, func(pg *model.Portgroup) error {
		return rc.applyPortgroupPatch(pg, ops)
	})
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writePortgroup(w, pg, nil)
	return rc.json(200, w)
}

// applyPortgroupPatch runs under the node lock.
func (rc *call) applyPortgroupPatch(pg *model.Portgroup, ops []patchOp) error {
	if vals := patchValues(ops, "/node_uuid"); len(vals) > 0 {
		if err := rc.checkPortNodeLink(vals[0], pg.NodeUUID); err != nil {
			return err
		}
	}
	patched, err := applyPatch(rc.ctx, portgroupDoc(pg), ops)
	if err != nil {
		return err
	}
	if _, ok := patched["mode"]; !ok {
		return invalid("'mode' is a mandatory attribute and can not be removed")
	}
	if _, ok := patched["node_uuid"]; !ok {
		return schemaError("patch", "'node_uuid' is a required property")
	}
	fillRemoved(patched, portgroupProps)
	doc, err := validatePortgroup("patch", patched)
	if err != nil {
		return err
	}
	n, err := rc.s.cfg.Store.GetNode(rc.ctx, docString(doc["node_uuid"]))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if n != nil && n.ProvisionState == fsm.Inspecting && rc.minor >= minorInspectWait {
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
func (s *Server) deletePortgroup(rc *call) error {
	if rc.minor < minorPortgroups {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	pg, _, err := rc.loadPortgroup()
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.DeletePortgroup(rc.ctx, pg.UUID); err != nil {
		return err
	}
	return rc.noContent()
}

func (s *Server) listPortgroups(rc *call) error       { return s.portgroupList(rc, false, "") }
func (s *Server) listPortgroupsDetail(rc *call) error { return s.portgroupList(rc, true, "") }
func (s *Server) listNodePortgroups(rc *call) error {
	return s.portgroupList(rc, false, rc.r.PathValue("ident"))
}
func (s *Server) listNodePortgroupsDetail(rc *call) error {
	return s.portgroupList(rc, true, rc.r.PathValue("ident"))
}

// portgroupList serves GET /v1/portgroups[/detail] and
// /v1/nodes/{node}/portgroups[/detail].
func (s *Server) portgroupList(rc *call, detailPath bool, parentNode string) error {
	if rc.minor < minorPortgroups || (parentNode != "" && rc.minor < minorPortgroupSub) {
		return errNotFound()
	}
	allowed := portgroupListParams
	if !detailPath {
		allowed = append(slices.Clone(portgroupListParams), "fields", "detail")
	}
	if err := rc.checkQuery(allowed...); err != nil {
		return err
	}
	p, err := rc.pageParams("id")
	if err != nil {
		return err
	}
	if err := rc.markerParam(&p); err != nil {
		return err
	}
	q, keep, link, err := rc.portgroupSelection(parentNode)
	if err != nil {
		return err
	}
	if err := rc.checkPortgroupListPage(&p); err != nil {
		return err
	}
	q.SortKey, q.SortDir = p.sortKey, p.sortDir
	pgs, err := scan(p.limit, p.marker, func(marker string, n int) ([]*model.Portgroup, error) {
		q.Marker, q.Limit = marker, n
		return rc.s.cfg.Store.ListPortgroups(rc.ctx, q)
	}, func(pg *model.Portgroup) string { return pg.UUID }, allOf(keep))
	if err != nil {
		return err
	}
	return rc.writePortgroupList(pgs, p, link, detailPath, parentNode)
}

func (rc *call) checkPortgroupListPage(p *page) error {
	if err := rc.checkPortgroupFields(p.fields); err != nil {
		return err
	}
	if err := rc.checkPortgroupFields([]string{p.sortKey}); err != nil && fault.KindOf(err) == fault.NotAcceptable {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if p.marker != "" {
		if _, err := rc.s.cfg.Store.GetPortgroup(rc.ctx, p.marker); errors.Is(err, store.ErrNotFound) {
			return conductor.PortgroupNotFound(p.marker)
		} else if err != nil {
			return err
		}
	}
	if slices.Contains(unsortablePortgroupKeys, p.sortKey) {
		return badSortKey(p.sortKey, false)
	}
	if !slices.Contains(store.PortgroupSortKeys, p.sortKey) {
		return badSortKey(p.sortKey, true)
	}
	return nil
}

// portgroupSelection parses the portgroup filters: node, address, shard
// (1.106) and conductor_groups (1.99), at most one of them.
func (rc *call) portgroupSelection(parentNode string) (store.PortgroupQuery, []func(*model.Portgroup) bool, [][2]string, error) {
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
		n, err := rc.s.cfg.Store.GetNode(rc.ctx, nodeIdentForLookup(node))
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
		keep = append(keep, rc.portgroupNodeFilter(func(n *model.Node) bool {
			return slices.Contains(shards, strings.ToLower(n.Shard))
		}))
		link = append(link, [2]string{"shard", rawShard})
	case len(groups) > 0:
		keep = append(keep, rc.portgroupNodeFilter(func(n *model.Node) bool {
			return slices.Contains(groups, strings.ToLower(n.ConductorGroup))
		}))
		link = append(link, [2]string{"conductor_groups", rawGroups})
	}
	return q, keep, link, nil
}

// portgroupNodeFilter keeps portgroups whose node matches, reading each
// node once.
func (rc *call) portgroupNodeFilter(match func(n *model.Node) bool) func(*model.Portgroup) bool {
	byNode := rc.portNodeFilter(match)
	return func(pg *model.Portgroup) bool { return byNode(&model.Port{NodeUUID: pg.NodeUUID}) }
}

// writePortgroupList renders {"portgroups": [...], "next": ...}.
func (rc *call) writePortgroupList(pgs []*model.Portgroup, p page, link [][2]string, detailPath bool, parentNode string) error {
	fields := p.fields
	full := detailPath || (p.detail != nil && *p.detail)
	if full {
		fields = nil
	} else if fields == nil {
		fields = briefPortgroupFields
	}
	w := rc.s.listWriter(256 + len(pgs)*256)
	w.rootObj()
	w.key("portgroups")
	w.arr()
	for _, pg := range pgs {
		rc.writePortgroup(w, pg, fields)
	}
	w.endArr()
	if len(pgs) > 0 && len(pgs) == p.limit {
		params := [][2]string{{"sort_key", p.sortKey}, {"sort_dir", p.sortDir}}
		if p.detail != nil {
			params = append(params, [2]string{"detail", pyrepr.Bool(*p.detail)})
		}
		params = append(params, link...)
		if !full {
			params = append(params, [2]string{"fields", strings.Join(fields, ",")})
		}
		resource := "portgroups"
		if parentNode != "" {
			resource = "nodes/" + pathEscape(parentNode) + "/portgroups"
		}
		if detailPath {
			resource += "/detail"
		}
		w.key("next")
		w.str(rc.nextLink(resource, params, p.limit, pgs[len(pgs)-1].UUID))
	}
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/portgroups/{pg}/ports[/detail] (1.24).
func (s *Server) listPortgroupPorts(rc *call) error { return s.portgroupPorts(rc, false) }
func (s *Server) listPortgroupPortsDetail(rc *call) error {
	return s.portgroupPorts(rc, true)
}

func (s *Server) portgroupPorts(rc *call, detail bool) error {
	if rc.minor < minorPortgroupSub {
		return errNotFound()
	}
	return s.portListIn(rc, detail, "", rc.r.PathValue("pg"))
}
