package disk

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Root device hints as Ironic and IPA define them (IPA's device_hints.py,
// formerly ironic-lib's utils.py): each hint is "[<op>] <value>", matched
// with oslo.utils' specs_matcher against the device's attribute. String
// values are compared lowercased and URL-quoted; size is in GiB.

type hintKind int

const (
	kindString hintKind = iota
	kindInt
	kindBool
)

// hintKinds is IPA's VALID_ROOT_DEVICE_HINTS, in its order (error messages
// list the valid hints in this order).
var hintKinds = []struct {
	name string
	kind hintKind
}{
	{"size", kindInt}, {"model", kindString}, {"wwn", kindString}, {"serial", kindString},
	{"vendor", kindString}, {"wwn_with_extension", kindString}, {"wwn_vendor_extension", kindString},
	{"name", kindString}, {"rotational", kindBool}, {"hctl", kindString}, {"by_path", kindString},
	{"tran", kindString},
}

func kindOf(name string) (hintKind, bool) {
	for _, h := range hintKinds {
		if h.name == name {
			return h.kind, true
		}
	}
	return 0, false
}

// operators of specs_matcher, longest first so that "s<=" is not read as
// "s<" (the grammar's own order has the same effect).
var operators = []string{"<all-in>", "<in>", "<or>", "s==", "s!=", "s<=", "s>=", "s<", "s>", "==", "!=", "<=", ">=", "=", "<", ">"}

// Hint is one parsed hint: an operator and its values (normalised for
// string hints), or a Boolean.
type Hint struct {
	Op     string
	Values []string
	Bool   bool
}

// Hints are parsed root device hints, by hint name.
type Hints map[string]Hint

// ParseHints validates raw hints (properties.root_device or
// instance_info.root_device) as IPA's parse_root_device_hints does and
// returns them with the implicit equality operator made explicit. No hints
// give nil. The errors carry IPA's messages.
func ParseHints(raw map[string]any) (Hints, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var invalid []string
	for k := range raw {
		if _, ok := kindOf(k); !ok {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		sort.Strings(invalid)
		valid := make([]string, len(hintKinds))
		for i, h := range hintKinds {
			valid[i] = h.name
		}
		return nil, fmt.Errorf(`The hints "%s" are invalid. Valid hints are: "%s"`,
			strings.Join(invalid, ", "), strings.Join(valid, ", "))
	}
	out := Hints{}
	for name, v := range raw {
		kind, _ := kindOf(name)
		switch kind {
		case kindString:
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf(`Root device hint "%s" is not a string value. Hint expression: %s`, name, pyrepr.Str(v))
			}
			op, values, err := splitExpression(s, name)
			if err != nil {
				return nil, err
			}
			for i := range values {
				values[i] = quote(values[i])
			}
			if op == "" {
				op = "s=="
			}
			out[name] = Hint{Op: op, Values: values}
		case kindInt:
			op, values, err := splitExpression(pyrepr.Str(v), name)
			if err != nil {
				return nil, err
			}
			for _, s := range values {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf(`Root device hint "%s" is not an integer value. Current value: %s`, name, pyrepr.Str(v))
				}
				if n <= 0 {
					return nil, fmt.Errorf(`Root device hint "%s" should be a positive integer. Current value: %s`, name, pyrepr.Str(v))
				}
			}
			if op == "" {
				op = "=="
			}
			out[name] = Hint{Op: op, Values: values}
		case kindBool:
			b, ok := parseBool(v)
			if !ok {
				return nil, fmt.Errorf(`Root device hint "%s" is not a Boolean value. Current value: %s`, name, pyrepr.Str(v))
			}
			out[name] = Hint{Bool: b}
		}
	}
	return out, nil
}

// splitExpression is IPA's _extract_hint_operator_and_values: the
// lowercased expression's leading operator ("" if none) and its values.
func splitExpression(expr, name string) (string, []string, error) {
	e := strings.ToLower(strings.TrimSpace(expr))
	if e == "" {
		return "", nil, fmt.Errorf("Root device hint %s expression is empty", name)
	}
	for _, op := range operators {
		if rest, ok := strings.CutPrefix(e, op); ok && strings.TrimSpace(rest) != "" {
			var values []string
			for _, v := range strings.Split(e, op) {
				if v = strings.TrimSpace(v); v != "" {
					values = append(values, v)
				}
			}
			return op, values, nil
		}
	}
	return "", []string{e}, nil
}

// quote is Python's urllib.parse.quote with its default safe "/".
func quote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.-~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// parseBool is oslo's bool_from_string(strict=True).
func parseBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case float64:
		if x == 0 || x == 1 {
			return x == 1, true
		}
		return false, false
	case int:
		if x == 0 || x == 1 {
			return x == 1, true
		}
		return false, false
	case string:
		return pyrepr.BoolFromString(x)
	}
	return false, false
}

// Match reports whether d satisfies every hint (find_devices_by_hints).
func (h Hints) Match(d Device) bool {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		hint := h[name]
		kind, _ := kindOf(name)
		switch kind {
		case kindBool:
			if d.Rotational != hint.Bool {
				return false
			}
		case kindInt:
			gib := float64(d.Size) / (1 << 30)
			if !matchValue(strconv.FormatFloat(gib, 'f', -1, 64), hint) {
				return false
			}
		case kindString:
			v := strings.ToLower(strings.TrimSpace(d.attr(name)))
			if v == "" {
				return false // IPA skips a device whose attribute is empty
			}
			if !matchValue(quote(v), hint) {
				return false
			}
		}
	}
	return true
}

// matchValue is specs_matcher.match(value, "<op> <values>").
func matchValue(v string, h Hint) bool {
	num := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	want := h.Values[0]
	switch h.Op {
	case "=", ">=":
		return num(v) >= num(want)
	case "==":
		return num(v) == num(want)
	case "!=":
		return num(v) != num(want)
	case "<=":
		return num(v) <= num(want)
	case "<":
		return num(v) < num(want)
	case ">":
		return num(v) > num(want)
	case "s==":
		return v == want
	case "s!=":
		return v != want
	case "s<":
		return v < want
	case "s<=":
		return v <= want
	case "s>":
		return v > want
	case "s>=":
		return v >= want
	case "<in>":
		return strings.Contains(v, want)
	case "<all-in>":
		for _, w := range h.Values {
			if !strings.Contains(v, w) {
				return false
			}
		}
		return true
	case "<or>":
		return slices.Contains(h.Values, v)
	}
	return v == want
}

// ErrNoDevice is wrapped by Select when no device matches the hints.
type ErrNoDevice struct{ Hints map[string]any }

func (e *ErrNoDevice) Error() string {
	return "No suitable device was found for deployment using these hints " + pyrepr.Repr(e.Hints)
}

// Select is IPA's get_os_install_device with hints: the first of devs
// that matches every hint. Invalid hints fail before any device is looked
// at; no match is an *ErrNoDevice with IPA's message.
func Select(devs []Device, raw map[string]any) (Device, error) {
	h, err := ParseHints(raw)
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if h.Match(d) {
			return d, nil
		}
	}
	return Device{}, &ErrNoDevice{Hints: raw}
}
