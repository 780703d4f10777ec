package inspectrule

import (
	"fmt"
	"slices"
	"strings"
)

// spec is an operator's or action's signature (Ironic's __call__ after
// task): its required and optional arguments, the ones interpolated
// outside a loop (FORMATTED_ARGS), and whether it receives the plugin
// data (REQUIRES_PLUGIN_DATA, an argument named plugin_data).
type spec struct {
	required, optional, formatted []string
	pluginData                    bool
	// refused says why Anvil does not run it ("" runs).
	refused string
}

var simpleSpec = spec{required: []string{"values"}, optional: []string{"force_strings"}, formatted: []string{"values"}}
var valueSpec = spec{required: []string{"value"}, formatted: []string{"value"}}
var regexSpec = spec{required: []string{"value", "regex"}, formatted: []string{"value"}}

// operatorNames are Ironic's OPERATORS, in its order: the conditions a
// rule may use, each also negated with a leading "!". (Ironic defines le,
// ge and ne operators but does not register them; neither does Anvil:
// write !gt, !lt and !eq.)
var operatorNames = []string{"eq", "lt", "gt", "is-empty", "in-net", "matches", "contains", "one-of",
	"is-none", "is-true", "is-false"}

var operators = map[string]spec{
	"eq": simpleSpec, "lt": simpleSpec, "gt": simpleSpec,
	"is-empty": valueSpec, "is-none": valueSpec, "is-true": valueSpec, "is-false": valueSpec,
	"in-net":  {required: []string{"address", "subnet"}, formatted: []string{"address", "subnet"}},
	"matches": regexSpec, "contains": regexSpec,
	"one-of": {required: []string{"value"}, optional: []string{"values"}, formatted: []string{"value"}},
}

// actionNames are Ironic's ACTIONS, in its order.
var actionNames = []string{"fail", "log", "set-attribute", "extend-attribute", "del-attribute",
	"set-capability", "unset-capability", "add-trait", "remove-trait", "set-plugin-data",
	"extend-plugin-data", "unset-plugin-data", "set-port-attribute", "extend-port-attribute",
	"del-port-attribute", "api-call"}

const (
	refusedPort = "Anvil's inspection rules do not change ports; " +
		"set port fields through the ports API"
	refusedCall = "Anvil's inspection rules make no network calls " +
		"(Ironic's api-call sends an HTTP GET to any URL a rule names)"
)

var actions = map[string]spec{
	"fail":               {required: []string{"msg"}},
	"log":                {required: []string{"msg"}, optional: []string{"level"}, formatted: []string{"msg"}},
	"set-attribute":      {required: []string{"path", "value"}, formatted: []string{"value"}},
	"extend-attribute":   {required: []string{"path", "value"}, optional: []string{"unique"}, formatted: []string{"value"}},
	"del-attribute":      {required: []string{"path"}},
	"set-capability":     {required: []string{"name", "value"}, formatted: []string{"value"}},
	"unset-capability":   {required: []string{"name"}},
	"add-trait":          {required: []string{"name"}},
	"remove-trait":       {required: []string{"name"}},
	"set-plugin-data":    {required: []string{"path", "value", "plugin_data"}, formatted: []string{"value"}, pluginData: true},
	"extend-plugin-data": {required: []string{"path", "value", "plugin_data"}, optional: []string{"unique"}, formatted: []string{"value"}, pluginData: true},
	"unset-plugin-data":  {required: []string{"path", "plugin_data"}, pluginData: true},
	"set-port-attribute": {required: []string{"port_id", "path", "value"}, formatted: []string{"value"}, refused: refusedPort},
	"extend-port-attribute": {required: []string{"port_id", "path", "value"}, optional: []string{"unique"},
		formatted: []string{"value"}, refused: refusedPort},
	"del-port-attribute": {required: []string{"port_id", "path"}, refused: refusedPort},
	"api-call": {required: []string{"url"}, optional: []string{"headers", "proxies", "timeout", "retries", "backoff_factor"},
		formatted: []string{"url"}, refused: refusedCall},
}

// OperatorNames returns the condition operators a rule may name, in
// Ironic's order (for the API's schema messages).
func OperatorNames() []string { return append([]string(nil), operatorNames...) }

// ActionNames returns the actions a rule may name, in Ironic's order.
func ActionNames() []string { return append([]string(nil), actionNames...) }

// parseInverted is Ironic's parse_inverted_operator: "!eq" is eq negated.
func parseInverted(op string) (string, bool, error) {
	op = strings.TrimSpace(op)
	if strings.Count(op, "!") > 1 {
		return "", false, fmt.Errorf("Multiple exclamation marks are not allowed. To apply the invert of an " +
			"operation, simply add an exclamation mark (with an optional space) before the operator, e.g. eq - !eq.")
	}
	inv := strings.HasPrefix(op, "!")
	return strings.TrimSpace(strings.TrimLeft(op, "!")), inv, nil
}

// normalize is Ironic's _normalize_list_args: a list of arguments becomes
// a dict by the signature's order (the deprecated positional form); a
// dict is used as given. The plugin data is not an argument here: it is
// passed to the action beside them.
func (s spec) normalize(args any) (map[string]any, error) {
	switch a := args.(type) {
	case map[string]any:
		out := make(map[string]any, len(a)+1)
		for k, v := range a {
			out[k] = v
		}
		if s.pluginData {
			out["plugin_data"] = map[string]any{}
		}
		return out, nil
	case []any:
		list := append([]any(nil), a...)
		if s.pluginData {
			list = append(list, map[string]any{})
		}
		if len(list) < len(s.required) {
			return nil, fmt.Errorf("Not enough arguments provided. Missing: %s", strings.Join(s.required[len(list):], ", "))
		}
		out := make(map[string]any, len(list))
		for i, name := range s.required {
			out[name] = list[i]
		}
		for i, name := range s.optional {
			if j := len(s.required) + i; j < len(list) {
				out[name] = list[j]
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("args must be either a list or dictionary")
}

// validate is Ironic's Base.validate: the required arguments are given
// and no other than the signature's.
func (s spec) validate(args any) error {
	a, err := s.normalize(args)
	if err != nil {
		return err
	}
	var missing, unexpected []string
	for _, r := range s.required {
		if _, ok := a[r]; !ok {
			missing = append(missing, r)
		}
	}
	for k := range a {
		if !slices.Contains(s.required, k) && !slices.Contains(s.optional, k) {
			unexpected = append(unexpected, k)
		}
	}
	slices.Sort(unexpected)
	var msg []string
	if len(missing) > 0 {
		msg = append(msg, "missing required argument(s): "+strings.Join(missing, ", "))
	}
	if len(unexpected) > 0 {
		msg = append(msg, "unexpected argument(s): "+strings.Join(unexpected, ", "))
	}
	if len(msg) > 0 {
		return fmt.Errorf("%s", strings.Join(msg, "; "))
	}
	return nil
}
