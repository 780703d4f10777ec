package api

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/model"
)

// widget is a record kind declared the way a new one is (one type, one
// Kind), served by a test server only.
type widget struct {
	model.RecordHead
	Size  int            `json:"size"`
	Tags  []string       `json:"tags"`
	Extra map[string]any `json:"extra"`
}

var widgetKind = Kind[widget, *widget]{Name: "widget", Plural: "widgets", Minor: 1,
	Validate: func(w *widget) error {
		if w.Size < 0 {
			return invalid("A widget's size cannot be negative: %d", w.Size)
		}
		return nil
	}}

// newKindEnv is newEnv with the widget kind served.
func newKindEnv(t testing.TB) *env {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 12, 2, 12, 16, 3, 434301000, time.UTC)}
	st, fc := newTestBackend(t, "anvil-test", clock.Now)
	h := New(Wire(Config{Now: clock.Now, Kinds: []RecordKind{widgetKind},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, fc))
	return &env{t: t, h: h, st: st, cond: fc, clock: clock}
}

// keysInOrder are a JSON object's keys in the order the body has them.
func keysInOrder(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	depth := 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == '"':
			j := i + 1
			for body[j] != '"' {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 1 && body[j+1] == ':' {
				out = append(out, body[i+1:j])
			}
			i = j
		}
	}
	return out
}

