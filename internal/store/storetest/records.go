package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Two record kinds of the generic record table, as a resource declares
// one: a type embedding model.RecordHead and a kind name.
type (
	widget struct {
		model.RecordHead
		Size int      `json:"size"`
		Tags []string `json:"tags"`
	}
	gadget struct {
		model.RecordHead
		Color string `json:"color"`
	}
)

func widgets(s store.Store) store.Records[widget, *widget] {
	return store.RecordsOf[widget](s.Records(), "widget")
}

func gadgets(s store.Store) store.Records[gadget, *gadget] {
	return store.RecordsOf[gadget](s.Records(), "gadget")
}

func testRecords(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip", recordRoundTrip},
		{"stamps before encoding", recordStamps},
		{"kinds are isolated", recordKinds},
		{"duplicates", recordDuplicates},
		{"update and delete", recordUpdateDelete},
		{"unnamed records", recordUnnamed},
		{"list: owner, sorts and pages", recordList},
		{"list errors", recordListErrors},
	})
}

func newWidget(name, owner string, size int) *widget {
	return &widget{RecordHead: model.RecordHead{UUID: uuid.NewString(), Name: name, Owner: owner},
		Size: size, Tags: []string{"a", fmt.Sprint("size-", size)}}
}

func mustCreateWidget(t *testing.T, s store.Store, w *widget) *widget {
	t.Helper()
	if err := widgets(s).Create(t.Context(), w); err != nil {
		t.Fatalf("create widget %q: %v", w.Name, err)
	}
	return w
}

func mustGetWidget(t *testing.T, s store.Store, ident string) *widget {
	t.Helper()
	w, err := widgets(s).Get(t.Context(), ident)
	if err != nil {
		t.Fatalf("get widget %s: %v", ident, err)
	}
	return w
}

// recordRoundTrip: every head field and the body come back, by name and by
// UUID, typed and raw.
func recordRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := newWidget("w1", "p1", 7)
	w.CreatedAt = stamp(0)
	mustCreateWidget(t, s, w)
	if w.ID == 0 || w.Version != 1 {
		t.Fatalf("create did not set id and version: %+v", w.RecordHead)
	}
	wantEqual(t, "created_at as stored", w.CreatedAt, stored(stamp(0)))
	byName := mustGetWidget(t, s, "w1")
	byUUID := mustGetWidget(t, s, w.UUID)
	wantEqual(t, "by name and by uuid", byName, byUUID)
	wantEqual(t, "round trip", byName, w)

	raw, err := s.Records().GetRecord(ctx, "widget", w.UUID)
	wantErr(t, "raw get", err, nil)
	wantEqual(t, "raw head", raw.Head, w.RecordHead)
	var body map[string]any
	wantErr(t, "raw data is JSON", json.Unmarshal(raw.Data, &body), nil)
	wantEqual(t, "raw data", body, map[string]any{
		"uuid": w.UUID, "name": "w1", "owner": "p1", "created_at": w.CreatedAt.Format(time.RFC3339Nano),
		"size": 7.0, "tags": []any{"a", "size-7"},
	})
}

// recordStamps: a create fills the UUID and creation time before it
// encodes, so the JSON holds them too.
func recordStamps(t *testing.T, s store.Store) {
	w := &widget{Size: 1}
	mustCreateWidget(t, s, w)
	if _, err := uuid.Parse(w.UUID); err != nil || w.CreatedAt.IsZero() || w.CreatedAt.Location().String() != "UTC" {
		t.Fatalf("create did not stamp uuid and created_at (UTC): %+v", w.RecordHead)
	}
	raw, err := s.Records().GetRecord(t.Context(), "widget", w.UUID)
	wantErr(t, "raw get", err, nil)
	var body model.RecordHead
	wantErr(t, "decode", json.Unmarshal(raw.Data, &body), nil)
	wantEqual(t, "uuid in data", body.UUID, w.UUID)
	wantEqual(t, "created_at in data", body.CreatedAt, w.CreatedAt)
	wantEqual(t, "round trip", mustGetWidget(t, s, w.UUID), w)
}

