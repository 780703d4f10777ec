package api

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Runbooks (API 1.92) as Ironic master serves them below 1.112: the name
// is a trait (RUNBOOK_SCHEMA's TRAITS_SCHEMA), there are no runbook traits
// and no description. A provision request naming a runbook is the
// conductor's (withRunbook); who may read, change or use one is decided
// by the routes' guards (authz.go): a project-scoped principal lists its
// own and the public ones and owns what it creates.

// noRunbooks is Ironic's text below 1.92 (404 to read, 405 to write).
const noRunbooks = "The API version does not allow runbooks"

// runbookProps is RUNBOOK_SCHEMA, in its property order (name and steps
// are checked on their own: TRAITS_SCHEMA or RUNBOOK_NAME_SCHEMA, and
// RUNBOOK_STEP_SCHEMA).
var runbookProps = []nodeProp{
	{name: "uuid", types: tStr},
	{name: "name", types: []string{"string"}},
	{name: "steps", types: []string{"array"}},
	{name: "disable_ramdisk", types: []string{"boolean", "null"}},
	{name: "extra", types: tObj},
	{name: "public", types: []string{"boolean", "null"}},
	{name: "owner", types: tStr, maxLen: 255},
}

// runbookFields are the keys of a runbook document, in Ironic's order
// (object_to_dict with name, extra, public, owner and disable_ramdisk,
// links, then steps).
var runbookFields = []docField[model.Runbook]{
	{"uuid", 1, func(w *jw, _ *call, r *model.Runbook) { w.str(r.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, r *model.Runbook) { w.timestamp(r.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, r *model.Runbook) { w.timestamp(r.UpdatedAt) }},
	{"name", 1, func(w *jw, _ *call, r *model.Runbook) { w.str(r.Name) }},
	{"extra", 1, func(w *jw, _ *call, r *model.Runbook) { w.object(r.Extra) }},
	{"public", 1, func(w *jw, _ *call, r *model.Runbook) { w.boolean(r.Public) }},
	{"owner", 1, func(w *jw, _ *call, r *model.Runbook) { w.strOrNull(r.Owner) }},
	{"disable_ramdisk", 1, func(w *jw, _ *call, r *model.Runbook) { w.boolean(r.DisableRamdisk) }},
	{"links", 1, func(w *jw, rc *call, r *model.Runbook) { rc.links(w, "runbooks", r.UUID) }},
	{"steps", 1, func(w *jw, _ *call, r *model.Runbook) {
		w.arr()
		for _, s := range r.Steps {
			w.step(s.Interface, s.Step, s.Args, "order", s.Order)
		}
		w.endArr()
	}},
}

// unsortableRunbookKeys are the fields Ironic refuses to sort on.
var unsortableRunbookKeys = []string{"extra", "steps", "traits"}

// runbookPatchFields are the fields a PATCH may touch (before 1.112).
var runbookPatchFields = []string{"disable_ramdisk", "extra", "name", "owner", "public", "steps"}

// runbookNameRe is RUNBOOK_NAME_SCHEMA's pattern: the name a patched
// runbook may have (Ironic validates a PATCH with the 1.112 schema at
// every version), and its Python repr for the schema error.
var runbookNameRe = regexp.MustCompile(`^[A-Za-z0-9\-._~]+$`)

const runbookNameText = `'^[A-Za-z0-9\\-._~]+$'`

func (s *Server) runbookRoutes() {
	s.handle(endpoint{"GET": {s.listRunbooks, listRule("baremetal:runbook:list", "baremetal:runbook:list_all")},
		"POST": {s.createRunbook, rule("baremetal:runbook:create")}}, "/v1/runbooks")
	s.handle(endpoint{"GET": {s.getRunbook, runbookRule("baremetal:runbook:get")},
		"PATCH":  {s.patchRunbook, runbookBody("baremetal:runbook:update")},
		"DELETE": {s.deleteRunbook, runbookRule("baremetal:runbook:delete")}},
		"/v1/runbooks/{runbook}")
}

// writeRunbook writes a runbook (all fields, or the requested ones plus
// links); step arguments are masked as Ironic's step_sanitize does.
func (rc *call) writeRunbook(w *jw, r *model.Runbook, fields []string) {
	writeDoc(w, rc, r, runbookFields, fields)
}

func (rc *call) loadRunbook() (*model.Runbook, error) {
	if rc.auth.runbook != nil {
		return rc.auth.runbook, nil // the route's authorization loaded it
	}
	raw := rc.r.PathValue("runbook")
	ident, err := uuidOrName("runbook_ident", raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Store.GetRunbook, ident, raw, conductor.RunbookNotFound)
}

// validateRunbook checks doc against RUNBOOK_SCHEMA (what is "runbook",
// a POST body) or the schema Ironic checks a patched runbook with (what is
// "patch": the name any RUNBOOK_NAME_SCHEMA name), then Ironic's
// duplicate_steps and uuid validators, and builds the runbook.
func validateRunbook(what string, v any) (*model.Runbook, error) {
	doc, err := validateObject(what, v, runbookProps, "steps", "name")
	if err != nil {
		return nil, err
	}
	if what == "patch" {
		err = checkRunbookName(what, doc["name"])
	} else {
		err = checkTrait(what, doc["name"])
	}
	if err != nil {
		return nil, err
	}
	list, _ := doc["steps"].([]any)
	if len(list) == 0 {
		return nil, schemaError(what, "[] should be non-empty")
	}
	r := &model.Runbook{Name: docString(doc["name"]), Extra: docMap(doc["extra"]), Owner: docString(doc["owner"]),
		Public: docBool(doc["public"]), DisableRamdisk: docBool(doc["disable_ramdisk"])}
	fail := func(format string, args ...any) error { return schemaError(what, format, args...) }
	pairs := make([][2]string, 0, len(list))
	for _, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, fail("%s is not of type 'object'", maskedRepr(raw))
		}
		if err := runbookSteps.check(m, fail); err != nil {
			return nil, err
		}
		order, _ := stepPriority(m["order"])
		r.Steps = append(r.Steps, model.RunbookStep{Interface: m["interface"].(string), Step: m["step"].(string),
			Args: docMap(m["args"]), Order: order})
		pairs = append(pairs, [2]string{r.Steps[len(r.Steps)-1].Interface, r.Steps[len(r.Steps)-1].Step})
	}
	if err := duplicateSteps(pairs, "template"); err != nil {
		return nil, err
	}
	if err := docUUIDs(doc, "uuid"); err != nil {
		return nil, err
	}
	r.UUID = docString(doc["uuid"])
	return r, nil
}