// TestRecordKindRoutes: a kind declared by one Kind is served whole —
// create, show by UUID and name, list with paging, patch, delete, the
// /v1 link, Ironic-style texts — and what a client sends wrong is a 400
// naming it, never a 500, and changes nothing.
func TestRecordKindRoutes(t *testing.T) {
	e := newKindEnv(t)
	rec := e.do("POST", "/v1/widgets", `{"name": "w1", "size": 3, "tags": ["a"], "extra": {"k": "v"}}`, latest)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	w1 := decode(t, rec)
	id := w1["uuid"].(string)
	if loc := rec.Header().Get("Location"); loc != "http://"+testHost+"/v1/widgets/"+id {
		t.Errorf("Location %q", loc)
	}
	want := []string{"uuid", "name", "owner", "created_at", "updated_at", "size", "tags", "extra", "links"}
	if got := keysInOrder(t, rec.Body.String()); !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if w1["owner"] != nil || w1["updated_at"] != nil || w1["created_at"] != "2026-12-02T12:16:03.434301+00:00" ||
		w1["size"] != float64(3) {
		t.Errorf("created: %v", w1)
	}
	for _, ident := range []string{id, "w1"} {
		if rec := e.do("GET", "/v1/widgets/"+ident, "", latest); rec.Code != 200 || decode(t, rec)["uuid"] != id {
			t.Errorf("GET %s: %d %s", ident, rec.Code, rec.Body)
		}
	}
	if rec := e.do("GET", "/v1/widgets/"+id+"?fields=size", "", latest); rec.Code != 200 ||
		!slices.Equal(keysInOrder(t, rec.Body.String()), []string{"size", "links"}) {
		t.Errorf("fields=size: %d %s", rec.Code, rec.Body)
	}

	// Paging: three more, two a page, by name.
	for _, n := range []string{"w2", "w3", "w4"} {
		if rec := e.do("POST", "/v1/widgets", `{"name": "`+n+`"}`, latest); rec.Code != 201 {
			t.Fatalf("create %s: %d %s", n, rec.Code, rec.Body)
		}
	}
	var names []string
	next := "/v1/widgets?limit=2&sort_key=name&sort_dir=desc"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		page := decode(t, e.do("GET", next, "", latest))
		for _, w := range page["widgets"].([]any) {
			names = append(names, w.(map[string]any)["name"].(string))
		}
		next = ""
		if n, ok := page["next"].(string); ok {
			next = strings.TrimPrefix(n, "http://"+testHost)
		}
	}
	if !slices.Equal(names, []string{"w4", "w3", "w2", "w1"}) {
		t.Errorf("paged names %v", names)
	}
	if !strings.Contains(e.do("GET", "/v1", "", latest).Body.String(), `"widgets": [{"href": "http://`+testHost+`/v1/widgets/"`) {
		t.Errorf("GET /v1 has no widgets link: %s", e.do("GET", "/v1", "", latest).Body)
	}

	// PATCH: a field, a list item, the name; the head's own fields refused.
	rec = e.do("PATCH", "/v1/widgets/w1", `[{"op": "replace", "path": "/size", "value": 5},
		{"op": "add", "path": "/tags/-", "value": "b"}, {"op": "replace", "path": "/name", "value": "one"}]`, latest)
	if rec.Code != 200 {
		t.Fatalf("patch: %d %s", rec.Code, rec.Body)
	}
	if p := decode(t, rec); p["size"] != float64(5) || p["name"] != "one" || len(p["tags"].([]any)) != 2 ||
		p["updated_at"] == nil || p["created_at"] != w1["created_at"] {
		t.Errorf("patched: %v", p)
	}

	stored := e.do("GET", "/v1/widgets/"+id, "", latest).Body.String()
	for _, bad := range []struct{ method, path, body, text string }{
		{"POST", "/v1/widgets", `{"colour": "red"}`, `'colour' was unexpected`},
		{"POST", "/v1/widgets", `{"size": "big"}`, `'big' is not of type 'integer'`},
		{"POST", "/v1/widgets", `{"size": -1}`, "size cannot be negative"},
		{"POST", "/v1/widgets", `{"name": "one"}`, "A widget with name one already exists."},
		{"POST", "/v1/widgets", `{"uuid": "` + id + `"}`, "A widget with UUID " + id + " already exists."},
		{"POST", "/v1/widgets", `{"name": "bad name"}`, "is not a valid name"},
		{"POST", "/v1/widgets", `{"name": "6c6bd4b4-8df9-4b4b-9d9a-2b7c4bd1a8e1"}`, "is not a valid name"},
		{"POST", "/v1/widgets", `{"uuid": "nope"}`, "nope"},
		{"POST", "/v1/widgets", `{"created_at": "2020-01-01"}`, `'created_at' was unexpected`},
		{"POST", "/v1/widgets", `[1]`, "is not of type 'object'"},
		{"POST", "/v1/widgets", `{"size": 1`, ""},
		{"PATCH", "/v1/widgets/" + id, `[{"op": "replace", "path": "/uuid", "value": "x"}]`, "Cannot patch /uuid"},
		{"PATCH", "/v1/widgets/" + id, `[{"op": "replace", "path": "/created_at", "value": "x"}]`, "Cannot patch /created_at"},
		{"PATCH", "/v1/widgets/" + id, `[{"op": "replace", "path": "/size", "value": -2}]`, "size cannot be negative"},
		{"PATCH", "/v1/widgets/" + id, `[{"op": "replace", "path": "/size", "value": "x"}]`, "is not of type 'integer'"},
		{"PATCH", "/v1/widgets/" + id, `[{"op": "replace", "path": "/name", "value": "w2"}]`, "A widget with name w2 already exists."},
		{"PATCH", "/v1/widgets/" + id, `[{"op": "remove", "path": "/nothing"}]`, "Cannot patch /nothing"},
		{"GET", "/v1/widgets?sort_key=size", "", "size"},
		{"GET", "/v1/widgets?marker=6c6bd4b4-8df9-4b4b-9d9a-2b7c4bd1a8e1", "", "Widget 6c6bd4b4-8df9-4b4b-9d9a-2b7c4bd1a8e1 could not be found."},
		{"GET", "/v1/widgets/nope", "", "Widget nope could not be found."},
		{"DELETE", "/v1/widgets/nope", "", "Widget nope could not be found."},
	} {
		rec := e.do(bad.method, bad.path, bad.body, latest)
		if rec.Code < 400 || rec.Code >= 500 || !strings.Contains(rec.Body.String(), bad.text) {
			t.Errorf("%s %s %s: %d %s, want 4xx with %q", bad.method, bad.path, bad.body, rec.Code, rec.Body, bad.text)
		}
	}
	if now := e.do("GET", "/v1/widgets/"+id, "", latest).Body.String(); now != stored {
		t.Errorf("a refused request changed the record:\n%s\n%s", stored, now)
	}

	if rec := e.do("DELETE", "/v1/widgets/one", "", latest); rec.Code != 204 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("GET", "/v1/widgets/"+id, "", latest); rec.Code != 404 {
		t.Errorf("deleted, then GET: %d %s", rec.Code, rec.Body)
	}
}

