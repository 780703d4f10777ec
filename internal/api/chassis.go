package api

import (
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// chassisProps is Ironic's CHASSIS_SCHEMA, in its property order.
var chassisProps = []nodeProp{
	{name: "uuid", types: tStr},
	{name: "extra", types: tObj},
	{name: "description", types: tStr, maxLen: 255},
}

// chassisFields are the keys of a chassis document in Ironic's order
// (object_to_dict with description and extra, links, then nodes).
var chassisFields = []docField[model.Chassis]{
	{"uuid", 1, func(w *jw, _ *call, c *model.Chassis) { w.str(c.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, c *model.Chassis) { w.timestamp(c.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, c *model.Chassis) { w.timestamp(c.UpdatedAt) }},
	{"description", 1, func(w *jw, _ *call, c *model.Chassis) { w.strOrNull(c.Description) }},
	{"extra", 1, func(w *jw, _ *call, c *model.Chassis) { w.object(c.Extra) }},
	{"links", 1, func(w *jw, rc *call, c *model.Chassis) { rc.links(w, "chassis", c.UUID) }},
	{"nodes", 1, func(w *jw, rc *call, c *model.Chassis) { rc.links(w, "chassis", c.UUID, "nodes") }},
}

func (s *Server) chassisRoutes() {
	s.handle(endpoint{"GET": {s.listChassis, rule("baremetal:chassis:get")}, "POST": {s.createChassis, rule("baremetal:chassis:create")}}, "/v1/chassis")
	s.handle(endpoint{"GET": {s.listChassisDetail, rule("baremetal:chassis:get")}}, "/v1/chassis/detail")
	s.handle(endpoint{"GET": {s.getChassis, rule("baremetal:chassis:get")},
		"PATCH":  {s.patchChassis, rule("baremetal:chassis:update")},
		"DELETE": {s.deleteChassis, rule("baremetal:chassis:delete")}}, "/v1/chassis/{ident}")
	s.handle(endpoint{"GET": {func(rc *call) error { return s.chassisNodes(rc, false) }, chassisNodes}}, "/v1/chassis/{ident}/nodes")
	s.handle(endpoint{"GET": {func(rc *call) error { return s.chassisNodes(rc, true) }, chassisNodes}}, "/v1/chassis/{ident}/nodes/detail")
}

func (rc *call) writeChassis(w *jw, c *model.Chassis, fields []string) {
	writeDoc(w, rc, c, chassisFields, fields)
}

// chassisIdent reads the chassis UUID of the path (Ironic's args.uuid).
func (rc *call) chassisIdent() (string, error) {
	return uuidArg("chassis_uuid", rc.r.PathValue("ident"))
}

func (rc *call) loadChassis() (*model.Chassis, error) {
	id, err := rc.chassisIdent()
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Catalog.GetChassis, id, id, fault.NotFoundFor("Chassis"))
}

// validateChassis checks a body against CHASSIS_SCHEMA and the uuid validator.
func validateChassis(what string, v any) (*model.Chassis, error) {
	doc, err := validateObject(what, v, chassisProps)
	if err != nil {
		return nil, err
	}
	c := &model.Chassis{Description: docString(doc["description"]), Extra: docMap(doc["extra"])}
	if err := docUUIDs(doc, "uuid"); err != nil {
		return nil, err
	}
	c.UUID = docString(doc["uuid"])
	return c, nil
}

func (s *Server) listChassis(rc *call) error       { return s.chassisList(rc, false) }
func (s *Server) listChassisDetail(rc *call) error { return s.chassisList(rc, true) }

// GET /v1/chassis and /v1/chassis/detail
func (s *Server) chassisList(rc *call, detailPath bool) error {
	allowed := []string{"marker", "limit", "sort_key", "sort_dir"}
	if !detailPath {
		allowed = append(allowed, "fields", "detail")
	}
	p, err := rc.pagePrelude(allowed...)
	if err != nil {
		return err
	}
	if err := checkFields(p.fields, fieldNames(chassisFields)); err != nil {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if err := checkSortKey(p.sortKey, []string{"extra"}, store.ChassisSortKeys); err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, s.cfg.Catalog.GetChassis, fault.NotFoundFor("Chassis")); err != nil {
		return err
	}
	fields := p.shown([]string{"uuid", "description"}, detailPath) // DEFAULT_RETURN_FIELDS
	list, err := s.cfg.Catalog.ListChassis(rc.ctx, store.ChassisQuery{Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, "chassis", list, p.limit, 512,
		func(w *jw, c *model.Chassis) { rc.writeChassis(w, c, fields) },
		func(last *model.Chassis) string {
			return rc.nextLink(listPath("", "chassis", detailPath), p.nextParams(), p.limit, last.UUID)
		})
}

// GET /v1/chassis/{ident}
func (s *Server) getChassis(rc *call) error {
	return show(rc, true, func(fields []string) error { return rc.checkShownFields(fields, fieldNames(chassisFields)) },
		rc.loadChassis, (*call).writeChassis)
}

// POST /v1/chassis
func (s *Server) createChassis(rc *call) error {
	body, err := rc.readCreate(false)
	if err != nil {
		return err
	}
	c, err := validateChassis("chassis", body)
	if err != nil {
		return err
	}
	if err := s.cfg.Records.CreateChassis(rc.ctx, c); err != nil {
		return err
	}
	return created(rc, c, (*call).writeChassis, "chassis", c.UUID)
}

// PATCH /v1/chassis/{ident} (description and extra)
func (s *Server) patchChassis(rc *call) error {
	_, ops, err := rc.readPatch(false, nil)
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, []string{"uuid", "extra", "description"}); err != nil {
		return err
	}
	cur, err := rc.loadChassis()
	if err != nil {
		return err
	}
	return updated(rc, cur.UUID, s.cfg.Records.UpdateChassis, func(c *model.Chassis) error {
		doc := map[string]any{"uuid": c.UUID, "extra": orEmpty(c.Extra), "description": nilIfEmpty(c.Description)}
		patched, err := applyPatch(rc.ctx, doc, ops)
		if err != nil {
			return err
		}
		nc, err := validateChassis("patch", patched)
		if err != nil {
			return err
		}
		if nc.UUID != c.UUID {
			return invalid("Cannot overwrite UUID for an existing Chassis.")
		}
		c.Description, c.Extra = nc.Description, nc.Extra
		return nil
	}, (*call).writeChassis)
}

// DELETE /v1/chassis/{ident}
func (s *Server) deleteChassis(rc *call) error {
	return rc.remove(rc.chassisIdent, s.cfg.Records.DeleteChassis)
}

// GET /v1/chassis/{ident}/nodes[/detail]: the node list of the chassis
// (Ironic's NodesController with from_chassis).
func (s *Server) chassisNodes(rc *call, detail bool) error {
	id, err := rc.chassisIdent()
	if err != nil {
		return err
	}
	rc.query["chassis_uuid"] = []string{id}
	return s.nodeList(rc, detail)
}
