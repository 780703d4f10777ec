package api

import (
	"slices"
	"strconv"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// minorDeployTemplates is the version that added /v1/deploy_templates.
const minorDeployTemplates = 55

// noDeployTemplates is Ironic's text below 1.55 (404 to read, 405 to write).
const noDeployTemplates = "The API version does not allow deploy templates"

// templateProps is Ironic's TEMPLATE_SCHEMA, in its property order (name
// and steps are checked on their own: TRAITS_SCHEMA, DEPLOY_STEP_SCHEMA).
var templateProps = []nodeProp{
	{name: "description", types: tStr, maxLen: 255},
	{name: "extra", types: tObj},
	{name: "name", types: []string{"string"}},
	{name: "steps", types: []string{"array"}},
	{name: "uuid", types: tStr},
}

// deployStepInterfaces is the enum of a deploy step's interface (Ironic's
// DEPLOYING_INTERFACE_PRIORITY keys, in its order).
var deployStepInterfaces = []string{"power", "management", "deploy", "bios", "raid"}

// templateFields are the keys of a deploy template document, in Ironic's
// order (object_to_dict with name and extra, links, then steps).
var templateFields = []docField[model.DeployTemplate]{
	{"uuid", 1, func(w *jw, _ *call, t *model.DeployTemplate) { w.str(t.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, t *model.DeployTemplate) { w.timestamp(t.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, t *model.DeployTemplate) { w.timestamp(t.UpdatedAt) }},
	{"name", 1, func(w *jw, _ *call, t *model.DeployTemplate) { w.str(t.Name) }},
	{"extra", 1, func(w *jw, _ *call, t *model.DeployTemplate) { w.object(t.Extra) }},
	{"links", 1, func(w *jw, rc *call, t *model.DeployTemplate) { rc.links(w, "deploy_templates", t.UUID) }},
	{"steps", 1, func(w *jw, _ *call, t *model.DeployTemplate) {
		w.arr()
		for _, s := range t.Steps {
			w.step(s.Interface, s.Step, s.Args, "priority", s.Priority)
		}
		w.endArr()
	}},
}

// namedFields are the DEFAULT_RETURN_FIELDS of a list of deploy templates
// or runbooks.
var namedFields = []string{"uuid", "name"}

// unsortableTemplateKeys are the fields Ironic refuses to sort on.
var unsortableTemplateKeys = []string{"extra", "steps"}

func (hs recordAPI) deployTemplateRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listDeployTemplates, rule("baremetal:deploy_template:get")},
		"POST": {hs.createDeployTemplate, rule("baremetal:deploy_template:create")}}, "/v1/deploy_templates")
	s.handle(endpoint{"GET": {hs.getDeployTemplate, rule("baremetal:deploy_template:get")},
		"PATCH":  {hs.patchDeployTemplate, rule("baremetal:deploy_template:update")},
		"DELETE": {hs.deleteDeployTemplate, rule("baremetal:deploy_template:delete")}},
		"/v1/deploy_templates/{template}")
}

func (hs recordAPI) deployTemplatesAllowed(rc *call) error {
	return rc.resourceAllowed(minorDeployTemplates, noDeployTemplates)
}

// writeDeployTemplate writes a template (all fields, or the requested ones
// plus links); step arguments are masked as Ironic's step_sanitize does.
func (hs recordAPI) writeDeployTemplate(rc *call, w *jw, t *model.DeployTemplate, fields []string) {
	writeDoc(w, rc, t, templateFields, fields)
}

func (hs recordAPI) loadDeployTemplate(rc *call) (*model.DeployTemplate, error) {
	raw := rc.r.PathValue("template")
	ident, err := uuidOrName("template_ident", raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Catalog.DeployTemplates().GetDeployTemplate, ident, raw, fault.NotFoundFor("Deploy template"))
}

