package api

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Runbooks (API 1.92) as Ironic master serves them: below 1.112 the name
// is a trait (RUNBOOK_SCHEMA's TRAITS_SCHEMA), with no runbook traits and
// no description; from 1.112 (minorRunbookTraits) the name is any
// RUNBOOK_NAME_SCHEMA string, description is shown and settable, traits
// are shown and set through /v1/runbooks/{runbook}/traits only, and a node
// may run a runbook when it has one of the runbook's traits. A provision
// request naming a runbook is the conductor's (withRunbook); who may
// read, change or use one is decided by the routes' guards (authz.go): a
// project-scoped principal lists its own and the public ones and owns what
// it creates.

// minorRunbookTraits is Ironic's MINOR_112_RUNBOOK_TRAITS.
const minorRunbookTraits = 112

// noRunbookTraits is Ironic's text for .../traits below 1.112 (404).
const noRunbookTraits = "The API version does not allow runbook traits"

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
	{name: "description", types: tStr, maxLen: 255}, // RUNBOOK_MUTATION_SCHEMA_V112 only
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
	{"description", minorRunbookTraits, func(w *jw, _ *call, r *model.Runbook) { w.strOrNull(r.Description) }},
	{"links", 1, func(w *jw, rc *call, r *model.Runbook) { rc.links(w, "runbooks", r.UUID) }},
	{"steps", 1, func(w *jw, _ *call, r *model.Runbook) {
		w.arr()
		for _, s := range r.Steps {
			w.step(s.Interface, s.Step, s.Args, "order", s.Order)
		}
		w.endArr()
	}},
	{"traits", minorRunbookTraits, func(w *jw, _ *call, r *model.Runbook) { w.strings(nonNilStrings(r.Traits)) }},
}

// runbookFieldNames are the runbook keys the request's version shows
// (Ironic checks ?fields= against the converted document).
func (hs recordAPI) runbookFieldNames(rc *call) []string {
	var out []string
	for _, f := range runbookFields {
		if f.minor <= rc.minor {
			out = append(out, f.name)
		}
	}
	return out
}

// unsortableRunbookKeys are the fields Ironic refuses to sort on.
var unsortableRunbookKeys = []string{"extra", "steps", "traits"}

// runbookPatchFields are the fields a PATCH may touch: Ironic's
// _PATCH_ALLOWED_FIELDS_BASE and disable_ramdisk, which Ironic's list
// lacks; from 1.112 description too (func() []string { return (recordAPI{rc.s}).runbookPatchFields(rc) }).
var runbookPatchFields = []string{"disable_ramdisk", "extra", "name", "owner", "public", "steps"}

// runbookPatchFields are the fields a PATCH may touch at the request's
// version (Ironic's _get_patch_allowed_fields).
func (hs recordAPI) runbookPatchFields(rc *call) []string {
	if rc.minor >= minorRunbookTraits {
		return append(slices.Clone(runbookPatchFields), "description")
	}
	return runbookPatchFields
}

// runbookNameRe is RUNBOOK_NAME_SCHEMA's pattern: the name a patched
// runbook may have (Ironic validates a PATCH with the 1.112 schema at
// every version), and its Python repr for the schema error.
var runbookNameRe = regexp.MustCompile(`^[A-Za-z0-9\-._~]+$`)

const runbookNameText = `'^[A-Za-z0-9\\-._~]+$'`

func (hs recordAPI) runbookRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listRunbooks, listRule("baremetal:runbook:list", "baremetal:runbook:list_all")},
		"POST": {hs.createRunbook, rule("baremetal:runbook:create")}}, "/v1/runbooks")
	s.handle(endpoint{"GET": {hs.getRunbook, runbookRule("baremetal:runbook:get")},
		"PATCH":  {hs.patchRunbook, runbookBody("baremetal:runbook:update")},
		"DELETE": {hs.deleteRunbook, runbookRule("baremetal:runbook:delete")}},
		"/v1/runbooks/{runbook}")
	s.handle(endpoint{"GET": {hs.listRunbookTraits, runbookRule("baremetal:runbook:get")},
		"PUT":    {hs.putRunbookTraits, runbookRule("baremetal:runbook:update")},
		"DELETE": {hs.deleteRunbookTraits, runbookRule("baremetal:runbook:update")}},
		"/v1/runbooks/{runbook}/traits")
	s.handle(endpoint{"PUT": {hs.putRunbookTraits, runbookRule("baremetal:runbook:update")},
		"DELETE": {hs.deleteRunbookTraits, runbookRule("baremetal:runbook:update")}},
		"/v1/runbooks/{runbook}/traits/{trait}")
}

