package api

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// jw is an append-style JSON writer producing what Python's json.dumps
// produces for Ironic: ", " and ": " separators and ASCII-only strings.
// It keeps no reflection on the hot path (rendering 1,000 nodes).
type jw struct {
	b      []byte
	count  []int // elements written so far in each open container
	valued bool  // a key was just written: the next value takes no separator

	keyBuf  []string        // scratch for sorting map keys (a stack)
	secrets map[string]bool // secret.IsKey answers, per response
	pooled  *[]byte         // where b goes back to when pooled
}

func (w *jw) sep() {
	if w.valued {
		w.valued = false
		return
	}
	if n := len(w.count); n > 0 {
		if w.count[n-1] > 0 {
			w.b = append(w.b, ',', ' ')
		}
		w.count[n-1]++
	}
}

func (w *jw) open(c byte) {
	w.b = append(w.b, c)
	w.count = append(w.count, 0)
}

func (w *jw) close(c byte) {
	w.b = append(w.b, c)
	w.count = w.count[:len(w.count)-1]
}

// obj and arr open a container as the next value.
func (w *jw) obj()          { w.sep(); w.open('{') }
func (w *jw) arr()          { w.sep(); w.open('[') }
func (w *jw) endObj()       { w.close('}') }
func (w *jw) endArr()       { w.close(']') }
func (w *jw) rootObj()      { w.open('{') }
func (w *jw) bytes() []byte { return w.b }

// key writes an object key; the next call writes its value.
func (w *jw) key(k string) {
	w.sep()
	w.b = pyrepr.AppendJSONString(w.b, k)
	w.b = append(w.b, ':', ' ')
	w.valued = true
}

// rawKey writes a key already encoded with its ": ".
func (w *jw) rawKey(k []byte) {
	w.sep()
	w.b = append(w.b, k...)
	w.valued = true
}

func (w *jw) str(s string) { w.sep(); w.b = pyrepr.AppendJSONString(w.b, s) }
func (w *jw) null()        { w.sep(); w.b = append(w.b, "null"...) }
func (w *jw) boolean(v bool) {
	w.sep()
	w.b = strconv.AppendBool(w.b, v)
}
func (w *jw) integer(v int64) { w.sep(); w.b = strconv.AppendInt(w.b, v, 10) }

// strOrNull writes "" as null, as Ironic does for unset string fields.
func (w *jw) strOrNull(s string) {
	if s == "" {
		w.null()
		return
	}
	w.str(s)
}

func (w *jw) boolPtr(v *bool) {
	if v == nil {
		w.null()
		return
	}
	w.boolean(*v)
}

// timestamp writes Ironic's isoformat() of a UTC time, or null.
func (w *jw) timestamp(t time.Time) {
	if t.IsZero() {
		w.null()
		return
	}
	w.sep()
	w.b = append(w.b, '"')
	w.b = appendISO(w.b, t)
	w.b = append(w.b, '"')
}

// appendISO formats like Python's datetime.isoformat() on an aware UTC
// datetime: microseconds only when non-zero, "+00:00" offset.
func appendISO(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		b = append(b, '.')
		s := strconv.Itoa(us)
		for i := len(s); i < 6; i++ {
			b = append(b, '0')
		}
		b = append(b, s...)
	}
	return append(b, "+00:00"...)
}

// strings writes a list of strings ([] when empty).
func (w *jw) strings(list []string) {
	w.arr()
	for _, s := range list {
		w.str(s)
	}
	w.endArr()
}

// any writes a decoded JSON value (maps with sorted keys).
func (w *jw) any(v any) {
	switch x := v.(type) {
	case nil:
		w.null()
	case string:
		w.str(x)
	case bool:
		w.boolean(x)
	case float64:
		w.sep()
		w.b = appendNumber(w.b, x)
	case int:
		w.integer(int64(x))
	case int64:
		w.integer(x)
	case json.Number:
		w.sep()
		w.b = append(w.b, x.String()...)
	case map[string]any:
		w.obj()
		mark := len(w.keyBuf)
		w.keyBuf = appendSortedKeys(w.keyBuf, x)
		for _, k := range w.keyBuf[mark:] {
			w.key(k)
			w.any(x[k])
		}
		w.keyBuf = w.keyBuf[:mark]
		w.endObj()
	case []any:
		w.arr()
		for _, e := range x {
			w.any(e)
		}
		w.endArr()
	case []string:
		w.strings(x)
	default:
		w.fallback(v)
	}
}

// fallback encodes an unexpected type through encoding/json.
func (w *jw) fallback(v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		w.null()
		return
	}
	var decoded any
	if json.Unmarshal(raw, &decoded) != nil {
		w.null()
		return
	}
	if _, ok := decoded.(map[string]any); ok {
		w.any(decoded)
		return
	}
	if _, ok := decoded.([]any); ok {
		w.any(decoded)
		return
	}
	w.sep()
	w.b = append(w.b, raw...)
}

// object writes a map ({} when nil).
func (w *jw) object(m map[string]any) {
	if len(m) == 0 {
		w.sep()
		w.b = append(w.b, '{', '}')
		return
	}
	w.any(m)
}

func sortedKeys(m map[string]any) []string {
	return appendSortedKeys(make([]string, 0, len(m)), m)
}

// appendSortedKeys appends m's keys to dst and sorts the appended part.
func appendSortedKeys(dst []string, m map[string]any) []string {
	mark := len(dst)
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst[mark:])
	return dst
}

// appendNumber writes a float64 as JSON, integral values without a fraction
// (JSON integers decode to float64; Python would print them as ints).
func appendNumber(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// structValue writes v as the encoding/json encoding of its type would
// order it — a struct's exported fields in declaration order under their
// json names, ",omitempty" honoured — in jw's Python style: map[string]any
// fields as jw.object ({} when nil), slices of structs as lists, every
// other value as jw.any. It serves answers whose shape is a struct of
// internal/ipa (the lookup).
func (w *jw) structValue(v reflect.Value) {
	switch {
	case v.Kind() == reflect.Struct:
		w.obj()
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fv := v.Field(i)
			if opts == "omitempty" && emptyValue(fv) {
				continue
			}
			w.key(name)
			w.structValue(fv)
		}
		w.endObj()
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		w.arr()
		for i := range v.Len() {
			w.structValue(v.Index(i))
		}
		w.endArr()
	case v.Kind() == reflect.Map && v.Type().ConvertibleTo(reflect.TypeFor[map[string]any]()):
		w.object(v.Convert(reflect.TypeFor[map[string]any]()).Interface().(map[string]any))
	case v.Kind() == reflect.String:
		w.str(v.String())
	case v.Kind() == reflect.Bool:
		w.boolean(v.Bool())
	default:
		w.any(v.Interface())
	}
}

// emptyValue is encoding/json's omitempty test.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return v.IsZero()
}
