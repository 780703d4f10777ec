package dashboard

import (
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// Path is where the dashboard is served; every asset is under Path + "/".
const Path = "/dashboard"

// SessionPath is where the page logs in (POST), asks who is logged in
// (GET) and logs out (DELETE): served by internal/auth's sessions, in
// front of this handler.
const SessionPath = Path + "/session"

//go:embed assets
var assets embed.FS

// Handler serves the dashboard's pages and assets. It holds no node data:
// the page reads everything through the API with the browser's credentials.
type Handler struct {
	files   map[string][]byte // asset name (no directory) → content
	started time.Time         // Last-Modified of every asset
}

// New builds the handler: the embedded assets, the lifecycle diagram drawn
// from internal/fsm and the machine's description (machine.json).
func New() (*Handler, error) {
	h := &Handler{files: map[string][]byte{}, started: time.Now().UTC().Truncate(time.Second)}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		h.files[path.Base(p)] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	h.files["lifecycle.svg"] = renderDiagram()
	m, err := json.Marshal(describeMachine())
	if err != nil {
		return nil, err
	}
	h.files["machine.json"] = m
	return h, nil
}

// WantsHTML reports whether r is a browser asking for a page: a GET or
// HEAD whose Accept header names text/html. API clients ask for JSON (or
// send no Accept) and keep getting the API's answer.
func WantsHTML(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}

// RedirectRoot answers a browser's GET / with a redirect to the dashboard.
func RedirectRoot(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Path+"/", http.StatusFound)
}

// ServeHTTP serves Path + "/" (the page) and Path + "/<asset>".
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Path)
	switch {
	case !ok:
		http.NotFound(w, r)
		return
	case name == "":
		http.Redirect(w, r, Path+"/", http.StatusMovedPermanently)
		return
	case name == "/":
		name = "index.html"
	default:
		name = strings.TrimPrefix(name, "/")
	}
	b, ok := h.files[name]
	if !ok || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js", ".mjs":
		ct = "text/javascript; charset=utf-8" // not every mime table knows it
	case ".md", ".LICENSE":
		ct = "text/plain; charset=utf-8"
	}
	hd.Set("Content-Type", ct)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	// Styles may be inline: the console's terminal (xterm.js) writes its
	// cell dimensions and colours into <style> elements it creates. Scripts
	// stay 'self' only.
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "+
		"script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	http.ServeContent(w, r, name, h.started, bytes.NewReader(b))
}

// machine is machine.json: what the page needs of the state machine.
type machine struct {
	States  []machineState      `json:"states"`
	Actions map[string][]string `json:"actions"` // state → provision targets allowed there
	Power   []string            `json:"power"`   // power targets
}

type machineState struct {
	Name   string `json:"name"`
	Class  string `json:"class"` // see StateClass
	Target string `json:"target,omitempty"`
}

// ProvisionActions returns the provision targets the API accepts for a node
// in state s: every verb whose event the machine allows there, one word per
// event (the newest word: deploy rather than active, undeploy rather than
// deleted).
func ProvisionActions(s string) []string {
	newest := map[string]fsm.Verb{}
	var events []string
	for _, v := range fsm.Verbs() {
		old, seen := newest[v.Event]
		if !seen {
			events = append(events, v.Event)
		}
		if !seen || v.MinMinor > old.MinMinor {
			newest[v.Event] = v
		}
	}
	var out []string
	for _, ev := range events {
		if fsm.Allowed(s, ev) {
			out = append(out, newest[ev].Target)
		}
	}
	return out
}

func describeMachine() machine {
	m := machine{Actions: map[string][]string{}, Power: []string{fsm.PowerOn, fsm.PowerOff, fsm.Rebooting}}
	for _, s := range fsm.States() {
		m.States = append(m.States, machineState{Name: s.Name, Class: StateClass(s), Target: s.Target})
		m.Actions[s.Name] = ProvisionActions(s.Name)
	}
	return m
}
