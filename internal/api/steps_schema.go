package api

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// stepInterfaces is the enum of the interface of a clean or service step
// (Ironic's CLEANING_INTERFACE_PRIORITY keys, in its order).
var stepInterfaces = []string{"vendor", "power", "management", "firmware", "deploy", "bios", "raid"}

// stepSchema is one of Ironic's schemas of a clean-kind step (its
// interface one of stepInterfaces, step a non-empty string, args an
// object, order a non-negative integer or a string of digits): the keys a
// step may have and those it must.
type stepSchema struct {
	keys, required []string
}

var (
	// userSteps is _STEPS_SCHEMA: clean_steps and service_steps.
	userSteps = stepSchema{
		keys:     []string{"interface", "step", "args", "order", "execute_on_child_nodes", "limit_child_node_execution"},
		required: []string{"interface", "step"},
	}
	// runbookSteps is RUNBOOK_STEP_SCHEMA: the steps of a runbook.
	runbookSteps = stepSchema{
		keys:     []string{"interface", "step", "args", "order"},
		required: []string{"interface", "step", "order"},
	}
)

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
		if err := userSteps.check(s, fail); err != nil {
			return err
		}
	}
	return nil
}

// check validates one step, reporting the first error through fail, in
// the order jsonschema reports them.
func (sc stepSchema) check(s map[string]any, fail func(format string, args ...any) error) error {
	for _, r := range sc.required {
		if _, ok := s[r]; !ok {
			return fail("'%s' is a required property", r)
		}
	}
	var extra []string
	for k := range s {
		if !slices.Contains(sc.keys, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return fail("%s", additionalText(extra))
	}
	if iface, ok := s["interface"].(string); !ok || !slices.Contains(stepInterfaces, iface) {
		return fail("%s is not one of %s", maskedRepr(s["interface"]), pyrepr.Strings(stepInterfaces))
	}
	step, ok := s["step"].(string)
	if !ok {
		return fail("%s is not of type 'string'", maskedRepr(s["step"]))
	}
	if step == "" {
		return fail("'' should be non-empty")
	}
	if a, ok := s["args"]; ok {
		if _, isObj := a.(map[string]any); !isObj {
			return fail("%s is not of type 'object'", maskedRepr(a))
		}
	}
	if o, ok := s["order"]; ok {
		switch v := o.(type) {
		case float64:
			if v != float64(int64(v)) {
				return fail("%s is not valid under any of the given schemas", maskedRepr(o))
			}
			if v < 0 {
				return fail("%s is less than the minimum of 0", maskedRepr(o))
			}
		case string:
			if !digits.MatchString(v) {
				return fail("%s is not valid under any of the given schemas", maskedRepr(o))
			}
		default:
			return fail("%s is not valid under any of the given schemas", maskedRepr(o))
		}
	}
	if v, ok := s["execute_on_child_nodes"]; ok {
		if _, isBool := v.(bool); !isBool {
			return fail("%s is not of type 'boolean'", maskedRepr(v))
		}
	}
	if v, ok := s["limit_child_node_execution"]; ok {
		if _, isList := v.([]any); !isList {
			return fail("%s is not of type 'array'", maskedRepr(v))
		}
	}
	return nil
}

// duplicateSteps is Ironic's duplicate_steps validator of a deploy
// template or runbook (noun, as its release words it): no interface and
// step twice. pairs are the steps' interface and step.
func duplicateSteps(pairs [][2]string, noun string) error {
	seen := map[[2]string]int{}
	var dups []string
	for _, k := range pairs {
		if seen[k]++; seen[k] == 2 {
			dups = append(dups, fmt.Sprintf("interface: %s, step: %s", k[0], k[1]))
		}
	}
	if len(dups) == 0 {
		return nil
	}
	return invalid("Deploy template invalid: Duplicate deploy steps. A %s cannot have multiple deploy "+
		"steps with the same interface and step. Duplicates: %s.", noun, strings.Join(dups, "; "))
}

// step writes one step of a deploy template or runbook: interface, step,
// args (masked as Ironic's step_sanitize does) and its priority or order.
func (w *jw) step(iface, name string, args model.JSON, rankKey string, rank int) {
	w.obj()
	w.key("interface")
	w.str(iface)
	w.key("step")
	w.str(name)
	w.key("args")
	w.masked(args)
	w.key(rankKey)
	w.integer(int64(rank))
	w.endObj()
}