// validateTemplate checks doc against TEMPLATE_SCHEMA and Ironic's
// duplicate_steps and uuid validators, as args.validate reports them
// (what is "template" for a POST body, "patch" for a patched one), and
// builds the template.
func validateTemplate(what string, v any) (*model.DeployTemplate, error) {
	doc, err := validateObject(what, v, templateProps, "steps", "name")
	if err != nil {
		return nil, err
	}
	if err := checkTrait(what, doc["name"]); err != nil {
		return nil, err
	}
	list, _ := doc["steps"].([]any)
	if len(list) == 0 {
		return nil, schemaError(what, "[] should be non-empty")
	}
	t := &model.DeployTemplate{Name: docString(doc["name"]), Description: docString(doc["description"]),
		Extra: docMap(doc["extra"])}
	for _, raw := range list {
		s, err := deployStep(what, raw)
		if err != nil {
			return nil, err
		}
		t.Steps = append(t.Steps, s)
	}
	pairs := make([][2]string, len(t.Steps))
	for i, s := range t.Steps {
		pairs[i] = [2]string{s.Interface, s.Step}
	}
	if err := duplicateSteps(pairs, "deploy template"); err != nil {
		return nil, err
	}
	if err := docUUIDs(doc, "uuid"); err != nil {
		return nil, err
	}
	t.UUID = docString(doc["uuid"])
	return t, nil
}

// deployStep checks one step against DEPLOY_STEP_SCHEMA.
func deployStep(what string, v any) (model.DeployStep, error) {
	var s model.DeployStep
	m, ok := v.(map[string]any)
	if !ok {
		return s, schemaError(what, "%s is not of type 'object'", maskedRepr(v))
	}
	for _, r := range []string{"interface", "step", "args", "priority"} {
		if _, ok := m[r]; !ok {
			return s, schemaError(what, "'%s' is a required property", r)
		}
	}
	var extra []string
	for k := range m {
		if k != "interface" && k != "step" && k != "args" && k != "priority" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return s, additionalProps(what, extra)
	}
	args, ok := m["args"].(map[string]any)
	if !ok {
		return s, schemaError(what, "%s is not of type 'object'", maskedRepr(m["args"]))
	}
	iface, ok := m["interface"].(string)
	if !ok {
		return s, schemaError(what, "%s is not of type 'string'", maskedRepr(m["interface"]))
	}
	if !slices.Contains(deployStepInterfaces, iface) {
		return s, schemaError(what, "%s is not one of %s", maskedRepr(iface), pyrepr.Strings(deployStepInterfaces))
	}
	prio, ok := stepPriority(m["priority"])
	if f, isNum := m["priority"].(float64); isNum && f < 0 {
		return s, schemaError(what, "%s is less than the minimum of 0", maskedRepr(f))
	}
	if !ok {
		return s, schemaError(what, "%s is not valid under any of the given schemas", maskedRepr(m["priority"]))
	}
	name, ok := m["step"].(string)
	if !ok {
		return s, schemaError(what, "%s is not of type 'string'", maskedRepr(m["step"]))
	}
	if name == "" {
		return s, schemaError(what, "'' should be non-empty")
	}
	return model.DeployStep{Interface: iface, Step: name, Args: args, Priority: prio}, nil
}

// stepPriority reads a priority: a non-negative integer, or a string of
// digits (stored as the integer, as Ironic's deploy_template_steps column).
func stepPriority(v any) (int, bool) {
	switch p := v.(type) {
	case float64:
		if p >= 0 && p == float64(int(p)) {
			return int(p), true
		}
	case string:
		if digits.MatchString(p) {
			n, err := strconv.Atoi(p)
			return n, err == nil
		}
	}
	return 0, false
}

// GET /v1/deploy_templates/{template}
func (hs recordAPI) getDeployTemplate(rc *call) error {
	if err := hs.deployTemplatesAllowed(rc); err != nil {
		return err
	}
	return show(rc, true, func(fields []string) error { return rc.checkShownFields(fields, fieldNames(templateFields)) },
		func() (*model.DeployTemplate, error) { return hs.loadDeployTemplate(rc) }, hs.writeDeployTemplate)
}

