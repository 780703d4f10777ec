package api

import (
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
)

// bodyEndpoints are every route that reads a body.
var bodyEndpoints = []struct{ method, path string }{
	{"POST", "/v1/nodes"},
	{"PATCH", "/v1/nodes/bad-input"},
	{"PUT", "/v1/nodes/bad-input/states/provision"},
	{"PUT", "/v1/nodes/bad-input/states/power"},
	{"PUT", "/v1/nodes/bad-input/maintenance"},
	{"DELETE", "/v1/nodes/bad-input/maintenance"},
	{"PUT", "/v1/nodes/bad-input/management/boot_device"},
	{"POST", "/v1/ports"},
	{"PATCH", "/v1/ports/00000000-0000-0000-0000-0000000000aa"},
	{"PUT", "/v1/nodes/bad-input/traits"},
	{"POST", "/v1/portgroups"},
	{"PATCH", "/v1/portgroups/bad-input-pg"},
	{"POST", "/v1/nodes/bad-input/vifs"},
	{"POST", "/v1/allocations"},
	{"PATCH", "/v1/allocations/bad-input-alloc"},
	{"POST", "/v1/volume/connectors"},
	{"PATCH", "/v1/volume/connectors/" + badInputConnector},
	{"POST", "/v1/volume/targets"},
	{"PATCH", "/v1/volume/targets/" + badInputTarget},
	{"POST", "/v1/runbooks"},
	{"PATCH", "/v1/runbooks/CUSTOM_BAD_INPUT"},
}

// The volume connector and target FuzzRequestBodies patches.
const (
	badInputConnector = "00000000-0000-4000-8000-0000000000c1"
	badInputTarget    = "00000000-0000-4000-8000-0000000000c2"
)

