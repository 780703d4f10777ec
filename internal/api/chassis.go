package api

import (
	"errors"
	"slices"

	"github.com/anvil-metal/anvil/internal/conductor"
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
var chassisFields = []string{"uuid", "created_at", "updated_at", "description", "extra", "links", "nodes"}

func (s *Server) chassisRoutes() {
	s.handle(endpoint{"GET": s.listChassis, "POST": s.createChassis}, "/v1/chassis")
	s.handle(endpoint{"GET": s.listChassisDetail}, "/v1/chassis/detail")
	s.handle(endpoint{"GET": s.getChassis, "PATCH": s.patchChassis, "DELETE": s.deleteChassis}, "/v1/chassis/{ident}")
	s.handle(endpoint{"GET": func(rc *call) error { return s.chassisNodes(rc, false) }}, "/v1/chassis/{ident}/nodes")
	s.handle(endpoint{"GET": func(rc *call) error { return s.chassisNodes(rc, true) }}, "/v1/chassis/{ident}/nodes/detail")
}

func (rc *call) writeChassis(w *jw, c *model.Chassis, fields []string) {
	w.obj()
	for _, f := range chassisFields {
		if fields != nil && f != "links" && !slices.Contains(fields, f) {
			continue
		}
		w.key(f)
		switch f {
		case "uuid":
			w.str(c.UUID)
		case "created_at":
			w.timestamp(c.CreatedAt)
		case "updated_at":
			w.timestamp(c.UpdatedAt)
		case "description":
			w.strOrNull(c.Description)
		case "extra":
			w.object(c.Extra)
		case "links":
			rc.links(w, "chassis", c.UUID)
		case "nodes":
			rc.links(w, "chassis", c.UUID, "nodes")
		}
	}
	w.endObj()
}

// chassisIdent reads the chassis UUID of the path (Ironic's args.uuid).
func (rc *call) chassisIdent() (string, error) {
	raw := rc.r.PathValue("ident")
	if !isUUIDLike(raw) {
		return "", invalid("Expected UUID for chassis_uuid: %s", raw)
	}
	return canonicalUUID(raw), nil
}

func (rc *call) loadChassis() (*model.Chassis, error) {
	id, err := rc.chassisIdent()
	if err != nil {
		return nil, err
	}
	c, err := rc.s.cfg.Store.GetChassis(rc.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, conductor.ChassisNotFound(id)
	}
	return c, err
}

// validateChassis checks a body against CHASSIS_SCHEMA and the uuid validator.
func validateChassis(what string, v any) (*model.Chassis, error) {
	doc, err := validateObject(what, v, chassisProps)
	if err != nil {
		return nil, err
	}
	c := &model.Chassis{Description: docString(doc["description"]), Extra: docMap(doc["extra"])}
	if u, ok := doc["uuid"].(string); ok {
		if !isUUIDLike(u) {
			return nil, invalid("Expected UUID for uuid: %s", u)
		}
		c.UUID = canonicalUUID(u)
	}
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
	if err := checkFields(p.fields, chassisFields); err != nil {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if p.sortKey == "extra" {
		return badSortKey(p.sortKey, false)
	}
	if !slices.Contains(store.ChassisSortKeys, p.sortKey) {
		return badSortKey(p.sortKey, true)
	}
	if p.marker != "" {
		if _, err := s.cfg.Store.GetChassis(rc.ctx, p.marker); errors.Is(err, store.ErrNotFound) {
			return conductor.ChassisNotFound(p.marker)
		} else if err != nil {
			return err
		}
	}
	fields := p.fields
	if fields == nil && !detailPath && (p.detail == nil || !*p.detail) {
		fields = []string{"uuid", "description"} // DEFAULT_RETURN_FIELDS
	}
	list, err := s.cfg.Store.ListChassis(rc.ctx, store.ChassisQuery{Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	w := rc.s.listWriter(256 + len(list)*512)
	w.rootObj()
	w.key("chassis")
	w.arr()
	for _, c := range list {
		rc.writeChassis(w, c, fields)
	}
	w.endArr()
	if len(list) > 0 && len(list) == p.limit {
		params := p.nextParams()
		resource := "chassis"
		if detailPath {
			resource = "chassis/detail"
		}
		w.key("next")
		w.str(rc.nextLink(resource, params, p.limit, list[len(list)-1].UUID))
	}
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/chassis/{ident}
func (s *Server) getChassis(rc *call) error {
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if fields != nil && rc.minor < minorFields {
		return notAcceptable()
	}
	if err := checkFields(fields, chassisFields); err != nil {
		return err
	}
	c, err := rc.loadChassis()
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writeChassis(w, c, fields)
	return rc.json(200, w)
}

// POST /v1/chassis
func (s *Server) createChassis(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	c, err := validateChassis("chassis", body)
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.CreateChassis(rc.ctx, c); err != nil {
		return err
	}
	rc.w.Header().Set("Location", rc.link(false, "chassis", c.UUID))
	w := &jw{}
	rc.writeChassis(w, c, nil)
	return rc.json(201, w)
}

// PATCH /v1/chassis/{ident} (description and extra)
func (s *Server) patchChassis(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	v, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	ops, err := parsePatch(v, rc.minor)
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
	c, err := s.cfg.Conductor.UpdateChassis(rc.ctx, cur.UUID, func(c *model.Chassis) error {
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
	})
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writeChassis(w, c, nil)
	return rc.json(200, w)
}

// DELETE /v1/chassis/{ident}
func (s *Server) deleteChassis(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	id, err := rc.chassisIdent()
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.DeleteChassis(rc.ctx, id); err != nil {
		return err
	}
	return rc.noContent()
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
