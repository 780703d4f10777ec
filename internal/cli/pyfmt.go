package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// The values the CLI prints come from JSON decoded with UseNumber: nil,
// bool, json.Number, string, []any and map[string]any. python-ironicclient
// prints them with Python's str() (table, value, csv, shell; package
// pyrepr) and json.dump / yaml.safe_dump (below and yaml.go).

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// formatDict is osc-lib's format_dict: "k1='v1', k2='v2'" with nested
// dictionaries flattened to dotted keys (used for port "Extra").
func formatDict(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	var parts []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range sortedKeys(m) {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			if sub, ok := m[k].(map[string]any); ok {
				walk(key, sub)
				continue
			}
			parts = append(parts, key+"='"+pyrepr.Str(m[k])+"'")
		}
	}
	walk("", m)
	return strings.Join(parts, ", ")
}

// commaList is python-ironicclient's convert_list_props_to_comma_separated
// for one value: lists print as "a, b".
func commaList(v any) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = pyrepr.Str(e)
	}
	return strings.Join(parts, ", ")
}

// writePyJSON writes v as Python's json.dump(v, indent=indent) does
// (indent < 0: no indentation): ", " and ": " separators, non-ASCII
// escaped, keys of maps sorted.
func writePyJSON(b *strings.Builder, v any, indent, depth int) {
	newline := func(d int) {
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*d))
		}
	}
	sep := ", "
	if indent >= 0 {
		sep = ","
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(x.String())
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		b.WriteString(jsonQuote(x))
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		writePyJSON(b, l, indent, depth)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(sep)
			}
			newline(depth + 1)
			writePyJSON(b, e, indent, depth+1)
		}
		newline(depth)
		b.WriteByte(']')
	case map[string]any:
		writePyJSONObject(b, sortedKeys(x), func(k string) any { return x[k] }, indent, depth)
	case orderedMap:
		writePyJSONObject(b, x.Keys, func(k string) any { return x.Values[k] }, indent, depth)
	default:
		b.WriteString(jsonQuote(fmt.Sprint(x)))
	}
}

func writePyJSONObject(b *strings.Builder, keys []string, get func(string) any, indent, depth int) {
	if len(keys) == 0 {
		b.WriteString("{}")
		return
	}
	sep := ", "
	if indent >= 0 {
		sep = ","
	}
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(sep)
		}
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*(depth+1)))
		}
		b.WriteString(jsonQuote(k))
		b.WriteString(": ")
		writePyJSON(b, get(k), indent, depth+1)
	}
	if indent >= 0 {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", indent*depth))
	}
	b.WriteByte('}')
}

// orderedMap is a dict printed in its own key order (list rows keep the
// column order, as Python dicts keep insertion order).
type orderedMap = pyrepr.Dict

// jsonQuote is Python's json string encoding with ensure_ascii.
func jsonQuote(s string) string { return string(pyrepr.AppendJSONString(nil, s)) }
