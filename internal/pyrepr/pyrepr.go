package pyrepr

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Dict is a Python dict printed in its own key order. Keys absent from
// Values print with the value None.
type Dict struct {
	Keys   []string
	Values map[string]any
}

// Tuple is a Python tuple.
type Tuple []any

// Repr is Python's repr() of v.
func Repr(v any) string {
	var b strings.Builder
	write(&b, v)
	return b.String()
}

// Str is Python's str() of v: a string as it is, anything else as Repr.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Repr(v)
}

// Bool is Python's repr() of a bool: True or False.
func Bool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Strings is Python's repr() of a list of str: ['a', 'b'].
func Strings(items []string) string { return Repr(items) }

// QuoteAll is the repr() of each str joined by ", ", the way jsonschema and
// argparse list choices: 'a', 'b'.
func QuoteAll(items []string) string {
	var b strings.Builder
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		writeQuoted(&b, s)
	}
	return b.String()
}

// StringTuple is Python's repr() of a tuple of str: ('a', 'b'), ('a',).
func StringTuple(items []string) string {
	t := make(Tuple, len(items))
	for i, s := range items {
		t[i] = s
	}
	return Repr(t)
}

func write(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		b.WriteString(Bool(x))
	case string:
		writeQuoted(b, x)
	case json.Number:
		b.WriteString(Number(x))
	case float64:
		b.WriteString(decodedFloat(x))
	case float32:
		b.WriteString(Float(float64(x)))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case []any:
		writeSeq(b, '[', ']', len(x), func(i int) any { return x[i] })
	case []string:
		writeSeq(b, '[', ']', len(x), func(i int) any { return x[i] })
	case Tuple:
		writeTuple(b, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		writeDict(b, keys, func(k string) any { return x[k] })
	case Dict:
		writeDict(b, x.Keys, func(k string) any { return x.Values[k] })
	case *Dict:
		write(b, *x)
	default:
		writeReflect(b, v)
	}
}

// writeReflect covers the remaining ints, slices and string-keyed maps.
func writeReflect(b *strings.Builder, v any) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(decodedFloat(rv.Float()))
	case reflect.String:
		writeQuoted(b, rv.String())
	case reflect.Bool:
		b.WriteString(Bool(rv.Bool()))
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			b.WriteString("[]")
			return
		}
		writeSeq(b, '[', ']', rv.Len(), func(i int) any { return rv.Index(i).Interface() })
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			fmt.Fprint(b, v)
			return
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		kt := rv.Type().Key()
		writeDict(b, keys, func(k string) any {
			return rv.MapIndex(reflect.ValueOf(k).Convert(kt)).Interface()
		})
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			b.WriteString("None")
			return
		}
		write(b, rv.Elem().Interface())
	default:
		fmt.Fprint(b, v)
	}
}

func writeSeq(b *strings.Builder, open, close byte, n int, at func(int) any) {
	b.WriteByte(open)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		write(b, at(i))
	}
	b.WriteByte(close)
}

func writeTuple(b *strings.Builder, t Tuple) {
	if len(t) == 1 {
		b.WriteByte('(')
		write(b, t[0])
		b.WriteString(",)")
		return
	}
	writeSeq(b, '(', ')', len(t), func(i int) any { return t[i] })
}

func writeDict(b *strings.Builder, keys []string, get func(string) any) {
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		writeQuoted(b, k)
		b.WriteString(": ")
		write(b, get(k))
	}
	b.WriteByte('}')
}