// checkRunbookName is RUNBOOK_NAME_SCHEMA.
func checkRunbookName(what string, v any) error {
	s, ok := v.(string)
	switch {
	case !ok:
		return schemaError(what, "%s is not of type 'string'", maskedRepr(v))
	case s == "":
		return schemaError(what, "%s is too short", maskedRepr(s))
	case len([]rune(s)) > 255:
		return schemaError(what, "%s is too long", maskedRepr(s))
	case !runbookNameRe.MatchString(s):
		return schemaError(what, "%s does not match %s", maskedRepr(s), runbookNameText)
	}
	return nil
}

// GET /v1/runbooks/{runbook}
func (s *Server) getRunbook(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	return show(rc, false, func(fields []string) error { return rc.checkShownFields(fields, fieldNames(runbookFields)) },
		rc.loadRunbook, (*call).writeRunbook)
}

// GET /v1/runbooks (?project=: the runbooks the project owns and the
// public ones; the route's guard sets it for a project-scoped request)
func (s *Server) listRunbooks(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	p, err := rc.listPage(fieldNames(runbookFields), unsortableRunbookKeys, store.RunbookSortKeys, "project")
	if err != nil {
		return err
	}
	project, _ := rc.param("project")
	if err := checkMarker(rc, p.marker, s.cfg.Store.GetRunbook, conductor.RunbookNotFound); err != nil {
		return err
	}
	fields := p.shown(namedFields, false)
	list, err := s.cfg.Store.ListRunbooks(rc.ctx, store.RunbookQuery{Project: project, Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, "runbooks", list, p.limit, 512,
		func(w *jw, r *model.Runbook) { rc.writeRunbook(w, r, fields) },
		func(last *model.Runbook) string { return rc.nextLink("runbooks", p.nextParams(), p.limit, last.UUID) })
}

// POST /v1/runbooks
func (s *Server) createRunbook(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	body, err := rc.readCreate(false)
	if err != nil {
		return err
	}
	r, err := validateRunbook("runbook", body)
	if err != nil {
		return err
	}
	if project := rc.project(); project != "" {
		if r.Owner != "" && r.Owner != project {
			return invalid("Cannot create a runbook as a project scoped admin with an owner other than your own project.")
		}
		if r.Public {
			return invalid("Cannot create a public runbook as a project scoped admin.")
		}
		r.Owner = project
	}
	if err := s.cfg.Conductor.CreateRunbook(rc.ctx, r); err != nil {
		return err
	}
	return created(rc, r, (*call).writeRunbook, "runbooks", r.UUID)
}

// runbookDoc is a runbook as a JSON document, for a PATCH to apply to.
func runbookDoc(r *model.Runbook) map[string]any {
	steps := make([]any, len(r.Steps))
	for i, s := range r.Steps {
		steps[i] = map[string]any{"interface": s.Interface, "step": s.Step, "args": orEmpty(s.Args), "order": float64(s.Order)}
	}
	return map[string]any{"uuid": r.UUID, "name": r.Name, "steps": steps, "extra": orEmpty(r.Extra),
		"public": r.Public, "owner": nilIfEmpty(r.Owner), "disable_ramdisk": r.DisableRamdisk}
}

// checkRunbookOwnership is Ironic's rule for a PATCH of owner and public:
// a public runbook (before or after the patch) has no owner, and setting
// public clears the owner (doc is changed so).
func checkRunbookOwnership(doc map[string]any, ops []patchOp) error {
	owner, public := patchValues(ops, "/owner"), patchValues(ops, "/public")
	if len(owner) > 0 {
		var publicValue any = false
		if len(public) > 0 {
			publicValue = public[0]
		}
		if truthy(doc["public"]) && len(public) == 0 || truthy(publicValue) {
			reprs := make([]string, len(ops))
			for i, p := range ops {
				reprs[i] = p.repr()
			}
			return invalid("Couldn't apply patch '[%s]'. Reason: There cannot be an owner for a public runbook",
				strings.Join(reprs, ", "))
		}
	}
	if len(public) > 0 {
		doc["owner"] = nil
	}
	return nil
}

// PATCH /v1/runbooks/{runbook}
func (s *Server) patchRunbook(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	_, ops, err := rc.readPatch(false, nil)
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, runbookPatchFields); err != nil {
		return err
	}
	if err := rc.authorizeRunbookRules(runbookPatchRules(ops)...); err != nil {
		return err
	}
	cur, err := rc.loadRunbook()
	if err != nil {
		return err
	}
	return updated(rc, cur.UUID, s.cfg.Conductor.UpdateRunbook, func(r *model.Runbook) error {
		doc := runbookDoc(r)
		if err := checkRunbookOwnership(doc, ops); err != nil {
			return err
		}
		patched, err := applyPatch(rc.ctx, doc, ops)
		if err != nil {
			return err
		}
		// Ironic prunes the keys RUNBOOK_STEP_SCHEMA does not know from
		// each patched step before validating it.
		steps, _ := patched["steps"].([]any)
		for _, st := range steps {
			if m, ok := st.(map[string]any); ok {
				maps.DeleteFunc(m, func(k string, _ any) bool { return !slices.Contains(runbookSteps.keys, k) })
			}
		}
		nr, err := validateRunbook("patch", patched)
		if err != nil {
			return err
		}
		r.Name, r.Steps, r.Extra, r.Owner, r.Public, r.DisableRamdisk = nr.Name, nr.Steps, nr.Extra, nr.Owner, nr.Public, nr.DisableRamdisk
		return nil
	}, (*call).writeRunbook)
}

// DELETE /v1/runbooks/{runbook}
func (s *Server) deleteRunbook(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	return rc.remove(loaded(rc.loadRunbook, func(r *model.Runbook) string { return r.UUID }), s.cfg.Conductor.DeleteRunbook)
}
