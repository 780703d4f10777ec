package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The values the CLI prints come from JSON decoded with UseNumber: nil,
// bool, json.Number, string, []any and map[string]any. python-ironicclient
// prints them with Python's str() (table, value, csv, shell) and json.dump
// / yaml.safe_dump; the functions here reproduce those renderings.

// pyStr is Python's str() of a decoded JSON value.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	default:
		return pyRepr(v)
	}
}

// pyRepr is Python's repr() of a decoded JSON value; dictionaries print
// with their keys sorted.
func pyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case json.Number:
		b.WriteString(pyNumber(x))
	case string:
		b.WriteString(pyQuote(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(pyNumber(json.Number(strconv.FormatFloat(x, 'g', -1, 64))))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyQuote(e))
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyQuote(k))
			b.WriteString(": ")
			writeRepr(b, x[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, x)
	}
}

// pyNumber prints a JSON number as Python does once json.loads made it an
// int or a float (1e3 becomes 1000.0).
func pyNumber(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if f == float64(int64(f)) && f < 1e16 && f > -1e16 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// pyQuote is Python's repr() of a str: single quotes unless the text holds
// a single quote and no double quote.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r > 0xff:
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

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
			parts = append(parts, key+"='"+pyStr(m[k])+"'")
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
		parts[i] = pyStr(e)
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
		writePyJSONObject(b, x.keys, func(k string) any { return x.values[k] }, indent, depth)
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

// orderedMap is a JSON object printed in its own key order (list rows keep
// the column order, as Python dicts keep insertion order).
type orderedMap struct {
	keys   []string
	values map[string]any
}

// jsonQuote is Python's json string encoding with ensure_ascii.
func jsonQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				if r == 0x7f {
					b.WriteRune(r)
				} else if r < 0x20 || r > 0x7f {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
