package sqlstore

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

func TestRebind(t *testing.T) {
	cases := []struct {
		name, in, want string
		numbered       bool
	}{
		{"question marks kept", "a = ? AND b IN (?, ?)", "a = ? AND b IN (?, ?)", false},
		{"numbered", "a = ? AND b IN (?, ?)", "a = $1 AND b IN ($2, $3)", true},
		{"no placeholders", "SELECT 1", "SELECT 1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Dialect{NumberedParams: c.numbered}
			if got := d.rebind(c.in); got != c.want {
				t.Fatalf("rebind(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestUUIDShaped(t *testing.T) {
	cases := map[string]bool{
		"1be26c0b-03f2-4d2e-ae87-c02d7f33c123": true,
		"1BE26C0B-03F2-4D2E-AE87-C02D7F33C123": true,
		"1be26c0b03f24d2eae87c02d7f33c123":     false,
		"1be26c0b-03f2-4d2e-ae87-c02d7f33c12g": false,
		"1be26c0b-03f2-4d2e-ae87_c02d7f33c123": false,
		"node-1":                               false,
		"":                                     false,
	}
	for in, want := range cases {
		if got := uuidShaped(in); got != want {
			t.Errorf("uuidShaped(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	cases := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr string
	}{
		{"ordered", fstest.MapFS{
			"0002_b.up.sql": file("B"), "0002_b.down.sql": file("b"),
			"0001_a.up.sql": file("A"), "0001_a.down.sql": file("a"),
			"README.md": file("ignored"),
		}, []int{1, 2}, ""},
		{"gap", fstest.MapFS{
			"0001_a.up.sql": file("A"), "0001_a.down.sql": file("a"),
			"0003_c.up.sql": file("C"), "0003_c.down.sql": file("c"),
		}, nil, "migration 0002"},
		{"no down", fstest.MapFS{"0001_a.up.sql": file("A")}, nil, "migration 0001"},
		{"one version twice", fstest.MapFS{
			"0001_a.up.sql": file("A"), "0001_a.down.sql": file("a"),
			"0002_b.up.sql": file("B"), "0002_b.down.sql": file("b"),
			"0002_c.up.sql": file("C"), "0002_c.down.sql": file("c"),
		}, nil, "migration 0002: two files"},
		{"empty", fstest.MapFS{}, []int{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms, err := loadMigrations(c.fs)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one about %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []int{}
			for _, m := range ms {
				got = append(got, m.version)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("versions %v, want %v", got, c.want)
			}
		})
	}
}

func TestTimeDest(t *testing.T) {
	want := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	cases := []struct {
		name string
		src  any
		want time.Time
	}{
		{"text", "2024-02-29 13:14:15.123456", want},
		{"bytes", []byte("2024-02-29 13:14:15.123456"), want},
		{"rfc3339", "2024-02-29T14:14:15.123456789+01:00", want},
		{"time in a zone", want.Add(789).In(time.FixedZone("X", 3600)), want},
		{"null", nil, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got time.Time
			if err := (timeDest{&got}).Scan(c.src); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("scanned %v, want %v", got, c.want)
			}
		})
	}
	var got time.Time
	if err := (timeDest{&got}).Scan(42); err == nil {
		t.Fatal("scanning an int: no error")
	}
}

// filled returns a node with every field set, recursively, by reflection, so
// a field added to model.Node is covered without editing this test; a field
// of a kind it cannot fill fails the test (then teach fill and cloneNode).
func filled(t *testing.T) *model.Node {
	n := new(model.Node)
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		switch {
		case v.Type() == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Now()))
		case v.Type() == reflect.TypeFor[model.JSON]():
			v.Set(reflect.ValueOf(model.JSON{"s": "x", "n": 1.0,
				"obj": map[string]any{"list": []any{"a", map[string]any{"deep": true}}}}))
		case v.Kind() == reflect.String:
			v.SetString("x")
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.Kind() == reflect.Int64:
			v.SetInt(1)
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), path)
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
			v.Set(reflect.ValueOf([]string{"a", "b"}))
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		default:
			t.Fatalf("filled: cannot fill %s (%s)", path, v.Type())
		}
	}
	fill(reflect.ValueOf(n).Elem(), "Node")
	return n
}

// shares reports the first map, slice or pointer that a and b share
// (time.Time's location is immutable: not counted).
func shares(a, b reflect.Value, path string) string {
	if a.Type() == reflect.TypeFor[time.Time]() {
		return ""
	}
	switch a.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer:
		if !a.IsNil() && a.UnsafePointer() == b.UnsafePointer() {
			return path
		}
	}
	switch a.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !a.IsNil() {
			return shares(a.Elem(), b.Elem(), path)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if p := shares(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Map:
		for _, k := range a.MapKeys() {
			if p := shares(a.MapIndex(k), b.MapIndex(k), path+"["+k.String()+"]"); p != "" {
				return p
			}
		}
	case reflect.Slice:
		for i := range a.Len() {
			if p := shares(a.Index(i), b.Index(i), path); p != "" {
				return p
			}
		}
	}
	return ""
}

func TestCloneNodeSharesNothing(t *testing.T) {
	n := filled(t)
	c := cloneNode(n)
	if !reflect.DeepEqual(c, n) {
		t.Fatalf("clone differs:\n%+v\n%+v", c, n)
	}
	if p := shares(reflect.ValueOf(n), reflect.ValueOf(c), "Node"); p != "" {
		t.Fatalf("clone shares %s with the original", p)
	}
}

func TestNodeCache(t *testing.T) {
	c := newNodeCache(2)
	enc := func(name string) []byte {
		b, _ := json.Marshal(&model.Node{UUID: "u", Name: name, Extra: model.JSON{"k": "v"}})
		return b
	}
	first, err := c.decode(1, enc("a"))
	if err != nil || first.Name != "a" {
		t.Fatalf("decode = %+v, %v", first, err)
	}
	first.Extra["k"] = "mutated by the caller"
	again, _ := c.decode(1, enc("a"))
	if again.Extra["k"] != "v" || again == first {
		t.Fatalf("cache handed out shared data: %+v", again)
	}
	if changed, _ := c.decode(1, enc("b")); changed.Name != "b" {
		t.Fatalf("changed row served from the cache: %q", changed.Name)
	}
	for id := range int64(10) {
		if _, err := c.decode(id, enc("x")); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m) > 2 {
		t.Fatalf("cache grew to %d entries, bound is 2", len(c.m))
	}
	if _, err := c.decode(99, []byte("{")); err == nil {
		t.Fatal("bad JSON: no error")
	}
	var off *nodeCache
	if n, err := off.decode(1, enc("a")); err != nil || n.Name != "a" {
		t.Fatalf("nil cache decode = %+v, %v", n, err)
	}
}
