package inspectrule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
)

// sensitiveFields are the keys whose values the rules see as "***" in the
// inventory and plugin data (Ironic's SENSITIVE_FIELDS with its default
// [inspection_rules]mask_secrets = always).
var sensitiveFields = []string{"password", "auth_token", "bmc_password"}

const masked = "***"

// pyError is the Python exception a replacement field raises; kind is its
// class name (KeyError, IndexError, AttributeError, TypeError, ValueError).
type pyError struct{ kind, msg string }

func (e *pyError) Error() string { return e.msg }

func pyErr(kind, format string, args ...any) *pyError {
	return &pyError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// nodeObj is the node as a replacement field sees it: an object whose
// fields are reached with dots ({node.driver}), never with brackets.
type nodeObj map[string]any

// maskedMap is a dict of the inventory or plugin data: reading a sensitive
// key gives "***", and what it holds is masked too (Ironic's
// ShallowMaskDict). A dict of the node (node is true) masks every secret
// key (secret.IsKey) as "******": Anvil's rule, Ironic's rules read the
// node's secrets.
type maskedMap struct {
	m    map[string]any
	node bool
}

// maskedList is a list inside a masked dict.
type maskedList struct {
	l    []any
	node bool
}

// hidden reports whether key's value is masked, and with what.
func hidden(key string, node bool) (string, bool) {
	if node {
		return secret.Mask, secret.IsKey(key)
	}
	return masked, slices.Contains(sensitiveFields, key)
}

// scope is what replacement fields can name: node, inventory, plugin_data,
// and item inside a loop.
type scope struct {
	node                  func() nodeObj
	inventory, pluginData map[string]any
	item                  any
	inLoop                bool
}

// format is Python's str.format(**scope) of s: "{name[key].attr}" fields,
// "{{" and "}}" escapes, the !s and !r conversions. A format spec (":...")
// is not supported and raises ValueError, so the string stays as written.
func (sc *scope) format(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '}':
			if i+1 < len(s) && s[i+1] == '}' {
				b.WriteByte('}')
				i++
				continue
			}
			return "", pyErr("ValueError", "Single '}' encountered in format string")
		case c != '{':
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end, err := fieldEnd(s, i+1)
		if err != nil {
			return "", err
		}
		v, err := sc.field(s[i+1 : end])
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		i = end
	}
	return b.String(), nil
}

// fieldEnd finds the '}' closing the field starting at start, skipping
// brackets as Python's parser does.
func fieldEnd(s string, start int) (int, error) {
	depth := 0
	for j := start; j < len(s); j++ {
		switch s[j] {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case '{':
			if depth == 0 {
				return 0, pyErr("ValueError", "unexpected '{' in field name")
			}
		case '}':
			if depth == 0 {
				return j, nil
			}
		}
	}
	return 0, pyErr("ValueError", "expected '}' before end of string")
}

// field renders one replacement field.
func (sc *scope) field(f string) (string, error) {
	name, conv, spec := splitField(f)
	if spec != "" {
		return "", pyErr("ValueError", "format spec %q is not supported", spec)
	}
	v, err := sc.resolve(name)
	if err != nil {
		return "", err
	}
	switch conv {
	case "", "s":
		return pyStr(v), nil
	case "r", "a":
		if s, ok := v.(string); ok {
			return pyrepr.Repr(s), nil
		}
		return pyStr(v), nil
	}
	return "", pyErr("ValueError", "Unknown conversion specifier %s", conv)
}

// splitField splits "name!conv:spec", ignoring ! and : inside brackets.
func splitField(f string) (name, conv, spec string) {
	depth := 0
	for j := 0; j < len(f); j++ {
		switch f[j] {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case '!', ':':
			if depth > 0 {
				continue
			}
			name, rest := f[:j], f[j:]
			if rest[0] == '!' {
				conv, spec, _ = strings.Cut(rest[1:], ":")
				return name, conv, spec
			}
			return name, "", rest[1:]
		}
	}
	return f, "", ""
}