// writeRunbook writes a runbook (all fields, or the requested ones plus
// links); step arguments are masked as Ironic's step_sanitize does.
func (hs recordAPI) writeRunbook(rc *call, w *jw, r *model.Runbook, fields []string) {
	writeDoc(w, rc, r, runbookFields, fields)
}

func (hs recordAPI) loadRunbook(rc *call) (*model.Runbook, error) {
	if rc.auth.runbook != nil {
		return rc.auth.runbook, nil // the route's authorization loaded it
	}
	raw := rc.r.PathValue("runbook")
	ident, err := uuidOrName("runbook_ident", raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Catalog.Runbooks().GetRunbook, ident, raw, fault.NotFoundFor("Runbook"))
}

// validateRunbook checks doc against RUNBOOK_SCHEMA (v112 false: a POST
// body below 1.112) or RUNBOOK_MUTATION_SCHEMA_V112 (a POST body from
// 1.112, and a patched runbook at any version: the name any
// RUNBOOK_NAME_SCHEMA name, and a description), what naming it in errors,
// then Ironic's duplicate_steps and uuid validators, and builds the
// runbook.
func validateRunbook(what string, v any, v112 bool) (*model.Runbook, error) {
	props := runbookProps
	if !v112 {
		props = props[:len(props)-1] // no description
	}
	doc, err := validateObject(what, v, props, "steps", "name")
	if err != nil {
		return nil, err
	}
	if v112 {
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
		Public: docBool(doc["public"]), DisableRamdisk: docBool(doc["disable_ramdisk"]),
		Description: docString(doc["description"])}
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
func (hs recordAPI) getRunbook(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	return show(rc, false, func(fields []string) error { return rc.checkShownFields(fields, hs.runbookFieldNames(rc)) },
		func() (*model.Runbook, error) { return hs.loadRunbook(rc) }, hs.writeRunbook)
}

// GET /v1/runbooks (?project=: the runbooks the project owns and the
// public ones; the route's guard sets it for a project-scoped request)
func (hs recordAPI) listRunbooks(rc *call) error {
	s := hs.s
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	p, err := rc.listPage(hs.runbookFieldNames(rc), unsortableRunbookKeys, store.RunbookSortKeys, "project")
	if err != nil {
		return err
	}
	project, _ := rc.param("project")
	if err := checkMarker(rc, p.marker, s.cfg.Catalog.Runbooks().GetRunbook, fault.NotFoundFor("Runbook")); err != nil {
		return err
	}
	fields := p.shown(namedFields, false)
	list, err := s.cfg.Catalog.Runbooks().ListRunbooks(rc.ctx, store.RunbookQuery{Project: project, Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, "runbooks", list, p.limit, 512,
		func(w *jw, r *model.Runbook) { hs.writeRunbook(rc, w, r, fields) },
		func(last *model.Runbook) string { return rc.nextLink("runbooks", p.nextParams(), p.limit, last.UUID) })
}

// POST /v1/runbooks
func (hs recordAPI) createRunbook(rc *call) error {
	s := hs.s
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	body, err := rc.readCreate(false)
	if err != nil {
		return err
	}
	r, err := validateRunbook("runbook", body, rc.minor >= minorRunbookTraits)
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
	if err := s.cfg.Records.CreateRunbook(rc.ctx, r); err != nil {
		return err
	}
	return created(rc, r, hs.writeRunbook, "runbooks", r.UUID)
}

// runbookDoc is a runbook as a JSON document, for a PATCH to apply to.
func runbookDoc(r *model.Runbook) map[string]any {
	steps := make([]any, len(r.Steps))
	for i, s := range r.Steps {
		steps[i] = map[string]any{"interface": s.Interface, "step": s.Step, "args": orEmpty(s.Args), "order": float64(s.Order)}
	}
	return map[string]any{"uuid": r.UUID, "name": r.Name, "steps": steps, "extra": orEmpty(r.Extra),
		"public": r.Public, "owner": nilIfEmpty(r.Owner), "disable_ramdisk": r.DisableRamdisk,
		"description": nilIfEmpty(r.Description)}
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
func (hs recordAPI) patchRunbook(rc *call) error {
	s := hs.s
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	_, ops, err := rc.readPatch(false, nil)
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, hs.runbookPatchFields(rc)); err != nil {
		return err
	}
	if err := rc.authorizeRunbookRules(runbookPatchRules(ops)...); err != nil {
		return err
	}
	cur, err := hs.loadRunbook(rc)
	if err != nil {
		return err
	}
	return updated(rc, cur.UUID, s.cfg.Records.UpdateRunbook, func(r *model.Runbook) error {
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
		nr, err := validateRunbook("patch", patched, true)
		if err != nil {
			return err
		}
		r.Name, r.Steps, r.Extra, r.Owner, r.Public, r.DisableRamdisk = nr.Name, nr.Steps, nr.Extra, nr.Owner, nr.Public, nr.DisableRamdisk
		r.Description = nr.Description
		return nil
	}, hs.writeRunbook)
}

// DELETE /v1/runbooks/{runbook}
func (hs recordAPI) deleteRunbook(rc *call) error {
	s := hs.s
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	return rc.remove(loaded(func() (*model.Runbook, error) { return hs.loadRunbook(rc) }, func(r *model.Runbook) string { return r.UUID }), s.cfg.Records.DeleteRunbook)
}

// runbookTraitsAllowed is the version check of .../traits: runbooks
// (1.92), then runbook traits (1.112), both 404.
func (hs recordAPI) runbookTraitsAllowed(rc *call) error {
	if err := rc.resourceAllowed(minorRunbooks, noRunbooks); err != nil {
		return err
	}
	if rc.minor < minorRunbookTraits {
		return fault.New(fault.NotFound, noRunbookTraits)
	}
	return nil
}

// GET /v1/runbooks/{runbook}/traits (1.112): {"traits": [...]}.
func (hs recordAPI) listRunbookTraits(rc *call) error {
	if err := hs.runbookTraitsAllowed(rc); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	r, err := hs.loadRunbook(rc)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("traits")
	w.strings(nonNilStrings(r.Traits))
	w.endObj()
	return rc.json(200, w)
}

// PUT /v1/runbooks/{runbook}/traits (replace all, body {"traits": [...]})
// and PUT /v1/runbooks/{runbook}/traits/{trait} (add one, no body): 204.
// As Ironic's RunbookTraitsController: the arguments are validated first
// (TRAITS_SCHEMA, RUNBOOK_TRAITS_SCHEMA), duplicates are dropped.
func (hs recordAPI) putRunbookTraits(rc *call) error {
	s := hs.s
	if err := hs.runbookTraitsAllowed(rc); err != nil {
		return err
	}
	put, err := (nodeAPI{rc.s}).traitsPut(rc)
	if err != nil {
		return err
	}
	trait, one, list := put.trait, put.one, put.list
	cur, err := hs.loadRunbook(rc)
	if err != nil {
		return err
	}
	if one == put.hasList {
		return invalid("A single runbook trait may be added via PUT /v1/runbooks/<runbook identifier>/traits/<trait> with no body, or all runbook traits may be replaced via PUT /v1/runbooks/<runbook identifier>/traits with the list of traits specified in the request body.")
	}
	if one && put.body {
		return invalid("No body should be provided when adding a trait")
	}
	_, err = s.cfg.Records.UpdateRunbook(rc.ctx, cur.UUID, func(r *model.Runbook) error {
		if one {
			r.Traits = runbookTraitSet(append(slices.Clone(r.Traits), trait))
		} else {
			r.Traits = runbookTraitSet(list)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if one {
		rc.w.Header().Set("Location", rc.link(false, "runbooks", rc.r.PathValue("runbook"), "traits", trait))
	}
	return rc.noContent()
}

// runbookTraitSet is a runbook's traits as Ironic's runbook_traits table
// holds them: each once (its primary key), in key order.
func runbookTraitSet(traits []string) []string {
	out := slices.Clone(traits)
	slices.Sort(out)
	return slices.Compact(out)
}

// DELETE /v1/runbooks/{runbook}/traits (all) and .../traits/{trait}
// (one; a trait the runbook lacks is no error, as in Ironic): 204.
func (hs recordAPI) deleteRunbookTraits(rc *call) error {
	s := hs.s
	if err := hs.runbookTraitsAllowed(rc); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	cur, err := hs.loadRunbook(rc)
	if err != nil {
		return err
	}
	trait := rc.r.PathValue("trait")
	_, err = s.cfg.Records.UpdateRunbook(rc.ctx, cur.UUID, func(r *model.Runbook) error {
		if trait == "" {
			r.Traits = nil
		} else {
			r.Traits = slices.DeleteFunc(slices.Clone(r.Traits), func(t string) bool { return t == trait })
		}
		return nil
	})
	if err != nil {
		return err
	}
	return rc.noContent()
}
