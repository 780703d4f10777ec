package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
)

func TestWantsHTML(t *testing.T) {
	cases := []struct {
		name, method, accept string
		want                 bool
	}{
		{"browser", "GET", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"head from a browser", "HEAD", "text/html", true},
		{"API client", "GET", "application/json", false},
		{"no accept header", "GET", "", false},
		{"anything", "GET", "*/*", false},
		{"post", "POST", "text/html", false},
		{"case and parameters", "GET", "Text/HTML; q=0.5", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "/", nil)
			if c.accept != "" {
				r.Header.Set("Accept", c.accept)
			}
			if got := WantsHTML(r); got != c.want {
				t.Errorf("WantsHTML = %t, want %t", got, c.want)
			}
		})
	}
}

func TestHandlerServesAssets(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, wantType string
		wantStatus     int
		wantBody       string
	}{
		{"/dashboard/", "text/html; charset=utf-8", 200, `<script type="module" src="app.js">`},
		{"/dashboard/app.js", "text/javascript; charset=utf-8", 200, "import"},
		{"/dashboard/style.css", "text/css; charset=utf-8", 200, "#lifecycle"},
		{"/dashboard/lifecycle.svg", "image/svg+xml", 200, `id="lifecycle"`},
		{"/dashboard/machine.json", "application/json", 200, `"actions"`},
		{"/dashboard/xterm.mjs", "text/javascript; charset=utf-8", 200, "export{"},
		{"/dashboard/console.js", "text/javascript; charset=utf-8", 200, "from './xterm.mjs'"},
		{"/dashboard/xterm.css", "text/css; charset=utf-8", 200, ".xterm"},
		{"/dashboard/xterm.LICENSE", "text/plain; charset=utf-8", 200, "Permission is hereby granted"},
		{"/dashboard", "", http.StatusMovedPermanently, ""},
		{"/dashboard/nope.js", "", 404, ""},
		{"/dashboard/assets/app.js", "", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
			if rec.Code != c.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, c.wantStatus)
			}
			if c.wantStatus != 200 {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != c.wantType {
				t.Errorf("Content-Type %q, want %q", got, c.wantType)
			}
			if !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("no content security policy")
			}
			if !strings.Contains(rec.Body.String(), c.wantBody) {
				t.Errorf("body lacks %q", c.wantBody)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/dashboard/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestDiagramHasEveryState parses the SVG and finds one box per state of
// the machine, with its class, and one arrow per pair of states joined.
func TestDiagramHasEveryState(t *testing.T) {
	var doc struct {
		Groups []struct {
			Class string `xml:"class,attr"`
			G     []struct {
				Class string `xml:"class,attr"`
				State string `xml:"data-state,attr"`
			} `xml:"g"`
			Paths []struct {
				From string `xml:"data-from,attr"`
				To   string `xml:"data-to,attr"`
			} `xml:"path"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(renderDiagram(), &doc); err != nil {
		t.Fatalf("the diagram is not XML: %v", err)
	}
	classes := map[string]string{}
	edges := map[[2]string]bool{}
	for _, g := range doc.Groups {
		for _, s := range g.G {
			classes[s.State] = s.Class
		}
		for _, p := range g.Paths {
			edges[[2]string{p.From, p.To}] = true
		}
	}
	for _, s := range fsm.States() {
		if want := "state " + StateClass(s); classes[s.Name] != want {
			t.Errorf("state %q: class %q, want %q", s.Name, classes[s.Name], want)
		}
	}
	if len(classes) != len(fsm.States()) {
		t.Errorf("%d boxes for %d states", len(classes), len(fsm.States()))
	}
	for _, tr := range fsm.Transitions() {
		if tr.From != tr.To && !edges[[2]string{tr.From, tr.To}] {
			t.Errorf("no arrow %s → %s", tr.From, tr.To)
		}
	}
	if StateClass(fsm.StateInfo{Name: fsm.Error, Stable: true}) != "failure" {
		t.Error("error is stable and a failure: it must be drawn as a failure")
	}
}

func TestLayoutDoesNotOverlap(t *testing.T) {
	seen := map[[2]int]string{}
	for _, p := range layout() {
		k := [2]int{p.x, p.y}
		if other, ok := seen[k]; ok {
			t.Errorf("%q and %q share a box", p.info.Name, other)
		}
		seen[k] = p.info.Name
	}
}

func TestProvisionActions(t *testing.T) {
	cases := map[string][]string{
		fsm.Enroll:     {"manage"},
		fsm.Manageable: {"provide", "inspect", "clean", "adopt"},
		fsm.Available:  {"deploy", "manage"},
		fsm.DeployWait: {"undeploy", "abort"},
		fsm.DeployHold: {"abort", "unhold"},
	}
	for state, want := range cases {
		got := ProvisionActions(state)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: actions %v lack %q", state, got, w)
			}
		}
		for _, a := range got {
			v, ok := fsm.LookupVerb(a)
			if !ok || !fsm.Allowed(state, v.Event) {
				t.Errorf("%s: action %q is not allowed by the machine", state, a)
			}
			if a == "active" || a == "deleted" {
				t.Errorf("%s: offers the old word %q", state, a)
			}
		}
	}
	var m machine
	if err := json.Unmarshal(mustFile(t, "machine.json"), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.States) != len(fsm.States()) || !slices.Equal(m.Actions[fsm.Available], ProvisionActions(fsm.Available)) {
		t.Errorf("machine.json: %d states, available: %v", len(m.States), m.Actions[fsm.Available])
	}
}

func mustFile(t *testing.T, name string) []byte {
	t.Helper()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return h.files[name]
}

// TestVendoredXterm: the vendored xterm.js files are the ones their
// provenance names, byte for byte.
func TestVendoredXterm(t *testing.T) {
	prov, err := assets.ReadFile("assets/xterm.PROVENANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| [^|]+ \\| `([0-9a-f]{64})` \\|$").FindAllStringSubmatch(string(prov), -1)
	if len(rows) != 3 {
		t.Fatalf("the provenance lists %d files, want 3", len(rows))
	}
	for _, r := range rows {
		b, err := assets.ReadFile("assets/" + r[1])
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != r[2] {
			t.Errorf("%s: sha256 %x, the provenance says %s", r[1], sum, r[2])
		}
	}
}