// TestRecordKindPolicy: a kind's rules are on the route table and in
// force — a project sees and changes only its own records (another
// project's is a 404, not a 403), creates records it owns, cannot give
// one away; a system reader reads every record and writes none.
func TestRecordKindPolicy(t *testing.T) {
	e := newKindEnv(t)
	for _, r := range []string{"create", "get", "list", "list_all", "update", "update:owner", "delete"} {
		if !e.server().enforcer.Known("baremetal:widget:" + r) {
			t.Errorf("rule baremetal:widget:%s unknown", r)
		}
	}
	var guarded int
	for _, r := range e.server().Routes() {
		if strings.HasPrefix(r.Pattern, "/v1/widgets") {
			guarded++
			if len(r.Rules) == 0 || !strings.HasPrefix(r.Rules[0], "baremetal:widget:") {
				t.Errorf("route %s %s rules %v", r.Method, r.Pattern, r.Rules)
			}
		}
	}
	if guarded != 5 {
		t.Errorf("%d widget routes, want 5", guarded)
	}

	a := e.as(auth.Principal{User: "a", Project: "projA", Roles: []string{"manager"}})
	b := e.as(auth.Principal{User: "b", Project: "projB", Roles: []string{"manager"}})
	reader := e.as(auth.Principal{User: "r", Roles: []string{"reader"}})

	rec := b.do("POST", "/v1/widgets", `{"name": "bw", "size": 1}`, latest)
	if rec.Code != 201 || decode(t, rec)["owner"] != "projB" {
		t.Fatalf("B creates: %d %s", rec.Code, rec.Body)
	}
	bID := decode(t, rec)["uuid"].(string)
	if rec := a.do("POST", "/v1/widgets", `{"name": "aw", "owner": "projB"}`, latest); rec.Code != 400 {
		t.Errorf("A creates one owned by B: %d %s", rec.Code, rec.Body)
	}
	if rec := a.do("POST", "/v1/widgets", `{"name": "aw"}`, latest); rec.Code != 201 || decode(t, rec)["owner"] != "projA" {
		t.Fatalf("A creates: %d %s", rec.Code, rec.Body)
	}
	before := e.do("GET", "/v1/widgets/"+bID, "", latest).Body.String()
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/widgets/" + bID, ""},
		{"GET", "/v1/widgets/bw", ""},
		{"PATCH", "/v1/widgets/" + bID, `[{"op": "replace", "path": "/size", "value": 9}]`},
		{"DELETE", "/v1/widgets/" + bID, ""},
		{"DELETE", "/v1/widgets/bw", ""},
	} {
		if rec := a.do(req.method, req.path, req.body, latest); rec.Code != 404 || strings.Contains(rec.Body.String(), bID) && req.path != "/v1/widgets/"+bID {
			t.Errorf("A: %s %s = %d %s, want 404", req.method, req.path, rec.Code, rec.Body)
		}
	}
	if rec := a.do("GET", "/v1/widgets?project=projB", "", latest); rec.Code != 403 {
		t.Errorf("A lists B's: %d %s", rec.Code, rec.Body)
	}
	if list := a.do("GET", "/v1/widgets", "", latest).Body.String(); strings.Contains(list, bID) || !strings.Contains(list, `"aw"`) {
		t.Errorf("A's list: %s", list)
	}
	if rec := a.do("PATCH", "/v1/widgets/aw", `[{"op": "replace", "path": "/owner", "value": "projB"}]`, latest); rec.Code != 403 ||
		!strings.Contains(rec.Body.String(), "baremetal:widget:update:owner") {
		t.Errorf("A gives its widget away: %d %s", rec.Code, rec.Body)
	}
	if rec := a.do("PATCH", "/v1/widgets/aw", `[{"op": "replace", "path": "/size", "value": 2}]`, latest); rec.Code != 200 {
		t.Errorf("A changes its own: %d %s", rec.Code, rec.Body)
	}
	if rec := reader.do("GET", "/v1/widgets", "", latest); rec.Code != 200 || !strings.Contains(rec.Body.String(), bID) {
		t.Errorf("system reader lists: %d %s", rec.Code, rec.Body)
	}
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/v1/widgets", `{"name": "rw"}`},
		{"PATCH", "/v1/widgets/" + bID, `[{"op": "replace", "path": "/size", "value": 9}]`},
		{"DELETE", "/v1/widgets/" + bID, ""},
	} {
		if rec := reader.do(req.method, req.path, req.body, latest); rec.Code != 403 {
			t.Errorf("system reader: %s %s = %d %s, want 403", req.method, req.path, rec.Code, rec.Body)
		}
	}
	if now := e.do("GET", "/v1/widgets/"+bID, "", latest).Body.String(); now != before {
		t.Errorf("B's widget changed:\n%s\n%s", before, now)
	}
}

// FuzzRecordKindBody: whatever a POST or PATCH of a record kind carries,
// the answer is never a 5xx.
func FuzzRecordKindBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"name": "w", "size": 1, "tags": ["a"], "extra": {"a": [1]}}`, `{"size": 1e99}`,
		`{"tags": [1]}`, `{"extra": []}`, `{"uuid": null, "name": null, "owner": 3}`, `{"size": 1.5}`, `null`,
		`[{"op": "add", "path": "/extra/a", "value": 1}]`, `[{"op": "remove", "path": "/tags/0"}]`} {
		f.Add(s)
	}
	e := newKindEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		e := e.with(t)
		created := e.do("POST", "/v1/widgets", `{}`, latest)
		if created.Code != 201 {
			t.Fatalf("create: %d %s", created.Code, created.Body)
		}
		id := decode(t, created)["uuid"].(string)
		for _, m := range []string{"POST", "PATCH"} {
			path := "/v1/widgets"
			if m == "PATCH" {
				path += "/" + id
			}
			if rec := e.do(m, path, body, latest); rec.Code >= 500 {
				t.Fatalf("%s %s: %d %s", m, body, rec.Code, rec.Body)
			}
		}
	})
}
