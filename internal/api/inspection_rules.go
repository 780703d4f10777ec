package api

import (
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/internal/store"
)

// minorInspectionRules is the version that added /v1/inspection_rules.
const minorInspectionRules = 96

// noInspectionRules is Ironic's text below 1.96 (404 to read, 405 to write).
const noInspectionRules = "The API version does not allow inspection rules"

// ruleFields are the keys of an inspection rule document, in Ironic's
// order (object_to_dict: timestamps, uuid, the fields, links).
var ruleFields = []docField[model.InspectionRule]{
	{"created_at", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.timestamp(r.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.timestamp(r.UpdatedAt) }},
	{"uuid", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.str(r.UUID) }},
	{"description", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.strOrNull(r.Description) }},
	{"priority", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.integer(int64(r.Priority)) }},
	{"sensitive", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.boolean(r.Sensitive) }},
	{"phase", 1, func(w *jw, _ *call, r *model.InspectionRule) { w.str(r.Phase) }},
	{"conditions", 1, func(w *jw, _ *call, r *model.InspectionRule) { writeOperations(w, r, r.Conditions, true) }},
	{"actions", 1, func(w *jw, _ *call, r *model.InspectionRule) { writeOperations(w, r, r.Actions, false) }},
	{"links", 1, func(w *jw, rc *call, r *model.InspectionRule) { rc.links(w, "inspection_rules", r.UUID) }},
}

// defaultRuleFields are Ironic's DEFAULT_RETURN_FIELDS of a list.
var defaultRuleFields = []string{"uuid", "priority", "phase", "description"}

// unsortableRuleKeys are the fields Ironic refuses to sort on.
var unsortableRuleKeys = []string{"actions", "conditions"}

// rulePatchFields are the fields a PATCH may change.
var rulePatchFields = []string{"description", "priority", "sensitive", "phase", "conditions", "actions"}

func (hs recordAPI) inspectionRuleRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listInspectionRules, rule("baremetal:inspection_rule:get")},
		"POST":   {hs.createInspectionRule, rule("baremetal:inspection_rule:create")},
		"DELETE": {hs.deleteInspectionRules, rule("baremetal:inspection_rule:delete")}},
		"/v1/inspection_rules")
	s.handle(endpoint{"GET": {hs.getInspectionRule, rule("baremetal:inspection_rule:get")},
		"PATCH":  {hs.patchInspectionRule, rule("baremetal:inspection_rule:update")},
		"DELETE": {hs.deleteInspectionRule, rule("baremetal:inspection_rule:delete")}},
		"/v1/inspection_rules/{rule}")
}

func (hs recordAPI) inspectionRulesAllowed(rc *call) error {
	return rc.resourceAllowed(minorInspectionRules, noInspectionRules)
}

// writeInspectionRule writes a rule (all fields, or the requested ones
// plus links). A sensitive rule's conditions and actions are null, as
// Ironic's rules_sanitize.
func (hs recordAPI) writeInspectionRule(rc *call, w *jw, r *model.InspectionRule, fields []string) {
	writeDoc(w, rc, r, ruleFields, fields)
}

// writeOperations is Ironic's convert_conditions / convert_actions of
// rule r's list: op and args, and loop (with multiple, "any" by default,
// for a condition) when there is one; null for a sensitive rule.
func writeOperations(w *jw, r *model.InspectionRule, list []model.JSON, conditions bool) {
	if r.Sensitive {
		w.null()
		return
	}
	w.arr()
	for _, o := range list {
		w.obj()
		w.key("op")
		w.any(o["op"])
		w.key("args")
		w.maskedValue("", maskRuleArgs(o["args"]))
		if l := o["loop"]; truthy(l) {
			w.key("loop")
			w.maskedValue("", maskRuleArgs(l))
			if conditions {
				mu := o["multiple"]
				if mu == nil {
					mu = "any"
				}
				w.key("multiple")
				w.any(mu)
			}
		}
		w.endObj()
	}
	w.endArr()
}

// maskRuleArgs hides the value an action writes to a secret path
// ({"path": "/driver_info/redfish_password", "value": ...}, the positional
// ["/driver_info/...password", ...], and such loop items); the writer then
// masks secret keys and strings as everywhere (Anvil's rule: Ironic shows
// them unless the rule is sensitive).
func maskRuleArgs(v any) any {
	secretPath := func(p any) bool {
		s, ok := p.(string)
		return ok && secret.Path(strings.ReplaceAll(s, ".", "/"))
	}
	switch x := v.(type) {
	case map[string]any:
		if _, has := x["value"]; has && secretPath(x["path"]) {
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = e
			}
			out["value"] = secretMask
			return out
		}
	case []any:
		if len(x) >= 2 && secretPath(x[0]) {
			out := append([]any(nil), x...)
			out[1] = secretMask
			return out
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskRuleArgs(e)
		}
		return out
	}
	return v
}

// ruleIdent checks a rule UUID from the path (the schema's format: uuid).
func ruleIdent(raw string) (string, error) {
	if !isUUIDLike(raw) {
		return "", invalid("Schema error: %s is not a 'uuid'", maskedRepr(raw))
	}
	return canonicalUUID(raw), nil
}

func (hs recordAPI) loadInspectionRule(rc *call) (*model.InspectionRule, error) {
	raw := rc.r.PathValue("rule")
	id, err := ruleIdent(raw)
	if err != nil {
		return nil, err
	}
	return fetch(rc.ctx, rc.s.cfg.Catalog.InspectionRules().GetInspectionRule, id, raw, fault.NotFoundFor("Rule"))
}