func TestBadBodiesAre4xx(t *testing.T) {
	deep := strings.Repeat("[", 26) + strings.Repeat("]", 26)
	bodies := []struct {
		name, body, ctype string
		status            int
	}{
		{"malformed", `{bad`, "application/json", 400},
		{"truncated", `{"driver": "x"`, "application/json", 400},
		{"trailing data", `{"driver":"fake-hardware"} {}`, "application/json", 400},
		{"two values", `[] []`, "application/json", 400},
		{"deep", deep, "application/json", 400},
		{"deep in object", `{"a":` + deep + `}`, "application/json", 400},
		{"deep brackets inside strings are fine", `{"target":"` + deep + `"}`, "application/json", 0},
		{"text/plain", `{"target":"manage"}`, "text/plain", 415},
		{"form", `target=manage`, "application/x-www-form-urlencoded", 415},
		{"bad media type", `{}`, "application/json; ===", 415},
		{"invalid utf-8", "{\"target\":\"\xff\xfe\"}", "application/json", 0},
		{"huge number", `{"target":"power on","timeout":1e400}`, "application/json", 400},
		{"numbers everywhere", `[1, 2.5, -3e10]`, "application/json", 0},
		{"null", `null`, "application/json", 0},
		{"string", `"x"`, "application/json", 0},
		{"wrong types", `{"target":[],"address":{},"driver":true,"reason":[],"boot_device":{},"timeout":{}}`, "application/json", 400},
		{"nul bytes", "{\"target\":\"a\\u0000b\"}", "application/json", 0},
	}
	for _, ep := range bodyEndpoints {
		for _, b := range bodies {
			t.Run(ep.method+" "+ep.path+" "+b.name, func(t *testing.T) {
				e := newEnv(t)
				e.mustNode(nodeFixture("bad-input"))
				req := httptest.NewRequest(ep.method, "http://"+testHost+ep.path, strings.NewReader(b.body))
				req.Header.Set("Content-Type", b.ctype)
				req.Header.Set(hdrLegacyVersion, "latest")
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if rec.Code >= 500 || (rec.Code >= 300 && rec.Code < 400) {
					t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
				if b.status != 0 && rec.Code != b.status {
					t.Fatalf("status %d, want %d: %s", rec.Code, b.status, rec.Body.String())
				}
				if rec.Code >= 400 {
					faultOf(t, rec)
				}
			})
		}
	}
}

func TestBodySizeLimits(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("big"))
	big := `{"driver":"fake-hardware","extra":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
	rec := e.do("POST", "/v1/nodes", big, latest)
	if _, msg := faultOf(t, rec); rec.Code != 413 || msg != "Request body is too large. Please contact the service administrator." {
		t.Fatalf("%d %q", rec.Code, msg)
	}
	// Unknown length (chunked): the cap applies while reading.
	req := httptest.NewRequest("POST", "http://"+testHost+"/v1/nodes", io.MultiReader(strings.NewReader(big)))
	req.Header.Set(hdrLegacyVersion, "latest")
	if req.ContentLength != -1 {
		req.ContentLength = -1
	}
	out := httptest.NewRecorder()
	e.h.ServeHTTP(out, req)
	if out.Code != 413 {
		t.Fatalf("chunked: %d", out.Code)
	}
	// The provision endpoint takes config drives up to its own, larger cap.
	cd := `{"target":"active","configdrive":"` + strings.Repeat("QUJD", 1<<19) + `"}`
	n.ProvisionState = "available"
	_ = e.st.Nodes().UpdateNode(t.Context(), n)
	if rec := e.do("PUT", "/v1/nodes/big/states/provision", cd, latest); rec.Code != 202 {
		t.Fatalf("config drive: %d %s", rec.Code, rec.Body.String())
	}
}

func TestOddPathsAre4xx(t *testing.T) {
	e := newEnv(t)
	e.mustNode(nodeFixture("odd"))
	paths := []string{
		"/v1/nodes/%2F", "/v1/nodes/a%2Fb/states", "/v1/nodes/%00", "/v1/nodes/%ff%fe",
		"/v1/nodes/" + strings.Repeat("x", 70000), "/v1/nodes/odd/bogus", "/v1/nodes/odd/states/bogus",
		"/v1/nodes/✓", "/v1/nodes/..%2F..%2Fetc", "/v1/ports/%2F", "/v1/drivers/%2F", "/v1/conductors/%2F",
		"/v1/nodes/odd/history/%2F", "/v1/nodes/odd/history/bad%20event", "/v2/nodes", "/v1/nodes/odd/ports/x",
		"/v1/nodes/odd?fields=%ff", "/v1/nodes?limit=99999999999999999999999", "/v1/nodes?limit=1e3",
		"/v1/nodes?sort_key=%00", "/v1/nodes?marker=%ff", "/v1/ports?node=%2F", "/v1/nodes?provision_state=%ff",
		"/v1/nodes?detail=%ff", "/v1/nodes?fields=,,,", "/v1/nodes/validate?node=%2F",
	}
	for _, p := range paths {
		for _, m := range []string{"GET", "PUT", "PATCH", "DELETE", "POST"} {
			rec := e.do(m, p, "", latest)
			if rec.Code >= 500 {
				t.Errorf("%s %s: %d %s", m, p[:min(len(p), 80)], rec.Code, rec.Body.String())
			}
			if rec.Code >= 400 {
				faultOf(t, rec)
			}
		}
	}
}

// TestRandomRequestsNever5xx throws seeded random bodies and queries at
// every route.
func TestRandomRequestsNever5xx(t *testing.T) {
	e := newEnv(t)
	e.mustNode(nodeFixture("bad-input"))
	r := rand.New(rand.NewPCG(1, 2))
	atoms := []string{`null`, `true`, `"x"`, `""`, `0`, `-1`, `1.5`, `"power on"`, `"manage"`, `"52:54:00:aa:bb:cc"`,
		`"fake-hardware"`, `"/name"`, `"replace"`, `"add"`, `"remove"`, `"/extra/a"`, `"/driver_info"`, `"~1"`}
	keys := []string{"target", "op", "path", "value", "driver", "name", "address", "node_uuid", "timeout",
		"configdrive", "clean_steps", "reason", "boot_device", "persistent", "extra", "driver_info", "uuid"}
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := r.IntN(4); {
		case depth > 3 || k == 0:
			return atoms[r.IntN(len(atoms))]
		case k == 1:
			var parts []string
			for range r.IntN(4) {
				parts = append(parts, gen(depth+1))
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			var parts []string
			for range r.IntN(5) {
				parts = append(parts, `"`+keys[r.IntN(len(keys))]+`":`+gen(depth+1))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	for i := range 3000 {
		ep := bodyEndpoints[r.IntN(len(bodyEndpoints))]
		body := gen(0)
		if r.IntN(3) == 0 {
			body = `[{"op":` + atoms[r.IntN(len(atoms))] + `,"path":` + atoms[r.IntN(len(atoms))] + `,"value":` + gen(1) + `}]`
		}
		rec := e.do(ep.method, ep.path, body, latest)
		if rec.Code >= 500 {
			t.Fatalf("#%d %s %s %s: %d %s", i, ep.method, ep.path, body, rec.Code, rec.Body.String())
		}
	}
}