// resolve follows a field name: an argument name, then .attr and [key]
// parts, the way Python's format does.
func (sc *scope) resolve(name string) (any, error) {
	i := strings.IndexAny(name, ".[")
	arg, rest := name, ""
	if i >= 0 {
		arg, rest = name[:i], name[i:]
	}
	if arg == "" || isDigits(arg) {
		return nil, pyErr("IndexError", "Replacement index %s out of range for positional args tuple", orZero(arg))
	}
	var v any
	switch {
	case arg == "node":
		v = sc.node()
	case arg == "inventory":
		v = maskedMap{m: sc.inventory}
	case arg == "plugin_data":
		v = maskedMap{m: sc.pluginData}
	case arg == "item" && sc.inLoop:
		v = sc.item
	default:
		return nil, pyErr("KeyError", "%s", pyrepr.Repr(arg))
	}
	for rest != "" {
		var err error
		if rest[0] == '.' {
			j := strings.IndexAny(rest[1:], ".[")
			attr := rest[1:]
			if j >= 0 {
				attr, rest = rest[1:j+1], rest[j+1:]
			} else {
				rest = ""
			}
			v, err = getattr(v, attr)
		} else {
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				return nil, pyErr("ValueError", "Missing ']' in format string")
			}
			key := rest[1:j]
			rest = rest[j+1:]
			if rest != "" && rest[0] != '.' && rest[0] != '[' {
				return nil, pyErr("ValueError", "Only '.' or '[' may follow ']' in format field specifier")
			}
			v, err = getitem(v, key)
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func getattr(v any, attr string) (any, error) {
	if attr == "" {
		return nil, pyErr("ValueError", "Empty attribute in format string")
	}
	if n, ok := v.(nodeObj); ok {
		if f, ok := n[attr]; ok {
			return maskValue(f, true), nil
		}
		return nil, pyErr("AttributeError", "'Node' object has no attribute %s", pyrepr.Repr(attr))
	}
	return nil, pyErr("AttributeError", "'%s' object has no attribute %s", pyType(v), pyrepr.Repr(attr))
}

// getitem is v[key] of a format field: key is an int when all digits.
func getitem(v any, key string) (any, error) {
	if key == "" {
		return nil, pyErr("ValueError", "Empty attribute in format string")
	}
	idx, isInt := -1, isDigits(key)
	if isInt {
		idx, _ = strconv.Atoi(key)
	}
	switch x := v.(type) {
	case maskedMap:
		if isInt {
			return nil, pyErr("KeyError", "%s", key)
		}
		val, ok := x.m[key]
		if !ok {
			return nil, pyErr("KeyError", "%s", pyrepr.Repr(key))
		}
		if m, hide := hidden(key, x.node); hide {
			return m, nil
		}
		return maskValue(val, x.node), nil
	case map[string]any:
		if isInt {
			return nil, pyErr("KeyError", "%s", key)
		}
		val, ok := x[key]
		if !ok {
			return nil, pyErr("KeyError", "%s", pyrepr.Repr(key))
		}
		return val, nil
	case maskedList:
		if !isInt {
			return nil, pyErr("TypeError", "list indices must be integers or slices, not str")
		}
		if idx >= len(x.l) {
			return nil, pyErr("IndexError", "list index out of range")
		}
		return maskValue(x.l[idx], x.node), nil
	case []any:
		if !isInt {
			return nil, pyErr("TypeError", "list indices must be integers or slices, not str")
		}
		if idx >= len(x) {
			return nil, pyErr("IndexError", "list index out of range")
		}
		return x[idx], nil
	case string:
		if !isInt {
			return nil, pyErr("TypeError", "string indices must be integers, not 'str'")
		}
		r := []rune(x)
		if idx >= len(r) {
			return nil, pyErr("IndexError", "string index out of range")
		}
		return string(r[idx]), nil
	}
	return nil, pyErr("TypeError", "'%s' object is not subscriptable", pyType(v))
}

func maskValue(v any, node bool) any {
	switch x := v.(type) {
	case map[string]any:
		return maskedMap{m: x, node: node}
	case []any:
		return maskedList{l: x, node: node}
	}
	return v
}

// unmask turns the masking views back into plain values (with the hidden
// keys masked), for str() and for comparisons.
func unmask(v any) any {
	switch x := v.(type) {
	case maskedMap:
		out := make(map[string]any, len(x.m))
		for k, e := range x.m {
			if m, hide := hidden(k, x.node); hide {
				out[k] = m
			} else {
				out[k] = unmask(maskValue(e, x.node))
			}
		}
		return out
	case maskedList:
		out := make([]any, len(x.l))
		for i, e := range x.l {
			out[i] = unmask(maskValue(e, x.node))
		}
		return out
	case nodeObj:
		return unmask(maskedMap{m: map[string]any(x), node: true})
	}
	return v
}

// pyStr is Python's str() of a value a field reached.
func pyStr(v any) string {
	if n, ok := v.(nodeObj); ok {
		return "Node(uuid=" + pyStr(n["uuid"]) + ")"
	}
	return pyrepr.Str(unmask(v))
}

// pyType is Python's type name of a JSON value.
func pyType(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case float64:
		if x == float64(int64(x)) {
			return "int"
		}
		return "float"
	case int, int64:
		return "int"
	case string:
		return "str"
	case []any, maskedList, []string:
		return "list"
	case map[string]any, maskedMap:
		return "dict"
	case nodeObj:
		return "Node"
	}
	return fmt.Sprintf("%T", v)
}

// interpolate is Ironic's Base.interpolate_variables: strings are
// formatted (twice inside a loop, so an item may carry a field), lists
// and dicts recursively. A field that cannot be formatted leaves its
// string as written, except a missing key for is-empty, which gives None.
func (sc *scope) interpolate(v any, op string) any {
	safe := func(s string) any {
		out, err := sc.format(s)
		if err == nil {
			return out
		}
		if pe, ok := err.(*pyError); ok && pe.kind == "KeyError" && op == "is-empty" {
			return nil
		}
		return s
	}
	if sc.inLoop {
		if s, ok := v.(string); ok {
			v = safe(s)
		}
	}
	switch x := v.(type) {
	case string:
		return safe(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			key := k
			if s, ok := safe(k).(string); ok {
				key = s
			}
			out[key] = sc.interpolate(e, op)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if s, ok := e.(string); ok {
				out[i] = safe(s)
			} else {
				out[i] = sc.interpolate(e, op)
			}
		}
		return out
	}
	return v
}
