package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
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

// allocationFields lists the allocation keys in Ironic's order
// (object_to_dict, links, then node_uuid).
var allocationFields = []docField[model.Allocation]{
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

func (hs allocationAPI) allocationRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listAllocations, systemOnly("baremetal:allocation:list_all")},
		"POST": {hs.createAllocation, systemOnly("baremetal:allocation:create")}}, "/v1/allocations")
	s.handle(endpoint{"GET": {hs.getAllocation, systemOnly("baremetal:allocation:get")},
		"PATCH":  {hs.patchAllocation, systemOnly("baremetal:allocation:update")},
		"DELETE": {hs.deleteAllocation, systemOnly("baremetal:allocation:delete")}},
		"/v1/allocations/{alloc}")
	s.handle(endpoint{"GET": {hs.getNodeAllocation, nodeRule("baremetal:node:get")},
		"DELETE": {hs.deleteNodeAllocation, systemOnly("baremetal:allocation:delete")}}, "/v1/nodes/{ident}/allocation")
}

// noAllocations is Ironic's text for allocations below 1.52.
const noAllocations = "The API version does not allow allocations"

// allocationsAllowed is the gate below 1.52: 404 to read, 405 to write.
func (hs allocationAPI) allocationsAllowed(rc *call, write bool) error {
	return rc.versionGate(minorAllocations, noAllocations, write)
}

// writeAllocation writes an allocation with the fields visible at the
// request version (all, or the requested subset plus links).
func (hs allocationAPI) writeAllocation(rc *call, w *jw, a *model.Allocation, fields []string) {
	writeDoc(w, rc, a, allocationFields, fields)
}

// checkAllocationFields validates ?fields= (owner needs 1.60).
func (hs allocationAPI) checkAllocationFields(rc *call, fields []string) error {
	if fields == nil {
		return nil
	}
	if slices.Contains(fields, "owner") && rc.minor < minorAllocationOwner {
		return notAcceptable()
	}
	return checkFields(fields, fieldNames(allocationFields))
}

func (hs allocationAPI) loadAllocation(rc *call) (*model.Allocation, error) {
	raw := rc.r.PathValue("alloc")
	ident, err := uuidOrName("allocation_ident", raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Nodes.Allocations().GetAllocation, ident, raw, fault.NotFoundFor("Allocation"))
}

func allocationUUID(a *model.Allocation) string { return a.UUID }

// GET /v1/allocations/{alloc}
func (hs allocationAPI) getAllocation(rc *call) error {
	if err := hs.allocationsAllowed(rc, false); err != nil {
		return err
	}
	return show(rc, false, func(fields []string) error { return hs.checkAllocationFields(rc, fields) }, func() (*model.Allocation, error) { return hs.loadAllocation(rc) }, hs.writeAllocation)
}

// POST /v1/allocations
func (hs allocationAPI) createAllocation(rc *call) error {
	s := hs.s
	if err := hs.allocationsAllowed(rc, true); err != nil {
		return err
	}
	body, err := rc.readCreate(true)
	if err != nil {
		return err
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
		node, err = s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeIdentForLookup(ident))
		if errors.Is(err, store.ErrNotFound) {
			return invalid("%s", fault.MissingText("Node", ident))
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
	if a.CandidateNodes, err = hs.candidateNodes(rc, docStrings(doc["candidate_nodes"])); err != nil {
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
	if err := s.cfg.Lifecycle.CreateAllocation(rc.ctx, a, backfill); err != nil {
		return err
	}
	return created(rc, a, hs.writeAllocation, "allocations", a.UUID)
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
				return nil, schemaError(what, "%s is not of type 'string'", maskedRepr(c))
			}
			if !isUUIDLike(s) && !isValidLogicalName(s) {
				return nil, invalid("Expected UUID or name for candidate_nodes: %s", s)
			}
		}
	}
	if err := docUUIDs(doc, "uuid"); err != nil {
		return nil, err
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
func (hs allocationAPI) candidateNodes(rc *call, idents []string) ([]string, error) {
	var out, missing []string
	for _, ident := range idents {
		n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeIdentForLookup(ident))
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
func (hs allocationAPI) patchAllocation(rc *call) error {
	s := hs.s
	if err := rc.versionGate(minorAllocationUpdate, "The API version does not allow updating allocations", true); err != nil {
		return err
	}
	_, ops, err := rc.readPatch(true, nil)
	if err != nil {
		return err
	}
	cur, err := hs.loadAllocation(rc)
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
	return updated(rc, cur.UUID, s.cfg.Lifecycle.UpdateAllocation, func(a *model.Allocation) error {
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
	}, hs.writeAllocation)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// DELETE /v1/allocations/{alloc}
func (hs allocationAPI) deleteAllocation(rc *call) error {
	s := hs.s
	if err := hs.allocationsAllowed(rc, true); err != nil {
		return err
	}
	return rc.remove(loaded(func() (*model.Allocation, error) { return hs.loadAllocation(rc) }, allocationUUID), s.cfg.Lifecycle.DeleteAllocation)
}

// nodeAllocation finds the allocation of the node in the path.
func (hs allocationAPI) nodeAllocation(rc *call) (*model.Allocation, error) {
	if err := hs.allocationsAllowed(rc, false); err != nil {
		return nil, err
	}
	n, raw, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return nil, err
	}
	list, err := rc.s.cfg.Nodes.Allocations().ListAllocations(rc.ctx, store.AllocationQuery{NodeUUID: n.UUID, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fault.New(fault.NotFound, "Allocation for node %s was not found", raw)
	}
	return list[0], nil
}

// GET /v1/nodes/{ident}/allocation
func (hs allocationAPI) getNodeAllocation(rc *call) error {
	return show(rc, true, func(fields []string) error { return hs.checkAllocationFields(rc, fields) }, func() (*model.Allocation, error) { return hs.nodeAllocation(rc) }, hs.writeAllocation)
}

// DELETE /v1/nodes/{ident}/allocation
func (hs allocationAPI) deleteNodeAllocation(rc *call) error {
	s := hs.s
	return rc.remove(loaded(func() (*model.Allocation, error) { return hs.nodeAllocation(rc) }, allocationUUID), s.cfg.Lifecycle.DeleteAllocation)
}

// GET /v1/allocations
func (hs allocationAPI) listAllocations(rc *call) error {
	s := hs.s
	if err := hs.allocationsAllowed(rc, false); err != nil {
		return err
	}
	p, err := rc.pagePrelude(allocationListParams...)
	if err != nil {
		return err
	}
	if err := hs.checkAllocationFields(rc, p.fields); err != nil {
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
		n, err := s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeIdentForLookup(node))
		if errors.Is(err, store.ErrNotFound) {
			return invalid("%s", fault.MissingText("Node", node))
		} else if err != nil {
			return err
		}
		q.NodeUUID = n.UUID
		link = append(link, [2]string{"node", node})
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, s.cfg.Nodes.Allocations().GetAllocation, fault.NotFoundFor("Allocation")); err != nil {
		return err
	}
	if err := checkSortKey(p.sortKey, unsortableAllocationKeys, store.AllocationSortKeys); err != nil {
		return err
	}
	q.Marker, q.Limit = p.marker, p.limit
	list, err := s.cfg.Nodes.Allocations().ListAllocations(rc.ctx, q)
	if err != nil {
		return err
	}
	return writeList(rc, "allocations", list, p.limit, 512,
		func(w *jw, a *model.Allocation) { hs.writeAllocation(rc, w, a, p.fields) },
		func(last *model.Allocation) string {
			return rc.nextLink("allocations", p.nextQuery("", link, p.fields), p.limit, last.UUID)
		})
}
