package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/internal/store"
)

// minorInspectionRules is the version that added /v1/inspection_rules.
const minorInspectionRules = 96

// noInspectionRules is Ironic's text below 1.96 (404 to read, 405 to write).
const noInspectionRules = "The API version does not allow inspection rules"

// ruleFields are the keys of an inspection rule document, in Ironic's
// order (object_to_dict: timestamps, uuid, the fields, links).
var ruleFields = []string{"created_at", "updated_at", "uuid", "description", "priority", "sensitive", "phase",
	"conditions", "actions", "links"}

// defaultRuleFields are Ironic's DEFAULT_RETURN_FIELDS of a list.
var defaultRuleFields = []string{"uuid", "priority", "phase", "description"}

// unsortableRuleKeys are the fields Ironic refuses to sort on.
var unsortableRuleKeys = []string{"actions", "conditions"}

// rulePatchFields are the fields a PATCH may change.
var rulePatchFields = []string{"description", "priority", "sensitive", "phase", "conditions", "actions"}

func (s *Server) inspectionRuleRoutes() {
	s.handle(endpoint{"GET": s.listInspectionRules, "POST": s.createInspectionRule, "DELETE": s.deleteInspectionRules},
		"/v1/inspection_rules")
	s.handle(endpoint{"GET": s.getInspectionRule, "PATCH": s.patchInspectionRule, "DELETE": s.deleteInspectionRule},
		"/v1/inspection_rules/{rule}")
}

func (rc *call) inspectionRulesAllowed() error {
	if rc.minor >= minorInspectionRules {
		return nil
	}
	if rc.r.Method == "GET" {
		return fault.New(fault.NotFound, "%s", noInspectionRules).AsRouting()
	}
	return fault.New(fault.NotAllowed, "%s", noInspectionRules).AsRouting()
}

// writeInspectionRule writes a rule (all fields, or the requested ones
// plus links). A sensitive rule's conditions and actions are null, as
// Ironic's rules_sanitize.
func (rc *call) writeInspectionRule(w *jw, r *model.InspectionRule, fields []string) {
	w.obj()
	for _, f := range ruleFields {
		if fields != nil && f != "links" && !slices.Contains(fields, f) {
			continue
		}
		w.key(f)
		switch f {
		case "created_at":
			w.timestamp(r.CreatedAt)
		case "updated_at":
			w.timestamp(r.UpdatedAt)
		case "uuid":
			w.str(r.UUID)
		case "description":
			w.strOrNull(r.Description)
		case "priority":
			w.integer(int64(r.Priority))
		case "sensitive":
			w.boolean(r.Sensitive)
		case "phase":
			w.str(r.Phase)
		case "conditions", "actions":
			list := r.Actions
			if f == "conditions" {
				list = r.Conditions
			}
			if r.Sensitive {
				w.null()
				continue
			}
			writeOperations(w, list, f == "conditions")
		case "links":
			rc.links(w, "inspection_rules", r.UUID)
		}
	}
	w.endObj()
}