// recordKinds: the same name in two kinds; another kind's UUID or name is
// not found to get, update or delete, and nothing of it changes.
func recordKinds(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := mustCreateWidget(t, s, newWidget("shared", "p1", 1))
	only := mustCreateWidget(t, s, newWidget("widget-only", "", 2))
	g := &gadget{RecordHead: model.RecordHead{Name: "shared"}, Color: "red"}
	wantErr(t, "gadget with a widget's name", gadgets(s).Create(ctx, g), nil)

	got, err := gadgets(s).Get(ctx, "shared")
	wantErr(t, "gadget by name", err, nil)
	wantEqual(t, "gadget by name", got, g)
	wantEqual(t, "widget by name", mustGetWidget(t, s, "shared"), w)
	for _, ident := range []string{w.UUID, "widget-only", only.UUID} {
		_, err := gadgets(s).Get(ctx, ident)
		wantErr(t, "gadget get of widget "+ident, err, store.ErrNotFound)
	}
	_, err = widgets(s).Get(ctx, g.UUID)
	wantErr(t, "widget get of a gadget", err, store.ErrNotFound)

	// A widget's head as a gadget: right UUID and version, wrong kind.
	as := &gadget{RecordHead: only.RecordHead, Color: "blue"}
	wantErr(t, "gadget update of a widget", gadgets(s).Update(ctx, as), store.ErrNotFound)
	wantEqual(t, "version after failed update", as.Version, only.Version)
	wantErr(t, "gadget delete of a widget", gadgets(s).Delete(ctx, only.UUID), store.ErrNotFound)
	wantEqual(t, "widget untouched", mustGetWidget(t, s, only.UUID), only)

	list, err := gadgets(s).List(ctx, store.RecordQuery{})
	wantErr(t, "list gadgets", err, nil)
	wantEqual(t, "gadgets listed", list, []*gadget{g})
	ws, err := widgets(s).List(ctx, store.RecordQuery{})
	wantErr(t, "list widgets", err, nil)
	wantEqual(t, "widgets listed", ws, []*widget{w, only})
}

// recordDuplicates: a UUID is unique over every kind, a name within its
// kind, on create and on update.
func recordDuplicates(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := mustCreateWidget(t, s, newWidget("w1", "", 1))
	mustCreateWidget(t, s, newWidget("w2", "", 2))

	wantDuplicate(t, "same name", widgets(s).Create(ctx, newWidget("w1", "", 3)), "name", "w1")
	same := newWidget("w3", "", 3)
	same.UUID = w.UUID
	wantDuplicate(t, "same uuid", widgets(s).Create(ctx, same), "uuid", w.UUID)
	g := &gadget{RecordHead: model.RecordHead{UUID: w.UUID, Name: "g1"}}
	wantDuplicate(t, "a widget's uuid in another kind", gadgets(s).Create(ctx, g), "uuid", w.UUID)
	_, err := gadgets(s).Get(ctx, "g1")
	wantErr(t, "failed create left nothing", err, store.ErrNotFound)

	rename := mustGetWidget(t, s, w.UUID)
	rename.Name = "w2"
	wantDuplicate(t, "rename onto w2", widgets(s).Update(ctx, rename), "name", "w2")
	wantEqual(t, "version after failed rename", rename.Version, int64(1))
	if !rename.UpdatedAt.IsZero() {
		t.Fatalf("failed rename left updated_at %v, want zero", rename.UpdatedAt)
	}
	wantEqual(t, "after failed rename", mustGetWidget(t, s, w.UUID), w)
}

// recordUpdateDelete: an update bumps the version and sets updated_at; a
// stale one changes nothing; a deleted record is gone.
func recordUpdateDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := mustCreateWidget(t, s, newWidget("w1", "p1", 1))
	stale := *w

	got := mustGetWidget(t, s, "w1")
	got.Name, got.Owner, got.Size, got.Tags = "w1b", "", 2, nil
	wantErr(t, "update", widgets(s).Update(ctx, got), nil)
	if got.Version != 2 || got.UpdatedAt.IsZero() || got.UpdatedAt.Location().String() != "UTC" {
		t.Fatalf("update did not bump version or set updated_at (UTC): %+v", got.RecordHead)
	}
	wantEqual(t, "after update", mustGetWidget(t, s, got.UUID), got)
	_, err := widgets(s).Get(ctx, "w1")
	wantErr(t, "old name", err, store.ErrNotFound)

	stale.Size = 99
	wantErr(t, "stale update", widgets(s).Update(ctx, &stale), store.ErrStale)
	wantEqual(t, "stale version kept", stale.Version, int64(1))
	if !stale.UpdatedAt.IsZero() {
		t.Fatalf("stale update left updated_at %v, want zero", stale.UpdatedAt)
	}
	wantEqual(t, "nothing changed by the stale update", mustGetWidget(t, s, got.UUID), got)

	wantErr(t, "delete", widgets(s).Delete(ctx, got.UUID), nil)
	_, err = widgets(s).Get(ctx, got.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete again", widgets(s).Delete(ctx, got.UUID), store.ErrNotFound)
	wantErr(t, "update deleted", widgets(s).Update(ctx, got), store.ErrNotFound)
}

// recordUnnamed: any number of records without a name; "" finds none.
func recordUnnamed(t *testing.T, s store.Store) {
	ctx := t.Context()
	var want []*widget
	for i := range 3 {
		want = append(want, mustCreateWidget(t, s, newWidget("", "", i)))
	}
	_, err := widgets(s).Get(ctx, "")
	wantErr(t, `get ""`, err, store.ErrNotFound)
	got := mustGetWidget(t, s, want[1].UUID)
	got.Size = 10
	wantErr(t, "update unnamed", widgets(s).Update(ctx, got), nil)
	want[1] = got
	list, err := widgets(s).List(ctx, store.RecordQuery{SortKey: "name"})
	wantErr(t, "list", err, nil)
	wantEqual(t, "unnamed, by name then id", list, want)
}

