package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// Minor versions of allocation behaviour.
const (
	minorAllocations        = 52
	minorAllocationUpdate   = 57
	minorAllocationBackfill = 58
	minorAllocationOwner    = 60
)

// allocationProps is Ironic's ALLOCATION_SCHEMA, in its property order.
var allocationProps = []nodeProp{
	{name: "candidate_nodes", types: []string{"array", "null"}},
	{name: "extra", types: tObj},
	{name: "name", types: tStr},
	{name: "node", types: tStr},
	{name: "owner", types: tStr},
	{name: "resource_class", types: tStr, maxLen: 80},
	{name: "traits", types: []string{"array", "null"}},
	{name: "uuid", types: tStr},
}

// allocationField is one key of the allocation document.
type allocationField struct {
	name  string
	minor int
	write func(w *jw, rc *call, a *model.Allocation)
}

// allocationFields lists the allocation keys in Ironic's order
// (object_to_dict, links, then node_uuid).
var allocationFields = []allocationField{
	{"uuid", 1, func(w *jw, _ *call, a *model.Allocation) { w.str(a.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, a *model.Allocation) { w.timestamp(a.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, a *model.Allocation) { w.timestamp(a.UpdatedAt) }},
	{"candidate_nodes", 1, func(w *jw, _ *call, a *model.Allocation) { w.strings(nonNilStrings(a.CandidateNodes)) }},
	{"extra", 1, func(w *jw, _ *call, a *model.Allocation) { w.object(a.Extra) }},
	{"last_error", 1, func(w *jw, _ *call, a *model.Allocation) { w.strOrNull(a.LastError) }},
	{"name", 1, func(w *jw, _ *call, a *model.Allocation) { w.strOrNull(a.Name) }},
	{"owner", minorAllocationOwner, func(w *jw, _ *call, a *model.Allocation) { w.strOrNull(a.Owner) }},
	{"resource_class", 1, func(w *jw, _ *call, a *model.Allocation) { w.strOrNull(a.ResourceClass) }},
	{"state", 1, func(w *jw, _ *call, a *model.Allocation) { w.str(a.State) }},
	{"traits", 1, func(w *jw, _ *call, a *model.Allocation) { w.strings(nonNilStrings(a.Traits)) }},
	{"links", 1, func(w *jw, rc *call, a *model.Allocation) { rc.links(w, "allocations", a.UUID) }},
	{"node_uuid", 1, func(w *jw, _ *call, a *model.Allocation) { w.strOrNull(a.NodeUUID) }},
}

// allocationListParams are the query parameters of GET /v1/allocations.
var allocationListParams = []string{"node", "resource_class", "state", "owner", "marker", "limit",
	"sort_key", "sort_dir", "fields"}

// unsortableAllocationKeys are the fields Ironic refuses to sort on.
var unsortableAllocationKeys = []string{"extra", "candidate_nodes", "traits"}

func (s *Server) allocationRoutes() {
	s.handle(endpoint{"GET": s.listAllocations, "POST": s.createAllocation}, "/v1/allocations")
	s.handle(endpoint{"GET": s.getAllocation, "PATCH": s.patchAllocation, "DELETE": s.deleteAllocation},
		"/v1/allocations/{alloc}")
	s.handle(endpoint{"GET": s.getNodeAllocation, "DELETE": s.deleteNodeAllocation}, "/v1/nodes/{ident}/allocation")
}

// allocationsTooOld is Ironic's answer below 1.52 (webob's, like a
// routing error): 404 to read, 405 to write.
func allocationsTooOld(status fault.Kind, text string) error {
	return fault.New(status, "%s", text).AsRouting()
}

// noAllocations is Ironic's text for allocations below 1.52.
const noAllocations = "The API version does not allow allocations"

func (rc *call) allocationsAllowed(write bool) error {
	if rc.minor >= minorAllocations {
		return nil
	}
	if write {
		return allocationsTooOld(fault.NotAllowed, noAllocations)
	}
	return allocationsTooOld(fault.NotFound, noAllocations)
}

// writeAllocation writes an allocation with the fields visible at the
// request version (all, or the requested subset plus links).
func (rc *call) writeAllocation(w *jw, a *model.Allocation, fields []string) {
	w.obj()
	for i := range allocationFields {
		f := &allocationFields[i]
		if f.minor > rc.minor || (fields != nil && f.name != "links" && !slices.Contains(fields, f.name)) {
			continue
		}
		w.key(f.name)
		f.write(w, rc, a)
	}
	w.endObj()
}

// checkAllocationFields validates ?fields= (owner needs 1.60).
func (rc *call) checkAllocationFields(fields []string) error {
	if fields == nil {
		return nil
	}
	if slices.Contains(fields, "owner") && rc.minor < minorAllocationOwner {
		return notAcceptable()
	}
	var bad []string
	for _, f := range fields {
		if !slices.ContainsFunc(allocationFields, func(af allocationField) bool { return af.name == f }) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
	}
	return nil
}

func allocationIdent(raw string) (string, error) {
	if isUUIDLike(raw) {
		return canonicalUUID(raw), nil
	}
	if !isValidLogicalName(raw) {
		return "", invalid("Expected UUID or name for allocation_ident: %s", raw)
	}
	return raw, nil
}

func (rc *call) loadAllocation() (*model.Allocation, string, error) {
	raw := rc.r.PathValue("alloc")
	ident, err := allocationIdent(raw)
	if err != nil {
		return nil, raw, err
	}
	a, err := rc.s.cfg.Store.GetAllocation(rc.ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, raw, conductor.AllocationNotFound(raw)
	}
	return a, raw, err
}

// GET /v1/allocations/{alloc}
func (s *Server) getAllocation(rc *call) error {
	if err := rc.allocationsAllowed(false); err != nil {
		return err
	}
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	a, _, err := rc.loadAllocation()
	if err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if err := rc.checkAllocationFields(fields); err != nil {
		return err
	}
	w := &jw{}
	rc.writeAllocation(w, a, fields)
	return rc.json(200, w)
}

// POST /v1/allocations
func (s *Server) createAllocation(rc *call) error {
	if err := rc.allocationsAllowed(true); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if body == nil {
		body = map[string]any{}
	}
	doc, err := validateAllocation("allocation", body)
	if err != nil {
		return err
	}
	if _, ok := doc["owner"]; ok && rc.minor < minorAllocationOwner {
		return notAcceptable()
	}
	a := &model.Allocation{}
	a.Name, a.Owner, a.ResourceClass = docString(doc["name"]), docString(doc["owner"]), docString(doc["resource_class"])
	a.UUID, a.Extra = docString(doc["uuid"]), docMap(doc["extra"])
	a.Traits = docStrings(doc["traits"])
	if a.Name != "" && !isValidLogicalName(a.Name) {
		return invalid("Cannot create allocation with invalid name '%s'", a.Name)
	}
	var node *model.Node
	if ident := docString(doc["node"]); ident != "" {
		if rc.minor < minorAllocationBackfill {
			return invalid("Cannot set node when creating an allocation in this API version")
		}
		node, err = s.cfg.Store.GetNode(rc.ctx, nodeIdentForLookup(ident))
		if errors.Is(err, store.ErrNotFound) {
			return invalid("Node %s could not be found.", ident)
		} else if err != nil {
			return err
		}
	}
	if a.ResourceClass == "" {
		if node == nil {
			return invalid("The resource_class field is mandatory when not backfilling")
		}
		a.ResourceClass = node.ResourceClass
	}
	if a.CandidateNodes, err = rc.candidateNodes(docStrings(doc["candidate_nodes"])); err != nil {
		return err
	}
	if a.UUID == "" {
		if node != nil && node.InstanceUUID != "" {
			a.UUID = node.InstanceUUID
		} else {
			a.UUID = uuid.NewString()
		}
	}
	backfill := ""
	if node != nil {
		backfill = node.UUID
	}
	if err := s.cfg.Conductor.CreateAllocation(rc.ctx, a, backfill); err != nil {
		return err
	}
	rc.w.Header().Set("Location", rc.link(false, "allocations", a.UUID))
	w := &jw{}
	rc.writeAllocation(w, a, nil)
	return rc.json(201, w)
}

// validateAllocation checks a body against ALLOCATION_SCHEMA (and a uuid).
func validateAllocation(what string, v any) (map[string]any, error) {
	doc, err := validateObject(what, v, allocationProps)
	if err != nil {
		return nil, err
	}
	if list, ok := doc["traits"].([]any); ok {
		for _, t := range list {
			if err := checkTrait(what, t); err != nil {
				return nil, err
			}
		}
	}
	if list, ok := doc["candidate_nodes"].([]any); ok {
		for _, c := range list {
			s, isStr := c.(string)
			if !isStr {
				return nil, schemaError(what, "%s is not of type 'string'", pyrepr.Repr(c))
			}
			if !isUUIDLike(s) && !isValidLogicalName(s) {
				return nil, invalid("Expected UUID or name for candidate_nodes: %s", s)
			}
		}
	}
	if s, ok := doc["uuid"].(string); ok {
		if !isUUIDLike(s) {
			return nil, invalid("Expected UUID for uuid: %s", s)
		}
		doc["uuid"] = canonicalUUID(s)
	}
	return doc, nil
}

func docStrings(v any) []string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, it := range list {
		s, _ := it.(string)
		out = append(out, s)
	}
	return out
}

// candidateNodes resolves candidate node idents (UUIDs or names) to UUIDs;
// any unknown one is a 400 naming them all.
func (rc *call) candidateNodes(idents []string) ([]string, error) {
	var out, missing []string
	for _, ident := range idents {
		n, err := rc.s.cfg.Store.GetNode(rc.ctx, nodeIdentForLookup(ident))
		switch {
		case errors.Is(err, store.ErrNotFound):
			missing = append(missing, ident)
		case err != nil:
			return nil, err
		default:
			out = append(out, n.UUID)
		}
	}
	if len(missing) > 0 {
		return nil, invalid("Nodes cannot be found: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// PATCH /v1/allocations/{alloc} (1.57: name and extra).
func (s *Server) patchAllocation(rc *call) error {
	if rc.minor < minorAllocationUpdate {
		return allocationsTooOld(fault.NotAllowed, "The API version does not allow updating allocations")
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
	cur, _, err := rc.loadAllocation()
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, []string{"name", "extra"}); err != nil {
		return err
	}
	for _, name := range patchValues(ops, "/name") {
		if s, _ := name.(string); s != "" && !isValidLogicalName(s) {
			return invalid("Cannot update allocation with invalid name '%s'", s)
		}
	}
	a, err := s.cfg.Conductor.UpdateAllocation(rc.ctx, cur.UUID, func(a *model.Allocation) error {
		patched, err := applyPatch(rc.ctx, map[string]any{"name": nilIfEmpty(a.Name), "extra": orEmpty(a.Extra)}, ops)
		if err != nil {
			return err
		}
		fillRemoved(patched, allocationProps)
		doc, err := validateAllocation("patch", patched)
		if err != nil {
			return err
		}
		a.Name, a.Extra = docString(doc["name"]), docMap(doc["extra"])
		return nil
	})
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writeAllocation(w, a, nil)
	return rc.json(200, w)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// DELETE /v1/allocations/{alloc}
func (s *Server) deleteAllocation(rc *call) error {
	if err := rc.allocationsAllowed(true); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	a, _, err := rc.loadAllocation()
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.DeleteAllocation(rc.ctx, a.UUID); err != nil {
		return err
	}
	return rc.noContent()
}

// nodeAllocation finds the allocation of the node in the path.
func (rc *call) nodeAllocation() (*model.Allocation, error) {
	if rc.minor < minorAllocations {
		return nil, allocationsTooOld(fault.NotFound, noAllocations)
	}
	n, raw, err := rc.loadNode()
	if err != nil {
		return nil, err
	}
	list, err := rc.s.cfg.Store.ListAllocations(rc.ctx, store.AllocationQuery{NodeUUID: n.UUID, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fault.New(fault.NotFound, "Allocation for node %s was not found", raw)
	}
	return list[0], nil
}

// GET /v1/nodes/{ident}/allocation
func (s *Server) getNodeAllocation(rc *call) error {
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if err := rc.checkAllocationFields(fields); err != nil {
		return err
	}
	a, err := rc.nodeAllocation()
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writeAllocation(w, a, fields)
	return rc.json(200, w)
}

// DELETE /v1/nodes/{ident}/allocation
func (s *Server) deleteNodeAllocation(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	a, err := rc.nodeAllocation()
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.DeleteAllocation(rc.ctx, a.UUID); err != nil {
		return err
	}
	return rc.noContent()
}

// GET /v1/allocations
func (s *Server) listAllocations(rc *call) error {
	if err := rc.allocationsAllowed(false); err != nil {
		return err
	}
	if err := rc.checkQuery(allocationListParams...); err != nil {
		return err
	}
	p, err := rc.pageParams("id")
	if err != nil {
		return err
	}
	if err := rc.markerParam(&p); err != nil {
		return err
	}
	if err := rc.checkAllocationFields(p.fields); err != nil {
		return err
	}
	q := store.AllocationQuery{SortKey: p.sortKey, SortDir: p.sortDir}
	var link [][2]string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"resource_class", &q.ResourceClass}, {"state", &q.State}, {"owner", &q.Owner}} {
		if v, ok := rc.param(f.name); ok {
			*f.dst = v
			link = append(link, [2]string{f.name, v})
		}
	}
	if _, ok := rc.param("owner"); ok && rc.minor < minorAllocationOwner {
		return notAcceptable()
	}
	if node, ok := rc.param("node"); ok && node != "" {
		n, err := s.cfg.Store.GetNode(rc.ctx, nodeIdentForLookup(node))
		if errors.Is(err, store.ErrNotFound) {
			return invalid("Node %s could not be found.", node)
		} else if err != nil {
			return err
		}
		q.NodeUUID = n.UUID
		link = append(link, [2]string{"node", node})
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if p.marker != "" {
		if _, err := s.cfg.Store.GetAllocation(rc.ctx, p.marker); errors.Is(err, store.ErrNotFound) {
			return conductor.AllocationNotFound(p.marker)
		} else if err != nil {
			return err
		}
	}
	if slices.Contains(unsortableAllocationKeys, p.sortKey) {
		return badSortKey(p.sortKey, false)
	}
	if !slices.Contains(store.AllocationSortKeys, p.sortKey) {
		return badSortKey(p.sortKey, true)
	}
	q.Marker, q.Limit = p.marker, p.limit
	list, err := s.cfg.Store.ListAllocations(rc.ctx, q)
	if err != nil {
		return err
	}
	w := rc.s.listWriter(256 + len(list)*512)
	w.rootObj()
	w.key("allocations")
	w.arr()
	for _, a := range list {
		rc.writeAllocation(w, a, p.fields)
	}
	w.endArr()
	if len(list) > 0 && len(list) == p.limit {
		params := append([][2]string{{"sort_key", p.sortKey}, {"sort_dir", p.sortDir}}, link...)
		if p.fields != nil {
			params = append(params, [2]string{"fields", strings.Join(p.fields, ",")})
		}
		w.key("next")
		w.str(rc.nextLink("allocations", params, p.limit, list[len(list)-1].UUID))
	}
	w.endObj()
	return rc.json(200, w)
}