// GET /v1/deploy_templates
func (hs recordAPI) listDeployTemplates(rc *call) error {
	s := hs.s
	if err := hs.deployTemplatesAllowed(rc); err != nil {
		return err
	}
	p, err := rc.listPage(fieldNames(templateFields), unsortableTemplateKeys, store.DeployTemplateSortKeys)
	if err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, s.cfg.Catalog.DeployTemplates().GetDeployTemplate, fault.NotFoundFor("Deploy template")); err != nil {
		return err
	}
	fields := p.shown(namedFields, false)
	list, err := s.cfg.Catalog.DeployTemplates().ListDeployTemplates(rc.ctx, store.DeployTemplateQuery{Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, "deploy_templates", list, p.limit, 512,
		func(w *jw, t *model.DeployTemplate) { hs.writeDeployTemplate(rc, w, t, fields) },
		func(last *model.DeployTemplate) string {
			return rc.nextLink("deploy_templates", p.nextParams(), p.limit, last.UUID)
		})
}

// POST /v1/deploy_templates
func (hs recordAPI) createDeployTemplate(rc *call) error {
	s := hs.s
	if err := hs.deployTemplatesAllowed(rc); err != nil {
		return err
	}
	body, err := rc.readCreate(false)
	if err != nil {
		return err
	}
	t, err := validateTemplate("template", body)
	if err != nil {
		return err
	}
	if err := s.cfg.Records.CreateDeployTemplate(rc.ctx, t); err != nil {
		return err
	}
	return created(rc, t, hs.writeDeployTemplate, "deploy_templates", t.UUID)
}

// templateDoc is a template as a JSON document, for a PATCH to apply to.
func templateDoc(t *model.DeployTemplate) map[string]any {
	steps := make([]any, len(t.Steps))
	for i, s := range t.Steps {
		args := map[string]any(s.Args)
		if args == nil {
			args = map[string]any{}
		}
		steps[i] = map[string]any{"interface": s.Interface, "step": s.Step, "args": args, "priority": float64(s.Priority)}
	}
	return map[string]any{"uuid": t.UUID, "name": t.Name, "steps": steps, "extra": orEmpty(t.Extra),
		"description": nilIfEmpty(t.Description)}
}

// PATCH /v1/deploy_templates/{template} (extra, name, steps, description)
func (hs recordAPI) patchDeployTemplate(rc *call) error {
	s := hs.s
	if err := hs.deployTemplatesAllowed(rc); err != nil {
		return err
	}
	_, ops, err := rc.readPatch(false, nil)
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, []string{"extra", "name", "steps", "description"}); err != nil {
		return err
	}
	cur, err := hs.loadDeployTemplate(rc)
	if err != nil {
		return err
	}
	return updated(rc, cur.UUID, s.cfg.Records.UpdateDeployTemplate, func(t *model.DeployTemplate) error {
		patched, err := applyPatch(rc.ctx, templateDoc(t), ops)
		if err != nil {
			return err
		}
		if patched["description"] == nil {
			delete(patched, "description")
		}
		if patched["extra"] == nil {
			delete(patched, "extra")
		}
		nt, err := validateTemplate("patch", patched)
		if err != nil {
			return err
		}
		t.Name, t.Steps, t.Extra, t.Description = nt.Name, nt.Steps, nt.Extra, nt.Description
		return nil
	}, hs.writeDeployTemplate)
}

// DELETE /v1/deploy_templates/{template}
func (hs recordAPI) deleteDeployTemplate(rc *call) error {
	s := hs.s
	if err := hs.deployTemplatesAllowed(rc); err != nil {
		return err
	}
	return rc.remove(loaded(func() (*model.DeployTemplate, error) { return hs.loadDeployTemplate(rc) }, templateUUID), s.cfg.Records.DeleteDeployTemplate)
}

func templateUUID(t *model.DeployTemplate) string { return t.UUID }