// ruleID is the checked rule UUID of the path.
func (hs recordAPI) ruleID(rc *call) (string, error) { return ruleIdent(rc.r.PathValue("rule")) }

// GET /v1/inspection_rules/{rule}
func (hs recordAPI) getInspectionRule(rc *call) error {
	if err := hs.inspectionRulesAllowed(rc); err != nil {
		return err
	}
	return show(rc, false, func(fields []string) error { return rc.checkShownFields(fields, fieldNames(ruleFields)) },
		func() (*model.InspectionRule, error) { return hs.loadInspectionRule(rc) }, hs.writeInspectionRule)
}

// GET /v1/inspection_rules
func (hs recordAPI) listInspectionRules(rc *call) error {
	s := hs.s
	if err := hs.inspectionRulesAllowed(rc); err != nil {
		return err
	}
	p, err := rc.pagePrelude("marker", "limit", "sort_key", "sort_dir", "fields", "detail", "phase")
	if err != nil {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if err := checkSortKey(p.sortKey, unsortableRuleKeys, store.InspectionRuleSortKeys); err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, s.cfg.Catalog.InspectionRules().GetInspectionRule, fault.NotFoundFor("Rule")); err != nil {
		return err
	}
	fields := p.shown(defaultRuleFields, false)
	if err := checkFields(fields, fieldNames(ruleFields)); err != nil {
		return err
	}
	phase, _ := rc.param("phase")
	list, err := s.cfg.Catalog.InspectionRules().ListInspectionRules(rc.ctx, store.InspectionRuleQuery{Phase: phase, Limit: p.limit,
		Marker: p.marker, SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, "inspection_rules", list, p.limit, 512,
		func(w *jw, r *model.InspectionRule) { hs.writeInspectionRule(rc, w, r, fields) },
		func(last *model.InspectionRule) string {
			params := p.nextParams()
			if phase != "" {
				params = append(params, [2]string{"phase", phase})
			}
			return rc.nextLink("inspection_rules", params, p.limit, last.UUID)
		})
}

// POST /v1/inspection_rules
func (hs recordAPI) createInspectionRule(rc *call) error {
	s := hs.s
	if err := hs.inspectionRulesAllowed(rc); err != nil {
		return err
	}
	body, err := rc.readCreate(false)
	if err != nil {
		return err
	}
	r, err := ruleFromBody("Schema error: ", body)
	if err != nil {
		return err
	}
	if err := s.cfg.Records.CreateInspectionRule(rc.ctx, r); err != nil {
		return err
	}
	return created(rc, r, hs.writeInspectionRule, "inspection_rules", r.UUID)
}

// PATCH /v1/inspection_rules/{rule}
func (hs recordAPI) patchInspectionRule(rc *call) error {
	s := hs.s
	if err := hs.inspectionRulesAllowed(rc); err != nil {
		return err
	}
	id, ops, err := rc.readPatch(false, func() (string, error) { return hs.ruleID(rc) })
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, rulePatchFields); err != nil {
		return err
	}
	return updated(rc, id, s.cfg.Records.UpdateInspectionRule, func(r *model.InspectionRule) error {
		if r.Sensitive && unsetsSensitive(ops) {
			return invalid("Couldn't apply patch '%s'. Reason: Inspection rules cannot have the sensitive flag unset.", patchRepr(ops))
		}
		patched, err := applyPatch(rc.ctx, ruleDoc(r), ops)
		if err != nil {
			return err
		}
		for _, k := range []string{"description", "phase", "sensitive", "uuid", "conditions"} {
			if patched[k] == nil {
				delete(patched, k)
			}
		}
		nr, err := ruleFromBody("Schema error for patch: ", patched)
		if err != nil {
			return err
		}
		r.Description, r.Priority, r.Sensitive, r.Phase = nr.Description, nr.Priority, nr.Sensitive, nr.Phase
		r.Conditions, r.Actions = nr.Conditions, nr.Actions
		return nil
	}, hs.writeInspectionRule)
}

// unsetsSensitive is Ironic's check of the first /sensitive value a patch
// sets: a false one (not a removal) would unmask a sensitive rule.
func unsetsSensitive(ops []patchOp) bool {
	for _, p := range ops {
		if p.Path == "/sensitive" && (p.Op == "add" || p.Op == "replace") {
			return p.Value != nil && !truthy(p.Value)
		}
	}
	return false
}

// patchRepr is the repr of the whole patch, as Ironic's PatchError shows it.
func patchRepr(ops []patchOp) string {
	parts := make([]string, len(ops))
	for i, p := range ops {
		parts[i] = p.repr()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// DELETE /v1/inspection_rules/{rule}
func (hs recordAPI) deleteInspectionRule(rc *call) error {
	s := hs.s
	if err := hs.inspectionRulesAllowed(rc); err != nil {
		return err
	}
	return rc.remove(func() (string, error) { return hs.ruleID(rc) }, s.cfg.Records.DeleteInspectionRule)
}

// DELETE /v1/inspection_rules: every rule but the built-in ones (Anvil
// has none).
func (hs recordAPI) deleteInspectionRules(rc *call) error {
	s := hs.s
	if err := hs.inspectionRulesAllowed(rc); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	if err := s.cfg.Records.DeleteInspectionRules(rc.ctx); err != nil {
		return err
	}
	return rc.noContent()
}
