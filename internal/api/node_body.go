package api

import (
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// nodeProp is one property of a JSON schema (Ironic's node_schema() in
// ironic/api/controllers/v1/node.py and the other resources' schemas).
type nodeProp struct {
	name   string
	types  []string // jsonschema types
	maxLen int
	minLen int
}

var (
	tStr     = []string{"string", "null"}
	tStrBool = []string{"string", "boolean", "null"}
	tObj     = []string{"object", "null"}
)

func schemaError(what, format string, args ...any) error {
	return fault.New(fault.Invalid, "Schema error for "+what+": "+format, args...)
}

// validateObject checks doc against props the way jsonschema's best match
// reports it: the required property, then unknown properties, then the
// first property of the wrong type or length.
func validateObject(what string, v any, props []nodeProp, required ...string) (map[string]any, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, schemaError(what, "%s is not of type 'object'", maskedRepr(v))
	}
	for _, r := range required {
		if _, ok := doc[r]; !ok {
			return nil, schemaError(what, "'%s' is a required property", r)
		}
	}
	var extra []string
	for k := range doc {
		if !slices.ContainsFunc(props, func(p nodeProp) bool { return p.name == k }) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return nil, additionalProps(what, extra)
	}
	for _, p := range props {
		val, ok := doc[p.name]
		if !ok {
			continue
		}
		if err := checkProp(what, p, val); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func additionalProps(what string, extra []string) error {
	return schemaError(what, "%s", additionalText(extra))
}

// additionalText is jsonschema's additionalProperties message (extra is
// sorted in place).
func additionalText(extra []string) string {
	slices.Sort(extra)
	verb := "was"
	if len(extra) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("Additional properties are not allowed (%s %s unexpected)", pyrepr.QuoteAll(extra), verb)
}

func checkProp(what string, p nodeProp, val any) error {
	t := jsonType(val)
	if t == "integer" && !slices.Contains(p.types, "integer") {
		t = "number" // an integer is a number; "integer" only where a schema asks for it
	}
	if !slices.Contains(p.types, t) {
		return schemaError(what, "%s is not of type %s", maskedRepr(val), pyrepr.QuoteAll(p.types))
	}
	if s, ok := val.(string); ok {
		n := len([]rune(s))
		if p.maxLen > 0 && n > p.maxLen {
			return schemaError(what, "%s is too long", maskedRepr(val))
		}
		if n < p.minLen {
			return schemaError(what, "%s is too short", maskedRepr(val))
		}
	}
	return nil
}

// runExtraChecks applies NODE_VALIDATE_EXTRA: boolean words become
// booleans, UUIDs are checked and put in canonical form.
func (t *nodeTable) runExtraChecks(doc map[string]any) error {
	for _, f := range t.extra {
		val, ok := doc[f.name]
		if !ok || val == nil {
			continue
		}
		if slices.Contains(f.prop.types, "boolean") {
			b, err := argBool(f.name, val)
			if err != nil {
				return err
			}
			doc[f.name] = *b
			continue
		}
		s, _ := val.(string)
		if !isUUIDLike(s) {
			return invalid("Expected UUID for %s: %s", f.name, pyrepr.Str(val))
		}
		doc[f.name] = canonicalUUID(s)
	}
	return nil
}

// fieldMinor is the version that introduced a node field (1 for the
// original ones).
func fieldMinor(name string) int { return nodeFields.minor(name) }

// rejectNewerFields is Ironic's reject_fields_in_newer_versions for a
// create body: a field the request's version does not know must be absent
// or empty.
func rejectNewerFields(doc map[string]any, minor int) error {
	for k, v := range doc {
		if fieldMinor(k) <= minor {
			continue
		}
		switch {
		case k == "conductor_group" && (v == nil || v == ""):
		case v == nil:
		default:
			return notAcceptable()
		}
	}
	return nil
}

// nodeDoc is the patchable document of n (nodeTable.doc).
func nodeDoc(n *model.Node) map[string]any { return nodeFields.doc(n) }

func docString(v any) string {
	s, _ := v.(string)
	return s
}

func docBool(v any) bool {
	b, _ := v.(bool)
	return b
}

func docBoolPtr(v any) *bool {
	b, ok := v.(bool)
	if !ok {
		return nil
	}
	return &b
}

func docMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
