package raid

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

//go:embed schema.json
var schemaJSON []byte

// schemaProp is one logical disk property of the schema.
type schemaProp struct {
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
}

// schema is the part of schema.json the validator reads its facts from
// (property names and order, enums, descriptions).
type schema struct {
	Properties struct {
		LogicalDisks struct {
			Items struct {
				Properties map[string]schemaProp `json:"properties"`
			} `json:"items"`
		} `json:"logical_disks"`
	} `json:"properties"`
}

// loadSchema parses the embedded schema; it is valid by construction (a
// test parses it), so a failure is a build defect and panics.
func loadSchema() schema {
	var s schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		panic(fmt.Sprintf("raid: embedded schema.json: %v", err))
	}
	return s
}

// LogicalDiskProperties returns each logical disk property of the schema
// with its description (Ironic's get_logical_disk_properties).
func LogicalDiskProperties() map[string]string {
	out := map[string]string{}
	for name, p := range loadSchema().Properties.LogicalDisks.Items.Properties {
		out[name] = p.Description
	}
	return out
}

// propOrder is the order of the logical disk properties in schema.json,
// the order jsonschema visits them in (and so the order of its errors).
var propOrder = []string{"raid_level", "size_gb", "volume_name", "is_root_volume", "share_physical_disks",
	"disk_type", "interface_type", "number_of_physical_disks", "controller", "physical_disks"}

// Error is Ironic's InvalidParameterValue for a RAID configuration.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Validate checks a target RAID configuration against Ironic's schema and
// refuses more than one root volume (ironic.common.raid.validate_configuration),
// with Ironic's texts: "RAID config validation error: <jsonschema message>".
//
// Numbers are JSON numbers decoded to float64: an integral one (10.0 too)
// counts as an integer, where Ironic's Draft 4 validator refuses 10.0.
func Validate(cfg map[string]any) error {
	s := loadSchema()
	if e := bestMatch(validateRoot(s, cfg)); e != nil {
		return &Error{Msg: "RAID config validation error: " + e.msg}
	}
	roots := 0
	for _, ld := range cfg["logical_disks"].([]any) {
		if b, _ := ld.(map[string]any)["is_root_volume"].(bool); b {
			roots++
		}
	}
	if roots > 1 {
		return &Error{Msg: fmt.Sprintf("Raid config cannot have more than one root volume. %d root volumes were specified", roots)}
	}
	return nil
}

// verr is one jsonschema ValidationError: what best_match ranks it by
// (the depth of its path, its keyword, whether the instance has the type
// its schema names) and, for anyOf, the errors of every branch.
type verr struct {
	depth       int
	keyword     string
	matchesType bool
	msg         string
	context     []verr
}

// relevance is jsonschema's by_relevance key: (-len(path), keyword not
// weak, keyword strong (none), not matches type), compared in order.
func (e verr) relevance() [4]int {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return [4]int{-e.depth, b(e.keyword != "anyOf" && e.keyword != "oneOf"), 0, b(!e.matchesType)}
}

func less(a, b [4]int) bool { return slices.Compare(a[:], b[:]) < 0 }

// bestMatch is jsonschema's best_match: the most relevant error (the first
// of equals), then down an anyOf's branches to the least relevant one
// unless the two least relevant tie.
func bestMatch(errs []verr) *verr {
	if len(errs) == 0 {
		return nil
	}
	best := errs[0]
	for _, e := range errs[1:] {
		if less(best.relevance(), e.relevance()) {
			best = e
		}
	}
	for len(best.context) > 0 {
		ctx := slices.Clone(best.context)
		slices.SortStableFunc(ctx, func(a, b verr) int {
			ra, rb := a.relevance(), b.relevance()
			return slices.Compare(ra[:], rb[:])
		})
		if len(ctx) >= 2 && ctx[0].relevance() == ctx[1].relevance() {
			return &best
		}
		best = ctx[0]
	}
	return &best
}

func validateRoot(s schema, cfg map[string]any) []verr {
	var errs []verr
	if lds, ok := cfg["logical_disks"]; ok {
		errs = append(errs, validateLogicalDisks(s, lds)...)
	}
	if _, ok := cfg["logical_disks"]; !ok {
		errs = append(errs, required(0, "logical_disks"))
	}
	if e, ok := additional(0, cfg, []string{"logical_disks"}); ok {
		errs = append(errs, e)
	}
	return errs
}

func validateLogicalDisks(s schema, v any) []verr {
	list, ok := v.([]any)
	if !ok {
		return []verr{typeErr(1, v, "array")}
	}
	var errs []verr
	for _, item := range list {
		errs = append(errs, validateLogicalDisk(s, item)...)
	}
	if len(list) < 1 {
		errs = append(errs, verr{depth: 1, keyword: "minItems", matchesType: true, msg: pyrepr.Repr(v) + " is too short"})
	}
	return errs
}

func validateLogicalDisk(s schema, v any) []verr {
	ld, ok := v.(map[string]any)
	if !ok {
		return []verr{typeErr(2, v, "object")}
	}
	props := s.Properties.LogicalDisks.Items.Properties
	var errs []verr
	for _, name := range propOrder {
		val, ok := ld[name]
		if !ok {
			continue
		}
		const d = 3
		switch name {
		case "raid_level", "disk_type", "interface_type":
			errs = append(errs, stringEnum(d, val, props[name].Enum)...)
		case "size_gb":
			errs = append(errs, sizeGB(d, val)...)
		case "volume_name", "controller":
			if !isType(val, "string") {
				errs = append(errs, typeErr(d, val, "string"))
			}
		case "is_root_volume", "share_physical_disks":
			if !isType(val, "boolean") {
				errs = append(errs, typeErr(d, val, "boolean"))
			}
		case "number_of_physical_disks":
			errs = append(errs, intMin(d, val, 0, true)...)
		case "physical_disks":
			errs = append(errs, physicalDisks(d, val)...)
		}
	}
	for _, name := range []string{"raid_level", "size_gb"} {
		if _, ok := ld[name]; !ok {
			errs = append(errs, required(2, name))
		}
	}
	if e, ok := additional(2, ld, propOrder); ok {
		errs = append(errs, e)
	}
	if _, ok := ld["physical_disks"]; ok {
		if _, ok := ld["controller"]; !ok {
			errs = append(errs, verr{depth: 2, keyword: "dependencies", matchesType: true,
				msg: "'controller' is a dependency of 'physical_disks'"})
		}
	}
	return errs
}

// stringEnum is {"type": "string", "enum": [...]}: both keywords run.
func stringEnum(depth int, v any, enum []string) []verr {
	var errs []verr
	if !isType(v, "string") {
		errs = append(errs, typeErr(depth, v, "string"))
	}
	if s, ok := v.(string); !ok || !slices.Contains(enum, s) {
		errs = append(errs, verr{depth: depth, keyword: "enum", matchesType: isType(v, "string"),
			msg: pyrepr.Repr(v) + " is not one of " + pyrepr.Strings(enum)})
	}
	return errs
}

// sizeGB is anyOf [{"type": "integer", "minimum": 0}, {"type": "string", "enum": ["MAX"]}].
func sizeGB(depth int, v any) []verr {
	branches := [][]verr{intMin(0, v, 0, false), stringEnum(0, v, []string{"MAX"})}
	return anyOf(depth, v, branches)
}

// physicalDisks is anyOf [{"type": "array", "items": {"type": "string"}},
// {"type": "array", "items": {"type": "object"}, "minItems": 2}].
func physicalDisks(depth int, v any) []verr {
	branch := func(itemType string, minItems int) []verr {
		list, ok := v.([]any)
		if !ok {
			return []verr{typeErr(0, v, "array")}
		}
		var errs []verr
		for _, item := range list {
			if !isType(item, itemType) {
				errs = append(errs, typeErr(1, item, itemType))
			}
		}
		if len(list) < minItems {
			errs = append(errs, verr{keyword: "minItems", matchesType: true, msg: pyrepr.Repr(v) + " is too short"})
		}
		return errs
	}
	return anyOf(depth, v, [][]verr{branch("string", 0), branch("object", 2)})
}

// anyOf fails when every branch has errors; its context is all of them,
// their depths relative to the anyOf's instance. Its schema has no type.
func anyOf(depth int, v any, branches [][]verr) []verr {
	var ctx []verr
	for _, b := range branches {
		if len(b) == 0 {
			return nil
		}
		ctx = append(ctx, b...)
	}
	return []verr{{depth: depth, keyword: "anyOf", matchesType: false,
		msg: pyrepr.Repr(v) + " is not valid under any of the given schemas", context: ctx}}
}

// intMin is {"type": "integer", "minimum": min[, "exclusiveMinimum": true]}.
func intMin(depth int, v any, min float64, exclusive bool) []verr {
	var errs []verr
	if !isType(v, "integer") {
		errs = append(errs, typeErr(depth, v, "integer"))
	}
	if f, ok := v.(float64); ok {
		if exclusive && f <= min {
			errs = append(errs, verr{depth: depth, keyword: "minimum", matchesType: isType(v, "integer"),
				msg: fmt.Sprintf("%s is less than or equal to the minimum of %s", pyrepr.Repr(v), pyrepr.Repr(min))})
		} else if !exclusive && f < min {
			errs = append(errs, verr{depth: depth, keyword: "minimum", matchesType: isType(v, "integer"),
				msg: fmt.Sprintf("%s is less than the minimum of %s", pyrepr.Repr(v), pyrepr.Repr(min))})
		}
	}
	return errs
}

func required(depth int, name string) verr {
	return verr{depth: depth, keyword: "required", matchesType: true, msg: pyrepr.Repr(name) + " is a required property"}
}

// additional is additionalProperties: false (extras sorted; Python prints
// its set in hash order).
func additional(depth int, m map[string]any, allowed []string) (verr, bool) {
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return verr{}, false
	}
	slices.Sort(extra)
	verb := "was"
	if len(extra) > 1 {
		verb = "were"
	}
	return verr{depth: depth, keyword: "additionalProperties", matchesType: true,
		msg: fmt.Sprintf("Additional properties are not allowed (%s %s unexpected)", pyrepr.QuoteAll(extra), verb)}, true
}

func typeErr(depth int, v any, typ string) verr {
	return verr{depth: depth, keyword: "type", matchesType: false, msg: pyrepr.Repr(v) + " is not of type " + pyrepr.Repr(typ)}
}

// isType is jsonschema's Draft 4 type check on a decoded JSON value
// (booleans are not numbers; an integral float64 is an integer).
func isType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return false
}
