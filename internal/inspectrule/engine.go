package inspectrule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/anvil-metal/anvil/internal/model"
)

// Target is what rules act on: the node (changed in place; the caller
// saves it) and the plugin data (changed in place; the caller stores it).
type Target struct {
	Node       *model.Node
	PluginData map[string]any
	Log        *slog.Logger
}

// Failure is an inspection failed by a rule; its text is Ironic's str()
// of the exception (HardwareInspectionFailure and its subclasses, or the
// IronicException wrapping anything else).
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

func hardwareFailure(msg string) error {
	return &Failure{Msg: "Failed to inspect hardware. Reason: " + msg}
}
func executionFailure(msg string) error {
	return &Failure{Msg: "Inspection rule execution failed. Reason: " + msg}
}
func actionFailure(msg string) error {
	return &Failure{Msg: "Inspection rule action execution failed. Reason: " + msg}
}
func conditionFailure(msg string) error {
	return &Failure{Msg: "Inspection rule condition check failed. Reason: " + msg}
}

// Apply is Ironic's apply_rules: rules run by descending priority (ties in
// the order given, the store's id order); a rule whose conditions all hold
// runs its actions in order. The first error fails the whole inspection:
// a *Failure, with Ironic's text. Anvil masks the inventory's and plugin
// data's secrets from every rule (Ironic's default mask_secrets=always).
func Apply(ctx context.Context, rules []*model.InspectionRule, inventory map[string]any, t *Target) error {
	if t.PluginData == nil {
		t.PluginData = map[string]any{}
	}
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ordered := slices.Clone(rules)
	slices.SortStableFunc(ordered, func(a, b *model.InspectionRule) int { return b.Priority - a.Priority })
	e := &engine{t: t, inventory: inventory, log: log}
	for _, r := range ordered {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := e.conditions(r)
		if err == nil && ok {
			log.Info("applying inspection rule", "node", t.Node.UUID, "rule", r.UUID)
			err = e.actions(ctx, r)
		}
		if err != nil {
			var f *Failure
			if errors.As(err, &f) {
				return err
			}
			return &Failure{Msg: fmt.Sprintf("Failed to apply rule %s to node %s: %v", r.UUID, t.Node.UUID, err)}
		}
	}
	return nil
}

type engine struct {
	t         *Target
	inventory map[string]any
	log       *slog.Logger
}

// scope builds the names a replacement field sees, the node as it is now.
func (e *engine) scope(item any, inLoop bool) *scope {
	return &scope{
		node: func() nodeObj {
			doc, err := nodeDoc(e.t.Node)
			if err != nil {
				return nodeObj{}
			}
			return nodeObj(doc)
		},
		inventory: e.inventory, pluginData: e.t.PluginData, item: item, inLoop: inLoop,
	}
}

// args is Ironic's _process_args: the arguments by name, the formatted
// ones interpolated (all of them inside a loop).
func (e *engine) args(s spec, op string, operation model.JSON, sc *scope) (map[string]any, error) {
	a, err := s.normalize(argsOf(operation))
	if err != nil {
		return nil, err
	}
	delete(a, "plugin_data") // passed beside the arguments
	for k, v := range a {
		if sc.inLoop || slices.Contains(s.formatted, k) {
			a[k] = sc.interpolate(v, op)
		}
	}
	return a, nil
}

// loopItems returns an operation's loop: its items, whether it is a dict
// (one iteration with the dict as item), and whether there is one.
func loopItems(operation model.JSON) (items []any, dict, ok bool) {
	switch l := operation["loop"].(type) {
	case []any:
		return l, false, len(l) > 0
	case map[string]any:
		return []any{l}, true, len(l) > 0
	}
	return nil, false, false
}

// conditions is Ironic's check_conditions: all must hold.
func (e *engine) conditions(r *model.InspectionRule) (bool, error) {
	for _, c := range r.Conditions {
		opText, _ := c["op"].(string)
		op, inverted, err := parseInverted(opText)
		if err != nil {
			return false, err
		}
		s, ok := operators[op]
		if !ok {
			return false, fmt.Errorf("Unsupported operator: '%s'.", op)
		}
		var res bool
		if items, dict, looped := loopItems(c); looped {
			res, err = e.checkLoop(s, op, inverted, c, items, dict)
		} else {
			res, err = e.check(s, op, inverted, c, e.scope(nil, false))
		}
		if err != nil {
			return false, err
		}
		if !res {
			e.log.Debug("inspection rule skipped: a condition failed", "node", e.t.Node.UUID, "rule", r.UUID, "op", opText)
			return false, nil
		}
	}
	return true, nil
}

// checkLoop is Ironic's check_with_loop and its multiple: any, all, first
// (true at the first true item, else the first item's result) or last.
func (e *engine) checkLoop(s spec, op string, inverted bool, c model.JSON, items []any, dict bool) (bool, error) {
	multiple, _ := c["multiple"].(string)
	if multiple == "" {
		multiple = "any"
	}
	var results []bool
	for _, item := range items {
		res, err := e.check(s, op, inverted, c, e.scope(item, true))
		if err != nil {
			return false, err
		}
		if dict && (multiple == "first" || multiple == "last") {
			return res, nil
		}
		results = append(results, res)
		if multiple == "first" && res {
			return true, nil
		}
		if multiple == "last" {
			results = []bool{res}
		}
	}
	switch multiple {
	case "any":
		return slices.Contains(results, true), nil
	case "all":
		return !slices.Contains(results, false), nil
	}
	return len(results) > 0 && results[0], nil
}

// check is Ironic's check_condition: the operator on the processed
// arguments, negated by a leading "!".
func (e *engine) check(s spec, op string, inverted bool, c model.JSON, sc *scope) (bool, error) {
	a, err := e.args(s, op, c, sc)
	if err != nil {
		return false, err
	}
	if sc.inLoop && slices.Contains(s.optional, "force_strings") {
		a["force_strings"] = true // interpolated items are strings
	}
	res, err := evaluate(op, a)
	if err != nil {
		return false, err
	}
	return res != inverted, nil
}