// recordList: the owner filter, every sort key both ways, and paging
// through every order with a marker.
func recordList(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Names, owners and creation times repeat or are empty, and only some
	// records are updated, so every key needs its id tie-break.
	for i, name := range []string{"c", "", "a", "b", "", "d", "e"} {
		w := newWidget(name, []string{"p1", "", "p2"}[i%3], i)
		w.CreatedAt = stamp(i % 2)
		mustCreateWidget(t, s, w)
		if i%3 == 1 {
			w.Size++
			wantErr(t, "update", widgets(s).Update(ctx, w), nil)
		}
	}
	mustCreateWidget(t, s, newWidget("f", "p1", 0))
	wantErr(t, "a gadget", gadgets(s).Create(ctx, &gadget{RecordHead: model.RecordHead{Owner: "p1"}}), nil)

	all, err := widgets(s).List(ctx, store.RecordQuery{})
	wantErr(t, "list all", err, nil)
	if len(all) != 8 || !slices.IsSortedFunc(all, func(a, b *widget) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatalf("list all: %d widgets, want 8 in id order", len(all))
	}
	uuids := func(ws []*widget) []string {
		out := []string{}
		for _, w := range ws {
			out = append(out, w.UUID)
		}
		return out
	}

	p1, err := widgets(s).List(ctx, store.RecordQuery{Owner: "p1"})
	wantErr(t, "owner p1", err, nil)
	want := slices.DeleteFunc(slices.Clone(all), func(w *widget) bool { return w.Owner != "p1" })
	if len(want) != 4 {
		t.Fatalf("fixture: %d widgets of p1, want 4", len(want))
	}
	wantEqual(t, "owner p1", uuids(p1), uuids(want))

	keys := map[string]func(a, b *widget) int{
		"id":         func(a, b *widget) int { return cmp.Compare(a.ID, b.ID) },
		"uuid":       func(a, b *widget) int { return cmp.Compare(a.UUID, b.UUID) },
		"name":       func(a, b *widget) int { return cmp.Compare(a.Name, b.Name) },
		"owner":      func(a, b *widget) int { return cmp.Compare(a.Owner, b.Owner) },
		"created_at": func(a, b *widget) int { return a.CreatedAt.Compare(b.CreatedAt) },
		"updated_at": func(a, b *widget) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
	}
	if len(keys) != len(store.RecordSortKeys) {
		t.Fatalf("test sorts %d keys, store.RecordSortKeys has %d", len(keys), len(store.RecordSortKeys))
	}
	for _, key := range store.RecordSortKeys {
		for _, dir := range []string{"asc", "desc"} {
			by := keys[key]
			want := slices.SortedStableFunc(slices.Values(all), func(a, b *widget) int {
				c := cmp.Or(by(a, b), cmp.Compare(a.ID, b.ID))
				if dir == "desc" {
					return -c
				}
				return c
			})
			q := store.RecordQuery{SortKey: key, SortDir: dir}
			got, err := widgets(s).List(ctx, q)
			wantErr(t, "list "+key+" "+dir, err, nil)
			wantEqual(t, "list by "+key+" "+dir, uuids(got), uuids(want))

			var paged []*widget
			for q.Limit = 3; ; {
				page, err := widgets(s).List(ctx, q)
				wantErr(t, "page by "+key+" "+dir, err, nil)
				if len(page) > q.Limit {
					t.Fatalf("page by %s %s: %d records, limit %d", key, dir, len(page), q.Limit)
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				q.Marker = page[len(page)-1].UUID
			}
			wantEqual(t, "paged by "+key+" "+dir, uuids(paged), uuids(want))
		}
	}
}

// recordListErrors: an unknown marker (or another kind's record as one),
// sort key or direction is an error, as the other lists'.
func recordListErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateWidget(t, s, newWidget("w1", "", 1))
	g := &gadget{}
	wantErr(t, "a gadget", gadgets(s).Create(ctx, g), nil)
	for _, c := range []struct {
		name     string
		q        store.RecordQuery
		notFound bool
	}{
		{"unknown marker", store.RecordQuery{Marker: uuid.NewString()}, true},
		{"unknown marker, sorted", store.RecordQuery{Marker: uuid.NewString(), SortKey: "name"}, true},
		{"another kind's marker", store.RecordQuery{Marker: g.UUID}, true},
		{"another kind's marker, sorted", store.RecordQuery{Marker: g.UUID, SortKey: "created_at", SortDir: "desc"}, true},
		{"invalid sort key", store.RecordQuery{SortKey: "data"}, false},
		{"injection in sort key", store.RecordQuery{SortKey: "id; DROP TABLE records"}, false},
		{"invalid sort direction", store.RecordQuery{SortDir: "sideways"}, false},
	} {
		got, err := widgets(s).List(ctx, c.q)
		if err == nil {
			t.Fatalf("%s: list = %d widgets, want an error", c.name, len(got))
		}
		if c.notFound {
			wantErr(t, c.name, err, store.ErrNotFound)
		} else if errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: %v, want an error other than not found", c.name, err)
		}
	}
	mustGetWidget(t, s, "w1")
}
