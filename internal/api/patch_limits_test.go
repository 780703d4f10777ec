package api

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// bigPatch is n operations adding extra/k<i>, then replacing each.
func bigPatch(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		op := "add"
		if i%2 == 1 {
			op = "replace"
		}
		fmt.Fprintf(&b, `{"op": %q, "path": "/extra/k%d", "value": "%s"}`, op, i/2, strings.Repeat("v", 32))
	}
	b.WriteString("]")
	return b.String()
}

func TestPatchOperationCap(t *testing.T) {
	e := newEnv(t)
	e.createNode(`{"driver": "fake-hardware", "name": "capped"}`)
	rec := e.do("PATCH", "/v1/nodes/capped", bigPatch(maxPatchOps+1), latest)
	if rec.Code != 400 {
		t.Fatalf("PATCH of %d operations: %d %s", maxPatchOps+1, rec.Code, rec.Body)
	}
	if code, msg := faultOf(t, rec); code != "Client" || !strings.Contains(msg, "at most 1000 operations") {
		t.Fatalf("fault %s %q", code, msg)
	}
	rec = e.do("PATCH", "/v1/nodes/capped", bigPatch(maxPatchOps), latest)
	if rec.Code != 200 {
		t.Fatalf("PATCH of %d operations: %d %s", maxPatchOps, rec.Code, rec.Body)
	}
	if extra := decode(t, rec)["extra"].(map[string]any); len(extra) != maxPatchOps/2 {
		t.Fatalf("extra has %d keys, want %d", len(extra), maxPatchOps/2)
	}
}

// TestPatchListOps: add/insert/append/replace/remove inside nested lists
// land where RFC 6902 says.
func TestPatchListOps(t *testing.T) {
	doc := map[string]any{"extra": map[string]any{"l": []any{"a", "b", map[string]any{"m": []any{1.0}}}}}
	ops, err := parsePatch([]any{
		map[string]any{"op": "add", "path": "/extra/l/0", "value": "z"},
		map[string]any{"op": "add", "path": "/extra/l/-", "value": "end"},
		map[string]any{"op": "remove", "path": "/extra/l/1"},
		map[string]any{"op": "replace", "path": "/extra/l/1", "value": "B"},
		map[string]any{"op": "add", "path": "/extra/l/2/m/-", "value": 2.0},
	}, MaxMinor)
	if err != nil {
		t.Fatal(err)
	}
	out, err := applyPatch(t.Context(), doc, ops)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(out["extra"])
	if want := "map[l:[z B map[m:[1 2]] end]]"; got != want {
		t.Fatalf("patched extra = %s, want %s", got, want)
	}
	if fmt.Sprint(doc["extra"]) != "map[l:[a b map[m:[1]]]]" {
		t.Fatalf("input document changed: %v", doc["extra"])
	}
}

func TestPatchStopsWhenClientLeaves(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ops, err := parsePatch(decodeJSONForTest(t, bigPatch(200)), MaxMinor)
	if err != nil {
		t.Fatal(err)
	}
	_, err = applyPatch(ctx, map[string]any{"extra": map[string]any{}}, ops)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("applyPatch after the client left: %v", err)
	}
}

// TestClientGoneIs499: a request whose client left is answered (and so
// counted) 499, as nginx records it, not as a 500.
func TestClientGoneIs499(t *testing.T) {
	e := newEnv(t)
	e.createNode(`{"driver": "fake-hardware", "name": "gone"}`)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req := httptest.NewRequest("PATCH", "http://"+testHost+"/v1/nodes/gone", strings.NewReader(bigPatch(200))).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != statusClientClosed {
		t.Fatalf("PATCH whose client left: %d %s", rec.Code, rec.Body)
	}
}

// BenchmarkPatch1000: one PATCH of the largest accepted size.
func BenchmarkPatch1000(b *testing.B) {
	ops, err := parsePatch(decodeJSONForTest(b, bigPatch(maxPatchOps)), MaxMinor)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := applyPatch(b.Context(), map[string]any{"extra": map[string]any{}}, ops); err != nil {
			b.Fatal(err)
		}
	}
}

func decodeJSONForTest(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := jsonCopy(jsonRaw(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// jsonRaw marshals as its own text.
type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }
