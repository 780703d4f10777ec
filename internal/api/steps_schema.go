package api

import (
	"regexp"
	"slices"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// stepInterfaces is the enum of the interface of a clean or service step
// (Ironic's CLEANING_INTERFACE_PRIORITY keys, in its order).
var stepInterfaces = []string{"vendor", "power", "management", "firmware", "deploy", "bios", "raid"}

// stepKeys are the keys a clean or service step may have.
var stepKeys = []string{"interface", "step", "args", "order", "execute_on_child_nodes", "limit_child_node_execution"}

var digits = regexp.MustCompile(`^[0-9]+$`)

// checkStepSchema validates clean_steps and service_steps against Ironic's
// _STEPS_SCHEMA, answering "Invalid <kind>: <jsonschema's message>" (400).
// deploy_steps have their own schema and are not checked here.
func checkStepSchema(name string, steps []model.JSON) error {
	if name != "clean_steps" && name != "service_steps" {
		return nil
	}
	fail := func(format string, args ...any) error {
		return invalid("Invalid %s: "+format, append([]any{name}, args...)...)
	}
	for _, s := range steps {
		for _, r := range []string{"interface", "step"} {
			if _, ok := s[r]; !ok {
				return fail("'%s' is a required property", r)
			}
		}
		var extra []string
		for k := range s {
			if !slices.Contains(stepKeys, k) {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			return fail("%s", additionalText(extra))
		}
		if iface, ok := s["interface"].(string); !ok || !slices.Contains(stepInterfaces, iface) {
			return fail("%s is not one of %s", pyrepr.Repr(s["interface"]), pyrepr.Strings(stepInterfaces))
		}
		step, ok := s["step"].(string)
		if !ok {
			return fail("%s is not of type 'string'", pyrepr.Repr(s["step"]))
		}
		if step == "" {
			return fail("'' should be non-empty")
		}
		if a, ok := s["args"]; ok {
			if _, isObj := a.(map[string]any); !isObj {
				return fail("%s is not of type 'object'", pyrepr.Repr(a))
			}
		}
		if o, ok := s["order"]; ok {
			switch v := o.(type) {
			case float64:
				if v != float64(int64(v)) {
					return fail("%s is not valid under any of the given schemas", pyrepr.Repr(o))
				}
				if v < 0 {
					return fail("%s is less than the minimum of 0", pyrepr.Repr(o))
				}
			case string:
				if !digits.MatchString(v) {
					return fail("%s is not valid under any of the given schemas", pyrepr.Repr(o))
				}
			default:
				return fail("%s is not valid under any of the given schemas", pyrepr.Repr(o))
			}
		}
		if v, ok := s["execute_on_child_nodes"]; ok {
			if _, isBool := v.(bool); !isBool {
				return fail("%s is not of type 'boolean'", pyrepr.Repr(v))
			}
		}
		if v, ok := s["limit_child_node_execution"]; ok {
			if _, isList := v.([]any); !isList {
				return fail("%s is not of type 'array'", pyrepr.Repr(v))
			}
		}
	}
	return nil
}
