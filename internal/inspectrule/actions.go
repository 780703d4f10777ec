package inspectrule

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// maxTraits is Ironic's MAX_TRAITS_PER_NODE.
const maxTraits = 50

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warning": slog.LevelWarn, "error": slog.LevelError, "critical": slog.LevelError + 4}

// actions is Ironic's apply_actions: each action in order, over its loop's
// items when it has one.
func (e *engine) actions(ctx context.Context, r *model.InspectionRule) error {
	for _, a := range r.Actions {
		op, _ := a["op"].(string)
		s, ok := actions[op]
		if !ok || s.refused != "" {
			return fmt.Errorf("Unsupported action: '%s'.", op)
		}
		items, _, looped := loopItems(a)
		if !looped {
			items = []any{nil}
		}
		for _, item := range items {
			args, err := e.args(s, op, a, e.scope(item, looped))
			if err != nil {
				return err
			}
			if err := e.run(ctx, op, args); err != nil {
				return err
			}
		}
	}
	return nil
}

// run executes one action (Ironic's actions.py, one case per class).
func (e *engine) run(ctx context.Context, op string, a map[string]any) error {
	n := e.t.Node
	switch op {
	case "fail":
		return hardwareFailure(pyStr(a["msg"]))
	case "log":
		return e.logAction(ctx, a)
	case "set-attribute":
		if err := setAttribute(n, a["path"], a["value"]); err != nil {
			return actionFailure(fmt.Sprintf("Failed to set attribute %s with value %s: %s", pyStr(a["path"]), pyStr(a["value"]), err))
		}
	case "extend-attribute":
		if err := extendAttribute(n, a["path"], a["value"], pyTruth(a["unique"])); err != nil {
			return actionFailure(fmt.Sprintf("Failed to extend attribute %s: %s", pyStr(a["path"]), err))
		}
	case "del-attribute":
		if err := delAttribute(n, a["path"]); err != nil {
			return actionFailure(fmt.Sprintf("Failed to delete attribute at %s: %s", pyStr(a["path"]), err))
		}
	case "set-capability":
		if err := setCapability(n, a["name"], a["value"]); err != nil {
			return actionFailure(fmt.Sprintf("Failed to set capability %s: %s", pyStr(a["name"]), err))
		}
	case "unset-capability":
		if err := unsetCapability(n, a["name"]); err != nil {
			return actionFailure(fmt.Sprintf("Failed to unset capability %s: %s", pyStr(a["name"]), err))
		}
	case "add-trait":
		name := pyStr(a["name"])
		if !slices.Contains(n.Traits, name) {
			if len(n.Traits) >= maxTraits {
				return actionFailure(fmt.Sprintf("Failed to add new trait %s: Could not add trait to node %s: "+
					"the node would have more than %d traits", name, n.UUID, maxTraits))
			}
			n.Traits = append(n.Traits, name)
		}
	case "remove-trait":
		name := pyStr(a["name"])
		if i := slices.Index(n.Traits, name); i >= 0 {
			n.Traits = slices.Delete(n.Traits, i, i+1)
		} else {
			e.log.Warn("inspection rule: trait to remove not found", "node", n.UUID, "trait", name)
		}
	case "set-plugin-data":
		if err := setNested(e.t.PluginData, a["path"], a["value"]); err != nil {
			return actionFailure(fmt.Sprintf("Failed to set plugin data at %s: %s", pyStr(a["path"]), err))
		}
	case "extend-plugin-data":
		if err := extendPluginData(e.t.PluginData, a["path"], a["value"], pyTruth(a["unique"])); err != nil {
			return actionFailure(fmt.Sprintf("Failed to extend plugin data at %s: %s", pyStr(a["path"]), err))
		}
	case "unset-plugin-data":
		found, err := unsetNested(e.t.PluginData, a["path"])
		if err != nil {
			return actionFailure(fmt.Sprintf("Failed to unset plugin data at %s: %s", pyStr(a["path"]), err))
		}
		if !found {
			e.log.Warn("inspection rule: plugin data path not found", "node", n.UUID, "path", pyStr(a["path"]))
		}
	default:
		return fmt.Errorf("Unsupported action: '%s'.", op)
	}
	return nil
}

