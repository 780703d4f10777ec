package api

import (
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/inspectrule"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Ironic's inspection rule request schema (ironic/api/schemas/v1/
// inspection_rule.py, create_request_body), checked the way jsonschema's
// best_match reports it: the shallowest error wins, the first found among
// equals (the schema's keyword and property order).

// ruleProps are the schema's top-level properties, in its order.
var ruleProps = []string{"actions", "conditions", "description", "phase", "priority", "sensitive", "uuid"}

// schemaErrs keeps the best error found so far.
type schemaErrs struct {
	depth int
	msg   string
}

func (e *schemaErrs) add(depth int, format string, args ...any) {
	if e.msg == "" || depth < e.depth {
		e.depth, e.msg = depth, fmt.Sprintf(format, args...)
	}
}

func typesText(types ...string) string { return pyrepr.QuoteAll(types) }

// isType is jsonschema's type check of a decoded JSON value.
func isType(v any, t string) bool {
	switch t {
	case "integer":
		jt := jsonType(v)
		return jt == "integer"
	case "number":
		jt := jsonType(v)
		return jt == "integer" || jt == "number"
	}
	return jsonType(v) == t
}

func checkTypes(e *schemaErrs, depth int, v any, types ...string) bool {
	for _, t := range types {
		if isType(v, t) {
			return true
		}
	}
	e.add(depth, "%s is not of type %s", maskedRepr(v), typesText(types...))
	return false
}

func checkMaxLen(e *schemaErrs, depth int, v any, max int) {
	if s, ok := v.(string); ok && len([]rune(s)) > max {
		e.add(depth, "%s is too long", maskedRepr(s))
	}
}

// checkOperations checks the actions or conditions array.
func checkOperations(e *schemaErrs, v any, ops []string, minItems int, conditions bool) {
	if !checkTypes(e, 1, v, "array") {
		return
	}
	list := v.([]any)
	if len(list) < minItems {
		e.add(1, "[] should be non-empty")
	}
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			e.add(2, "%s is not of type 'object'", maskedRepr(item))
			continue
		}
		for _, r := range []string{"op", "args"} {
			if _, ok := m[r]; !ok {
				e.add(2, "'%s' is a required property", r)
			}
		}
		if op, ok := m["op"]; ok && !slices.ContainsFunc(ops, func(o string) bool { return o == op }) {
			e.add(3, "%s is not one of %s", maskedRepr(op), pyrepr.Strings(ops))
		}
		if a, ok := m["args"]; ok {
			checkTypes(e, 3, a, "array", "object")
		}
		if mu, ok := m["multiple"]; ok && conditions && !slices.ContainsFunc(multiples, func(o string) bool { return o == mu }) {
			e.add(3, "%s is not one of %s", maskedRepr(mu), pyrepr.Strings(multiples))
		}
		if l, ok := m["loop"]; ok {
			checkTypes(e, 3, l, "array", "object")
		}
	}
}

var multiples = []string{"any", "all", "first", "last"}

// conditionOps is the schema's enum of condition operators: each operator
// and its negation.
func conditionOps() []string {
	ops := inspectrule.OperatorNames()
	for _, o := range inspectrule.OperatorNames() {
		ops = append(ops, "!"+o)
	}
	return ops
}

// ruleFromBody checks a rule document against the schema (errors start
// with prefix: "Schema error: " for a POST, "Schema error for patch: "
// for a patched rule) and builds the rule; then Ironic's validate_rule.
func ruleFromBody(prefix string, v any) (*model.InspectionRule, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("%s%s is not of type 'object'", prefix, maskedRepr(v))
	}
	e := &schemaErrs{}
	for _, p := range ruleProps {
		val, ok := doc[p]
		if !ok {
			continue
		}
		switch p {
		case "actions":
			checkOperations(e, val, inspectrule.ActionNames(), 1, false)
		case "conditions":
			checkOperations(e, val, conditionOps(), 0, true)
		case "description":
			if checkTypes(e, 1, val, "string", "null") {
				checkMaxLen(e, 1, val, 255)
			}
		case "phase":
			if checkTypes(e, 1, val, "string", "null") {
				checkMaxLen(e, 1, val, 16)
			}
		case "priority":
			if checkTypes(e, 1, val, "integer") && val.(float64) < 0 {
				e.add(1, "%s is less than the minimum of 0", maskedRepr(val))
			}
		case "sensitive":
			checkTypes(e, 1, val, "boolean", "null")
		case "uuid":
			checkTypes(e, 1, val, "string", "null")
		}
	}
	if _, ok := doc["actions"]; !ok {
		e.add(0, "'actions' is a required property")
	}
	var extra []string
	for k := range doc {
		if !slices.Contains(ruleProps, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		// After required in the schema's order: at the same depth, later.
		if e.msg == "" || e.depth > 0 {
			e.add(-1, "%s", additionalText(extra))
		}
	}
	if e.msg != "" {
		return nil, invalid("%s%s", prefix, e.msg)
	}
	r := &model.InspectionRule{Phase: inspectrule.Phases[0]}
	if s, ok := doc["description"].(string); ok {
		r.Description = s
	}
	if s, ok := doc["phase"].(string); ok {
		r.Phase = s
	}
	if p, ok := doc["priority"].(float64); ok {
		r.Priority = int(p)
	}
	if b, ok := doc["sensitive"].(bool); ok {
		r.Sensitive = b
	}
	if err := docUUIDs(doc, "uuid"); err != nil {
		return nil, err
	}
	r.UUID = docString(doc["uuid"])
	r.Conditions = operations(doc["conditions"], true)
	r.Actions = operations(doc["actions"], false)
	if err := inspectrule.Validate(r); err != nil {
		return nil, invalid("%s", err.Error())
	}
	return r, nil
}

// operations keeps the fields of each action or condition Ironic reads:
// op, args, loop (and multiple for a condition).
func operations(v any, conditions bool) []model.JSON {
	list, _ := v.([]any)
	out := make([]model.JSON, 0, len(list))
	for _, item := range list {
		m := item.(map[string]any)
		op := model.JSON{"op": m["op"], "args": m["args"]}
		if l, ok := m["loop"]; ok {
			op["loop"] = l
		}
		if mu, ok := m["multiple"]; ok && conditions {
			op["multiple"] = mu
		}
		out = append(out, op)
	}
	return out
}

// ruleDoc is a rule as the document a PATCH applies to (Ironic's as_dict
// pruned to the schema's properties).
func ruleDoc(r *model.InspectionRule) map[string]any {
	ops := func(list []model.JSON) []any {
		out := make([]any, len(list))
		for i, o := range list {
			out[i] = map[string]any(o)
		}
		return out
	}
	return map[string]any{"uuid": r.UUID, "description": nilIfEmpty(r.Description), "priority": float64(r.Priority),
		"sensitive": r.Sensitive, "phase": r.Phase, "conditions": ops(r.Conditions), "actions": ops(r.Actions)}
}
