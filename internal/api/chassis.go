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

func (hs recordAPI) chassisRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listChassis, rule("baremetal:chassis:get")}, "POST": {hs.createChassis, rule("baremetal:chassis:create")}}, "/v1/chassis")
	s.handle(endpoint{"GET": {hs.listChassisDetail, rule("baremetal:chassis:get")}}, "/v1/chassis/detail")
	s.handle(endpoint{"GET": {hs.getChassis, rule("baremetal:chassis:get")},
		"PATCH":  {hs.patchChassis, rule("baremetal:chassis:update")},
		"DELETE": {hs.deleteChassis, rule("baremetal:chassis:delete")}}, "/v1/chassis/{ident}")
	s.handle(endpoint{"GET": {func(rc *call) error { return hs.chassisNodes(rc, false) }, chassisNodes}}, "/v1/chassis/{ident}/nodes")
	s.handle(endpoint{"GET": {func(rc *call) error { return hs.chassisNodes(rc, true) }, chassisNodes}}, "/v1/chassis/{ident}/nodes/detail")
}

func (hs recordAPI) writeChassis(rc *call, w *jw, c *model.Chassis, fields []string) {
	writeDoc(w, rc, c, chassisFields, fields)
}

// chassisIdent reads the chassis UUID of the path (Ironic's args.uuid).
func (hs recordAPI) chassisIdent(rc *call) (string, error) {
	return uuidArg("chassis_uuid", rc.r.PathValue("ident"))
}

func (hs recordAPI) loadChassis(rc *call) (*model.Chassis, error) {
	id, err := hs.chassisIdent(rc)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Catalog.Chassis().GetChassis, id, id, fault.NotFoundFor("Chassis"))
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

func (hs recordAPI) listChassis(rc *call) error       { return hs.chassisList(rc, false) }
func (hs recordAPI) listChassisDetail(rc *call) error { return hs.chassisList(rc, true) }

// GET /v1/chassis and /v1/chassis/detail
func (hs recordAPI) chassisList(rc *call, detailPath bool) error {
	s := hs.s
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
	if err := checkMarker(rc, p.marker, s.cfg.Catalog.Chassis().GetChassis, fault.NotFoundFor("Chassis")); err != nil {
		return err
	}
	fields := p.shown([]string{"uuid", "description"}, detailPath) // DEFAULT_RETURN_FIELDS
	list, err := s.cfg.Catalog.Chassis().ListChassis(rc.ctx, store.ChassisQuery{Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, "chassis", list, p.limit, 512,
		func(w *jw, c *model.Chassis) { hs.writeChassis(rc, w, c, fields) },
		func(last *model.Chassis) string {
			return rc.nextLink(listPath("", "chassis", detailPath), p.nextParams(), p.limit, last.UUID)
		})
}

// GET /v1/chassis/{ident}
func (hs recordAPI) getChassis(rc *call) error {
	return show(rc, true, func(fields []string) error { return rc.checkShownFields(fields, fieldNames(chassisFields)) },
		func() (*model.Chassis, error) { return hs.loadChassis(rc) }, hs.writeChassis)
}

// POST /v1/chassis
func (hs recordAPI) createChassis(rc *call) error {
	s := hs.s
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
	return created(rc, c, hs.writeChassis, "chassis", c.UUID)
}

// PATCH /v1/chassis/{ident} (description and extra)
func (hs recordAPI) patchChassis(rc *call) error {
	s := hs.s
	_, ops, err := rc.readPatch(false, nil)
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, []string{"uuid", "extra", "description"}); err != nil {
		return err
	}
	cur, err := hs.loadChassis(rc)
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
	}, hs.writeChassis)
}

// DELETE /v1/chassis/{ident}
func (hs recordAPI) deleteChassis(rc *call) error {
	s := hs.s
	return rc.remove(func() (string, error) { return hs.chassisIdent(rc) }, s.cfg.Records.DeleteChassis)
}

// GET /v1/chassis/{ident}/nodes[/detail]: the node list of the chassis
// (Ironic's NodesController with from_chassis).
func (hs recordAPI) chassisNodes(rc *call, detail bool) error {
	s := hs.s
	id, err := hs.chassisIdent(rc)
	if err != nil {
		return err
	}
	rc.query["chassis_uuid"] = []string{id}
	return (nodeAPI{s}).nodeList(rc, detail)
}