func (e *engine) logAction(ctx context.Context, a map[string]any) error {
	level := "info"
	if l, ok := a["level"]; ok {
		s, ok := l.(string)
		if !ok {
			return fmt.Errorf("'%s' object has no attribute 'lower'", pyType(l))
		}
		level = strings.ToLower(s)
	}
	lv, ok := logLevels[level]
	if !ok {
		names := make([]string, 0, len(logLevels))
		for k := range logLevels {
			names = append(names, k)
		}
		return executionFailure(fmt.Sprintf("Invalid log level: %s. Choose from %s", level, pySetRepr(names)))
	}
	e.log.Log(ctx, lv, pyStr(a["msg"]), "node", e.t.Node.UUID, "source", "inspection rule")
	return nil
}

// pathParts is Ironic's normalize_path: slash or dot notation.
func pathParts(path any) ([]string, error) {
	p, ok := path.(string)
	if !ok {
		return nil, fmt.Errorf("'%s' object has no attribute 'split'", pyType(path))
	}
	if strings.Contains(p, "/") {
		return strings.Split(strings.Trim(p, "/"), "/"), nil
	}
	return strings.Split(p, "."), nil
}

// setdefault is Python's d.setdefault(key, def) on a value that must be a dict.
func setdefault(cur any, key string, def any) (any, error) {
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("'%s' object has no attribute 'setdefault'", pyType(cur))
	}
	if v, ok := m[key]; ok {
		return v, nil
	}
	m[key] = def
	return def, nil
}

// attrBase reads the node field a path starts with (Python's getattr).
func attrBase(doc map[string]any, field string) (any, error) {
	v, ok := doc[field]
	if !ok {
		return nil, fmt.Errorf("'Node' object has no attribute %s", pyrepr.Repr(field))
	}
	return v, nil
}

// setAttribute is Ironic's SetAttributeAction.
func setAttribute(n *model.Node, path, value any) error {
	parts, err := pathParts(path)
	if err != nil {
		return err
	}
	doc, err := nodeDoc(n)
	if err != nil {
		return err
	}
	if len(parts) == 1 {
		doc[parts[0]] = value
		return writeDoc(n, doc, parts[0])
	}
	cur, err := attrBase(doc, parts[0])
	if err != nil {
		return err
	}
	for _, p := range parts[1 : len(parts)-1] {
		if cur, err = setdefault(cur, p, map[string]any{}); err != nil {
			return err
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return fmt.Errorf("'%s' object does not support item assignment", pyType(cur))
	}
	m[parts[len(parts)-1]] = value
	return writeDoc(n, doc, parts[0])
}

// extendAttribute is Ironic's ExtendAttributeAction.
func extendAttribute(n *model.Node, path, value any, unique bool) error {
	parts, err := pathParts(path)
	if err != nil {
		return err
	}
	doc, err := nodeDoc(n)
	if err != nil {
		return err
	}
	var cur any
	var parent map[string]any
	last := parts[len(parts)-1]
	if len(parts) == 1 {
		var ok bool
		if cur, ok = doc[parts[0]]; !ok {
			cur = []any{} // Python's getattr default; writeDoc refuses the field
		}
		parent = doc
	} else {
		c, err := attrBase(doc, parts[0])
		if err != nil {
			return err
		}
		for _, p := range parts[1 : len(parts)-1] {
			if c, err = setdefault(c, p, map[string]any{}); err != nil {
				return err
			}
		}
		if cur, err = setdefault(c, last, []any{}); err != nil {
			return err
		}
		parent = c.(map[string]any)
	}
	list, ok := cur.([]any)
	if !ok {
		return actionFailure(fmt.Sprintf("Cannot extend non-list attribute %s with value %s", pyStr(path), pyStr(value)))
	}
	if !unique || !slices.ContainsFunc(list, func(v any) bool { return pyEqual(v, value) }) {
		list = append(list, value)
	}
	parent[last] = list
	return writeDoc(n, doc, parts[0])
}

// delAttribute is Ironic's DelAttributeAction: a whole field is unset; a
// key inside one must exist.
func delAttribute(n *model.Node, path any) error {
	parts, err := pathParts(path)
	if err != nil {
		return err
	}
	doc, err := nodeDoc(n)
	if err != nil {
		return err
	}
	cur, err := attrBase(doc, parts[0])
	if err != nil {
		return err
	}
	if len(parts) == 1 {
		doc[parts[0]] = nil
		return writeDoc(n, doc, parts[0])
	}
	for _, p := range parts[1 : len(parts)-1] {
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("'%s' object is not subscriptable", pyType(cur))
		}
		if cur, ok = m[p]; !ok {
			return fmt.Errorf("%s", pyrepr.Repr(p))
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return fmt.Errorf("'%s' object doesn't support item deletion", pyType(cur))
	}
	last := parts[len(parts)-1]
	if _, ok := m[last]; !ok {
		return fmt.Errorf("%s", pyrepr.Repr(last))
	}
	delete(m, last)
	return writeDoc(n, doc, parts[0])
}

// setCapability is Ironic's add_node_capability: "name:value" appended to
// properties/capabilities (a duplicate name is appended too).
func setCapability(n *model.Node, name, value any) error {
	k, ok1 := name.(string)
	v, ok2 := value.(string)
	switch {
	case !ok1:
		return fmt.Errorf("sequence item 0: expected str instance, %s found", pyType(name))
	case !ok2:
		return fmt.Errorf("sequence item 1: expected str instance, %s found", pyType(value))
	}
	if n.Properties == nil {
		n.Properties = model.JSON{}
	}
	newCap := k + ":" + v
	if caps, _ := n.Properties["capabilities"].(string); caps != "" {
		newCap = caps + "," + newCap
	}
	n.Properties["capabilities"] = newCap
	return nil
}

// unsetCapability is Ironic's remove_node_capability.
func unsetCapability(n *model.Node, name any) error {
	if n.Properties == nil {
		n.Properties = model.JSON{}
	}
	caps := ""
	if v, ok := n.Properties["capabilities"]; ok {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("'%s' object has no attribute 'split'", pyType(v))
		}
		caps = s
	}
	prefix := pyStr(name) + ":"
	var kept []string
	for _, c := range strings.Split(caps, ",") {
		if !strings.HasPrefix(c, prefix) {
			kept = append(kept, c)
		}
	}
	n.Properties["capabilities"] = strings.Join(kept, ",")
	return nil
}