// writeOperations is Ironic's convert_conditions / convert_actions: op
// and args, and loop (with multiple, "any" by default, for a condition)
// when there is one.
func writeOperations(w *jw, list []model.JSON, conditions bool) {
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

// checkRuleFields is Ironic's check_for_invalid_fields for a rule.
func checkRuleFields(fields []string) error {
	var bad []string
	for _, f := range fields {
		if !slices.Contains(ruleFields, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
	}
	return nil
}

// ruleIdent checks a rule UUID from the path (the schema's format: uuid).
func ruleIdent(raw string) (string, error) {
	if !isUUIDLike(raw) {
		return "", invalid("Schema error: %s is not a 'uuid'", pyrepr.Repr(raw))
	}
	return canonicalUUID(raw), nil
}

func (rc *call) loadInspectionRule() (*model.InspectionRule, error) {
	raw := rc.r.PathValue("rule")
	id, err := ruleIdent(raw)
	if err != nil {
		return nil, err
	}
	r, err := rc.s.cfg.Store.GetInspectionRule(rc.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, conductor.InspectionRuleNotFound(raw)
	}
	return r, err
}

// GET /v1/inspection_rules/{rule}
func (s *Server) getInspectionRule(rc *call) error {
	if err := rc.inspectionRulesAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	r, err := rc.loadInspectionRule()
	if err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if err := checkRuleFields(fields); err != nil {
		return err
	}
	w := &jw{}
	rc.writeInspectionRule(w, r, fields)
	return rc.json(200, w)
}

// GET /v1/inspection_rules
func (s *Server) listInspectionRules(rc *call) error {
	if err := rc.inspectionRulesAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery("marker", "limit", "sort_key", "sort_dir", "fields", "detail", "phase"); err != nil {
		return err
	}
	p, err := rc.pageParams("id")
	if err != nil {
		return err
	}
	if err := rc.markerParam(&p); err != nil {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	if slices.Contains(unsortableRuleKeys, p.sortKey) {
		return badSortKey(p.sortKey, false)
	}
	if !slices.Contains(store.InspectionRuleSortKeys, p.sortKey) {
		return badSortKey(p.sortKey, true)
	}
	if p.marker != "" {
		if _, err := s.cfg.Store.GetInspectionRule(rc.ctx, p.marker); errors.Is(err, store.ErrNotFound) {
			return conductor.InspectionRuleNotFound(p.marker)
		} else if err != nil {
			return err
		}
	}
	fields := p.fields
	if fields == nil && (p.detail == nil || !*p.detail) {
		fields = defaultRuleFields
	}
	if err := checkRuleFields(fields); err != nil {
		return err
	}
	phase, _ := rc.param("phase")
	list, err := s.cfg.Store.ListInspectionRules(rc.ctx, store.InspectionRuleQuery{Phase: phase, Limit: p.limit,
		Marker: p.marker, SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	w := rc.s.listWriter(256 + len(list)*512)
	w.rootObj()
	w.key("inspection_rules")
	w.arr()
	for _, r := range list {
		rc.writeInspectionRule(w, r, fields)
	}
	w.endArr()
	if len(list) > 0 && len(list) == p.limit {
		params := p.nextParams()
		if phase != "" {
			params = append(params, [2]string{"phase", phase})
		}
		w.key("next")
		w.str(rc.nextLink("inspection_rules", params, p.limit, list[len(list)-1].UUID))
	}
	w.endObj()
	return rc.json(200, w)
}

// POST /v1/inspection_rules
func (s *Server) createInspectionRule(rc *call) error {
	if err := rc.inspectionRulesAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	r, err := ruleFromBody("Schema error: ", body)
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.CreateInspectionRule(rc.ctx, r); err != nil {
		return err
	}
	rc.w.Header().Set("Location", rc.link(false, "inspection_rules", r.UUID))
	w := &jw{}
	rc.writeInspectionRule(w, r, nil)
	return rc.json(201, w)
}

// PATCH /v1/inspection_rules/{rule}
func (s *Server) patchInspectionRule(rc *call) error {
	if err := rc.inspectionRulesAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	raw := rc.r.PathValue("rule")
	id, err := ruleIdent(raw)
	if err != nil {
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
	if err := checkAllowedFields(ops, rulePatchFields); err != nil {
		return err
	}
	r, err := s.cfg.Conductor.UpdateInspectionRule(rc.ctx, id, func(r *model.InspectionRule) error {
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
	})
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writeInspectionRule(w, r, nil)
	return rc.json(200, w)
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
func (s *Server) deleteInspectionRule(rc *call) error {
	if err := rc.inspectionRulesAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	raw := rc.r.PathValue("rule")
	id, err := ruleIdent(raw)
	if err != nil {
		return err
	}
	if err := s.cfg.Conductor.DeleteInspectionRule(rc.ctx, id); err != nil {
		return err
	}
	return rc.noContent()
}

// DELETE /v1/inspection_rules: every rule but the built-in ones (Anvil
// has none).
func (s *Server) deleteInspectionRules(rc *call) error {
	if err := rc.inspectionRulesAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	if err := s.cfg.Conductor.DeleteInspectionRules(rc.ctx); err != nil {
		return err
	}
	return rc.noContent()
}
