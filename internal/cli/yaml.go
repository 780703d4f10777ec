package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// YAML output as PyYAML's safe_dump(default_flow_style=False) writes it:
// block style, mapping keys sorted, sequences inside mappings not
// indented, empty collections as {} and [], strings quoted only when a
// plain scalar would read back as something else. Long plain strings are
// not folded at 80 columns as PyYAML does; the data read back is the same.

// yamlResolvers are PyYAML's implicit resolvers (YAML 1.1): a plain string
// matching one would load as another type, so it must be quoted.
var yamlResolvers = []*regexp.Regexp{
	regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`),
	regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`),
	regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`),
	regexp.MustCompile(`^(?:<<)$`),
	regexp.MustCompile(`^(?:~|null|Null|NULL|)$`),
	regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`),
	regexp.MustCompile(`^(?:=)$`),
}

// yamlScalar renders one string as PyYAML would choose: plain, 'single' or
// "double" quoted.
func yamlScalar(s string) string {
	needDouble := false
	for _, r := range s {
		if r > 0x7e || (r < 0x20 && r != '\n') {
			needDouble = true
		}
	}
	if needDouble || strings.Contains(s, "\n") {
		return yamlDouble(s)
	}
	if yamlPlainOK(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func yamlPlainOK(s string) bool {
	if s == "" || s != strings.TrimSpace(s) {
		return false
	}
	for _, re := range yamlResolvers {
		if re.MatchString(s) {
			return false
		}
	}
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '-', '?', ':':
		if len(s) == 1 || s[1] == ' ' {
			return false
		}
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	return true
}

func yamlDouble(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r >= 0x7f && r < 0x100):
			fmt.Fprintf(&b, `\x%02X`, r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08X`, r)
		case r >= 0x100:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// yamlWidth is PyYAML's best_width.
const yamlWidth = 80

// yamlFold folds a plain or single-quoted scalar as PyYAML's emitter does:
// a lone space between two words becomes a line break (indented by indent)
// when the line already passes 80 columns; col is where the scalar starts.
// Double-quoted scalars are left on one line.
func yamlFold(s string, col, indent int) string {
	if s == "" || s[0] == '"' {
		return s
	}
	quoted := s[0] == '\''
	runes := []rune(s)
	var b strings.Builder
	column := col
	for i, r := range runes {
		if r == ' ' && column > yamlWidth && i > 0 && runes[i-1] != ' ' && i+1 < len(runes) && runes[i+1] != ' ' &&
			!(quoted && (i == 1 || i == len(runes)-2)) {
			b.WriteString("\n" + strings.Repeat(" ", indent))
			column = indent
			continue
		}
		b.WriteRune(r)
		column++
	}
	return b.String()
}

// yamlInline renders values that fit on the key's line: scalars and empty
// collections; ok is false for a non-empty collection.
func yamlInline(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case string:
		return yamlScalar(x), true
	case []any:
		if len(x) == 0 {
			return "[]", true
		}
	case map[string]any:
		if len(x) == 0 {
			return "{}", true
		}
	case orderedMap:
		if len(x.Keys) == 0 {
			return "{}", true
		}
	default:
		return yamlScalar(fmt.Sprint(x)), true
	}
	return "", false
}

// writeYAML writes v as a YAML document at the given indentation.
func writeYAML(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	if s, ok := yamlInline(v); ok {
		b.WriteString(pad + s + "\n")
		return
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			writeYAMLItem(b, e, indent)
		}
	case map[string]any:
		writeYAMLMap(b, sortedKeys(x), func(k string) any { return x[k] }, indent, "")
	case orderedMap:
		writeYAMLMap(b, sortedStrings(x.Keys), func(k string) any { return x.Values[k] }, indent, "")
	}
}

// writeYAMLItem writes one "- " sequence entry.
func writeYAMLItem(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	if s, ok := yamlInline(v); ok {
		b.WriteString(pad + "- " + yamlFold(s, indent+2, indent+2) + "\n")
		return
	}
	switch x := v.(type) {
	case []any:
		// A sequence in a sequence starts on the dash's line.
		var sub strings.Builder
		writeYAML(&sub, x, 0)
		lines := strings.Split(strings.TrimSuffix(sub.String(), "\n"), "\n")
		for i, l := range lines {
			if i == 0 {
				b.WriteString(pad + "- " + l + "\n")
			} else {
				b.WriteString(pad + "  " + l + "\n")
			}
		}
	case map[string]any:
		writeYAMLMap(b, sortedKeys(x), func(k string) any { return x[k] }, indent+2, pad+"- ")
	case orderedMap:
		writeYAMLMap(b, sortedStrings(x.Keys), func(k string) any { return x.Values[k] }, indent+2, pad+"- ")
	}
}

// writeYAMLMap writes a block mapping; first (when not "") replaces the
// indentation of the first key (the "- " of a sequence entry).
func writeYAMLMap(b *strings.Builder, keys []string, get func(string) any, indent int, first string) {
	pad := strings.Repeat(" ", indent)
	for i, k := range keys {
		lead := pad
		if i == 0 && first != "" {
			lead = first
		}
		v := get(k)
		if s, ok := yamlInline(v); ok {
			key := yamlScalar(k)
			b.WriteString(lead + key + ": " + yamlFold(s, len([]rune(lead+key))+2, indent+2) + "\n")
			continue
		}
		b.WriteString(lead + yamlScalar(k) + ":\n")
		if _, isList := v.([]any); isList {
			writeYAML(b, v, indent) // PyYAML does not indent a sequence in a mapping
		} else {
			writeYAML(b, v, indent+2)
		}
	}
}

func sortedStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
