package redfish_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// exchange is one recorded request and its answer (testdata/sushy-tools).
// Credentials are never recorded: Auth says only how the request
// authenticated, and a login body's password is replaced.
type exchange struct {
	Method          string            `json:"method"`
	Path            string            `json:"path"`
	Auth            string            `json:"auth"` // none, basic, token
	RequestBody     json.RawMessage   `json:"request_body,omitempty"`
	Status          int               `json:"status"`
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	ResponseBody    json.RawMessage   `json:"response_body,omitempty"`
	ResponseText    string            `json:"response_text,omitempty"` // a body that is not JSON
}

// recordedHeaders are the response headers worth keeping.
var recordedHeaders = []string{"Content-Type", "Location", "X-Auth-Token", "WWW-Authenticate", "OData-Version", "Allow"}

// recorder is an http.RoundTripper that keeps every exchange.
type recorder struct {
	next     http.RoundTripper
	password string
	mu       sync.Mutex
	log      []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	ex := exchange{Method: req.Method, Path: req.URL.Path, Auth: "none", Status: resp.StatusCode}
	if _, _, ok := req.BasicAuth(); ok {
		ex.Auth = "basic"
	} else if req.Header.Get("X-Auth-Token") != "" {
		ex.Auth = "token"
	}
	if len(reqBody) > 0 {
		s := string(reqBody)
		if r.password != "" {
			s = strings.ReplaceAll(s, r.password, "******")
		}
		ex.RequestBody = json.RawMessage(s)
		if !json.Valid(ex.RequestBody) {
			ex.RequestBody, _ = json.Marshal(s)
		}
	}
	for _, h := range recordedHeaders {
		if v := resp.Header.Get(h); v != "" {
			if ex.ResponseHeaders == nil {
				ex.ResponseHeaders = map[string]string{}
			}
			ex.ResponseHeaders[h] = v
		}
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 {
		if json.Valid(trimmed) {
			var buf bytes.Buffer
			json.Compact(&buf, trimmed)
			ex.ResponseBody = buf.Bytes()
		} else {
			ex.ResponseText = string(body)
		}
	}
	r.mu.Lock()
	r.log = append(r.log, ex)
	r.mu.Unlock()
	return resp, nil
}

// keepOnly drops the exchanges keep refuses.
func (r *recorder) keepOnly(keep func(exchange) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exchange
	for _, ex := range r.log {
		if keep(ex) {
			out = append(out, ex)
		}
	}
	r.log = out
}

func (r *recorder) save(t *testing.T, file string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var buf bytes.Buffer // a JSON array, one exchange a line
	buf.WriteString("[\n")
	for i, ex := range r.log {
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		if i < len(r.log)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replayConfig shapes a replay server.
type replayConfig struct {
	User, Password string
	// ContinuousOnly: the server ignores BootSourceOverrideEnabled and always
	// reports Continuous (sushy-tools: "In libvirt we always set the boot
	// device frequency to continuous").
	ContinuousOnly bool
	// DelayedPower: a power change shows only after one more read of the
	// system, and a restart reads Off first (sushy-tools applies changes
	// 1-11 s later and powers a restarting system off at once).
	DelayedPower bool
	// LoginStatus, when set, is what every login answers (a BMC whose
	// session service is broken).
	LoginStatus int
	// Before, when set, sees each request ("METHOD path") before it is
	// served, with the server locked (tests expire sessions mid-operation).
	Before func(rp *replay, req string)
	// Gone lists resource paths answering 404 (a BMC without them).
	Gone []string
	// Edit changes a resource before the server starts.
	Edit func(path string, body map[string]any)
	// InsertIgnored: virtual media inserts are accepted and change nothing.
	InsertIgnored bool
}

// fact is a recorded answer that is not a resource (an error status).
type fact struct {
	status      int
	body        []byte
	contentType string // "" = application/json
}

// replay serves recorded Redfish resources statefully enough for the
// conformance suite: Reset changes PowerState, PATCH Boot changes the
// override, InsertMedia/EjectMedia change virtual media, and a service root
// that links a SessionService makes login work (X-Auth-Token sessions).
type replay struct {
	cfg       replayConfig
	mu        sync.Mutex
	res       map[string]map[string]any // path → resource
	facts     map[string]fact           // "METHOD path" → recorded non-2xx answer
	denied    []byte                    // body of a 401
	sessions  map[string]bool           // live tokens
	pending   map[string]string         // system path → PowerState after the next read
	nextToken int
	Logins    int // successful logins
	Requests  []string
}

func newReplay(cfg replayConfig) *replay {
	return &replay{cfg: cfg, res: map[string]map[string]any{}, facts: map[string]fact{},
		sessions: map[string]bool{}, pending: map[string]string{},
		denied: []byte(`{"error":{"code":"Base.1.0.GeneralError","message":"Authorization required"}}`)}
}

func canonical(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimSuffix(p, "/")
}

// loadExchanges takes the first successful GET of each path as its initial
// state and remembers the other statuses the server answered.
func (rp *replay) loadExchanges(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("sushy-tools recording missing from testdata: %v", err)
	}
	var log []exchange
	if err := json.Unmarshal(b, &log); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, ex := range log {
		p := canonical(ex.Path)
		switch {
		case ex.Status == http.StatusUnauthorized:
			if len(ex.ResponseBody) > 0 {
				rp.denied = ex.ResponseBody
			}
		case ex.Method == http.MethodGet && ex.Status == http.StatusOK:
			if _, seen := rp.res[p]; !seen {
				var m map[string]any
				if err := json.Unmarshal(ex.ResponseBody, &m); err != nil {
					t.Fatalf("%s: GET %s: %v", file, p, err)
				}
				rp.res[p] = m
			}
		case ex.Status >= 400:
			f := fact{status: ex.Status, body: ex.ResponseBody, contentType: ex.ResponseHeaders["Content-Type"]}
			if ex.ResponseText != "" {
				f.body = []byte(ex.ResponseText)
			}
			rp.facts[ex.Method+" "+p] = f
		}
	}
}

// loadMockup reads a DMTF mockup (index.json at each resource path).
func (rp *replay) loadMockup(t *testing.T, dir string) {
	t.Helper()
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "index.json" {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rp.res[canonical("/redfish/v1/"+filepath.ToSlash(rel))] = m
		return nil
	})
	if err != nil || len(rp.res) == 0 {
		t.Fatalf("DMTF mockup missing from testdata: %v", err)
	}
}

// start applies Gone and Edit and serves.
func (rp *replay) start(t *testing.T) *httptest.Server {
	t.Helper()
	for _, g := range rp.cfg.Gone {
		delete(rp.res, canonical(g))
		rp.facts["GET "+canonical(g)] = fact{status: http.StatusNotFound, body: []byte(`{"error":{"code":"Base.1.0.ResourceNotFound","message":"not found"}}`)}
	}
	if rp.cfg.Edit != nil {
		for p, m := range rp.res {
			rp.cfg.Edit(p, m)
		}
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv
}

// sessionsPath is the service root's Links.Sessions, "" when it has none.
func (rp *replay) sessionsPath() string {
	links, _ := rp.res["/redfish/v1"]["Links"].(map[string]any)
	s, _ := links["Sessions"].(map[string]any)
	id, _ := s["@odata.id"].(string)
	if id == "" {
		return ""
	}
	return canonical(id)
}

// ExpireSessions forgets every session, as a BMC whose sessions timed out.
func (rp *replay) ExpireSessions() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.sessions = map[string]bool{}
}

func (rp *replay) write(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(status)
	switch b := body.(type) {
	case nil:
	case []byte:
		w.Write(b)
	default:
		json.NewEncoder(w).Encode(b)
	}
}

func (rp *replay) authorized(r *http.Request) bool {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		return rp.sessions[tok]
	}
	u, p, ok := r.BasicAuth()
	return ok && u == rp.cfg.User && p == rp.cfg.Password
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	p := canonical(r.URL.Path)
	rp.Requests = append(rp.Requests, r.Method+" "+p)
	if rp.cfg.Before != nil {
		rp.cfg.Before(rp, r.Method+" "+p)
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if p == "/redfish/v1" || p == "/redfish" || p == "" {
		rp.write(w, http.StatusOK, rp.res["/redfish/v1"]) // the service root needs no credentials
		return
	}
	if sp := rp.sessionsPath(); sp != "" && p == sp && r.Method == http.MethodPost {
		rp.login(w, body)
		return
	}
	if !rp.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="replay"`)
		rp.write(w, http.StatusUnauthorized, rp.denied)
		return
	}
	if f, ok := rp.facts[r.Method+" "+p]; ok {
		if f.contentType != "" {
			w.Header().Set("Content-Type", f.contentType)
			w.WriteHeader(f.status)
			w.Write(f.body)
			return
		}
		rp.write(w, f.status, f.body)
		return
	}
	switch r.Method {
	case http.MethodGet:
		m, ok := rp.res[p]
		if !ok {
			rp.write(w, http.StatusNotFound, []byte(`{"error":{"code":"Base.1.0.ResourceNotFound","message":"not recorded"}}`))
			return
		}
		rp.write(w, http.StatusOK, m)
		if next, ok := rp.pending[p]; ok { // shows from the next read on
			m["PowerState"] = next
			delete(rp.pending, p)
		}
	case http.MethodPatch:
		rp.patch(w, p, body)
	case http.MethodPost:
		rp.action(w, p, body)
	default:
		rp.write(w, http.StatusMethodNotAllowed, nil)
	}
}

func (rp *replay) login(w http.ResponseWriter, body []byte) {
	if rp.cfg.LoginStatus != 0 { // echoing the request, as careless BMCs do
		msg, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "cannot log in with " + string(body)}})
		rp.write(w, rp.cfg.LoginStatus, msg)
		return
	}
	var cred struct{ UserName, Password string }
	if json.Unmarshal(body, &cred) != nil || cred.UserName != rp.cfg.User || cred.Password != rp.cfg.Password {
		rp.write(w, http.StatusUnauthorized, rp.denied)
		return
	}
	rp.nextToken++
	tok := fmt.Sprintf("replay-token-%d", rp.nextToken)
	rp.sessions[tok] = true
	rp.Logins++
	w.Header().Set("X-Auth-Token", tok)
	w.Header().Set("Location", fmt.Sprintf("%s/%d", rp.sessionsPath(), rp.nextToken))
	rp.write(w, http.StatusCreated, map[string]any{"Id": fmt.Sprint(rp.nextToken), "UserName": cred.UserName})
}

// patch merges a system's Boot (what SetBootDevice and SetBootMode send),
// or a virtual media device's Image and Inserted (what BMCs without the
// InsertMedia action take).
func (rp *replay) patch(w http.ResponseWriter, p string, body []byte) {
	m, ok := rp.res[p]
	var req struct {
		Boot     map[string]any
		Image    *string
		Inserted *bool
	}
	if !ok || json.Unmarshal(body, &req) != nil {
		rp.write(w, http.StatusBadRequest, nil)
		return
	}
	if _, isMedia := m["MediaTypes"]; isMedia && req.Boot == nil {
		rp.media(p, m, req.Inserted != nil && *req.Inserted, req.Image)
		rp.write(w, http.StatusNoContent, nil)
		return
	}
	if req.Boot == nil {
		rp.write(w, http.StatusBadRequest, nil)
		return
	}
	boot, _ := m["Boot"].(map[string]any)
	if boot == nil {
		boot = map[string]any{}
		m["Boot"] = boot
	}
	for k, v := range req.Boot {
		if k == "BootSourceOverrideEnabled" && rp.cfg.ContinuousOnly {
			continue
		}
		boot[k] = v
	}
	rp.write(w, http.StatusNoContent, nil)
}

// media inserts image into, or ejects, the device m at p. A server with
// InsertIgnored accepts inserts and changes nothing (a BMC that cannot fetch
// the image and does not say so).
func (rp *replay) media(p string, m map[string]any, insert bool, image *string) {
	if !insert {
		m["Image"], m["Inserted"], m["ConnectedVia"] = "", false, "NotConnected"
		return
	}
	if rp.cfg.InsertIgnored {
		return
	}
	if image != nil {
		m["Image"] = *image
	}
	m["Inserted"], m["ConnectedVia"] = true, "URI"
}

// action performs ComputerSystem.Reset and VirtualMedia Insert/EjectMedia.
func (rp *replay) action(w http.ResponseWriter, p string, body []byte) {
	var req map[string]any
	json.Unmarshal(body, &req)
	owner, act, _ := strings.Cut(p, "/Actions/")
	m, ok := rp.res[owner]
	if !ok {
		rp.write(w, http.StatusNotFound, nil)
		return
	}
	switch act {
	case "ComputerSystem.Reset":
		rt, _ := req["ResetType"].(string)
		next := map[string]string{"On": "On", "ForceOn": "On", "ForceOff": "Off", "GracefulShutdown": "Off",
			"ForceRestart": "On", "GracefulRestart": "On", "PowerCycle": "On"}[rt]
		if next == "" {
			rp.write(w, http.StatusBadRequest, nil)
			return
		}
		if strings.Contains(rt, "Restart") && rp.cfg.DelayedPower {
			m["PowerState"] = "Off"
		}
		if rp.cfg.DelayedPower {
			rp.pending[owner] = next
		} else {
			m["PowerState"] = next
		}
	case "VirtualMedia.InsertMedia":
		img, _ := req["Image"].(string)
		rp.media(owner, m, true, &img)
		if wp, ok := req["WriteProtected"].(bool); ok && !rp.cfg.InsertIgnored {
			m["WriteProtected"] = wp
		}
	case "VirtualMedia.EjectMedia":
		rp.media(owner, m, false, nil)
	default:
		rp.write(w, http.StatusBadRequest, nil)
		return
	}
	rp.write(w, http.StatusNoContent, nil)
}
