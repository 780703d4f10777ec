package inspectrule

import (
	"fmt"
	"sort"
	"strings"
)

// Python's comparisons of JSON values, as the simple operators and one-of
// see them: numbers (bools among them, as Python's bool is an int) by
// value, strings by code point, lists element by element; any other pair
// is equal only if identical and cannot be ordered (TypeError).

func pyNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// pyEqual is Python's ==.
func pyEqual(a, b any) bool {
	a, b = unmask(a), unmask(b)
	if x, ok := pyNumber(a); ok {
		y, ok := pyNumber(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !pyEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// pyLess is Python's a < b.
func pyLess(a, b any, sym string) (bool, error) {
	a, b = unmask(a), unmask(b)
	if x, ok := pyNumber(a); ok {
		if y, ok := pyNumber(b); ok {
			return x < y, nil
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return x < y, nil
		}
	}
	if x, ok := a.([]any); ok {
		if y, ok := b.([]any); ok {
			for i := 0; i < len(x) && i < len(y); i++ {
				if !pyEqual(x[i], y[i]) {
					return pyLess(x[i], y[i], sym)
				}
			}
			return len(x) < len(y), nil
		}
	}
	return false, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", sym, pyType(a), pyType(b))
}

// pyCompare applies one of Python's comparison operators by name.
func pyCompare(op string, a, b any) (bool, error) {
	switch op {
	case "eq":
		return pyEqual(a, b), nil
	case "ne":
		return !pyEqual(a, b), nil
	case "lt":
		return pyLess(a, b, "<")
	case "gt":
		return pyLess(b, a, ">")
	case "le":
		if pyEqual(a, b) {
			_, err := pyLess(a, b, "<=") // still refuses unorderable pairs
			return err == nil, err
		}
		return pyLess(a, b, "<=")
	case "ge":
		if pyEqual(a, b) {
			_, err := pyLess(b, a, ">=")
			return err == nil, err
		}
		return pyLess(b, a, ">=")
	}
	return false, fmt.Errorf("unknown comparison %s", op)
}

// pyTruth is Python's bool(v).
func pyTruth(v any) bool {
	v = unmask(v)
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	if n, ok := pyNumber(v); ok {
		return n != 0
	}
	return true
}

// pyIn is Python's `value in container` for one-of.
func pyIn(value, container any) (bool, error) {
	switch c := unmask(container).(type) {
	case []any:
		for _, e := range c {
			if pyEqual(value, e) {
				return true, nil
			}
		}
		return false, nil
	case map[string]any:
		s, ok := unmask(value).(string)
		if !ok {
			return false, nil
		}
		_, found := c[s]
		return found, nil
	case string:
		s, ok := unmask(value).(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", pyType(value))
		}
		return strings.Contains(c, s), nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", pyType(container))
}

// pySetRepr is the repr of a Python set of strings (sorted, for a stable
// text).
func pySetRepr(items []string) string {
	s := append([]string(nil), items...)
	sort.Strings(s)
	out := "{"
	for i, e := range s {
		if i > 0 {
			out += ", "
		}
		out += "'" + e + "'"
	}
	return out + "}"
}