// dotted is a plugin data path: dots only (Ironic's update_nested_dict).
func dotted(path any) ([]string, error) {
	p, ok := path.(string)
	if !ok {
		return nil, fmt.Errorf("'%s' object has no attribute 'split'", pyType(path))
	}
	return strings.Split(p, "."), nil
}

// setNested is Ironic's update_nested_dict.
func setNested(d map[string]any, path, value any) error {
	keys, err := dotted(path)
	if err != nil {
		return err
	}
	var cur any = d
	for _, k := range keys[:len(keys)-1] {
		if cur, err = setdefault(cur, k, map[string]any{}); err != nil {
			return err
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return fmt.Errorf("'%s' object does not support item assignment", pyType(cur))
	}
	m[keys[len(keys)-1]] = value
	return nil
}

// extendPluginData is Ironic's ExtendPluginDataAction: a missing or falsy
// value starts a new list.
func extendPluginData(d map[string]any, path, value any, unique bool) error {
	keys, err := dotted(path)
	if err != nil {
		return err
	}
	var cur any = d
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			cur = nil
			break
		}
		if cur, ok = m[k]; !ok {
			break
		}
	}
	if !pyTruth(cur) {
		cur = []any{}
	}
	list, ok := cur.([]any)
	if !ok {
		return fmt.Errorf("'%s' object has no attribute 'append'", pyType(cur))
	}
	if !unique || !slices.ContainsFunc(list, func(v any) bool { return pyEqual(v, value) }) {
		list = append(list, value)
	}
	return setNested(d, path, list)
}

// unsetNested is Ironic's _unset_nested_dict, quirks included: removing
// the last key of a nested dict removes that dict from its parent, and
// the only key of the top level stays.
func unsetNested(d map[string]any, path any) (bool, error) {
	keys, err := dotted(path)
	if err != nil {
		return false, err
	}
	var cur any = d
	for _, k := range keys[:len(keys)-1] {
		m, ok := cur.(map[string]any)
		if !ok {
			return false, nil
		}
		if cur, ok = m[k]; !ok {
			return false, nil
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return false, nil
	}
	target := keys[len(keys)-1]
	if _, ok := m[target]; !ok {
		return false, nil
	}
	if len(m) == 1 {
		if len(keys) > 1 {
			parent := d
			for _, k := range keys[:len(keys)-2] {
				parent = parent[k].(map[string]any)
			}
			delete(parent, keys[len(keys)-2])
		}
		return true, nil
	}
	delete(m, target)
	return true, nil
}
