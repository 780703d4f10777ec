package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

var updatePolicyDoc = flag.Bool("update", false, "rewrite docs/policy.md from the route table")

// as returns e's handler serving every request as who (what the
// authentication middleware hands the API).
func (e *env) as(who auth.Principal) *env {
	c := *e
	inner := e.h
	c.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), who)))
	})
	return &c
}

// server is e's API server.
func (e *env) server() *Server { return e.h.(*Server) }

// TestGoldenPolicyDoc keeps docs/policy.md in step with the route table.
// Run `go test ./internal/api -run TestGoldenPolicyDoc -update` to rewrite it.
func TestGoldenPolicyDoc(t *testing.T) {
	var got bytes.Buffer
	if err := newEnv(t).server().WritePolicyDoc(&got); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "policy.md")
	if *updatePolicyDoc {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read docs/policy.md (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("docs/policy.md is stale; run `go test ./internal/api -run TestGoldenPolicyDoc -update`")
	}
}

// TestEveryRouteHasARule: the route table names a known rule for every
// method of every route but the public ones (New panics otherwise, so a
// route added without one fails every test; this says which).
func TestEveryRouteHasARule(t *testing.T) {
	s := newEnv(t).server()
	public := regexp.MustCompile(`^(/\{\$\}|/v1|/v1/\{\$\}|/v1/lookup|/v1/heartbeat/\{ident\}|/v1/continue_inspection)$`)
	for _, r := range s.Routes() {
		if r.Target == "public" {
			if !public.MatchString(r.Pattern) {
				t.Errorf("%s %s is public: only the root documents and the agent's routes are", r.Method, r.Pattern)
			}
			continue
		}
		if len(r.Rules) == 0 {
			t.Errorf("%s %s has no rule", r.Method, r.Pattern)
		}
		for _, rule := range r.Rules {
			if !s.enforcer.Known(rule) {
				t.Errorf("%s %s: unknown rule %s", r.Method, r.Pattern, rule)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a route without a rule was accepted")
		}
	}()
	s.handle(endpoint{"GET": {fn: func(*call) error { return nil }}}, "/v1/unguarded")
}

// TestNodePatchRule: the rule of each PATCH field, from the parsed
// operation (so every spelling of a path the API accepts has one rule).
func TestNodePatchRule(t *testing.T) {
	for _, c := range []struct {
		op    string
		path  string
		value any
		want  string
	}{
		{"add", "/instance_info/image_source", "x", "baremetal:node:update_instance_info"},
		{"add", "/extra/a", 1, "baremetal:node:update_extra"},
		{"replace", "/automated_clean", false, "baremetal:node:disable_cleaning"},
		{"replace", "/automated_clean", "off", "baremetal:node:disable_cleaning"},
		{"replace", "/automated_clean", true, "baremetal:node:update"},
		{"remove", "/automated_clean", nil, "baremetal:node:update"},
		{"add", "/driver_info/ipmi_address", "x", "baremetal:node:update:driver_info"},
		{"replace", "/driver", "ipmi", "baremetal:node:update:driver_interfaces"},
		{"replace", "/deploy_interface", "direct", "baremetal:node:update:driver_interfaces"},
		{"replace", "/owner", "p", "baremetal:node:update:owner"},
		{"replace", "/owner/", "p", "baremetal:node:update:owner"},
		{"replace", "/lessee", "p", "baremetal:node:update:lessee"},
		{"replace", "/maintenance_reason", "r", "baremetal:node:set_maintenance"},
		{"replace", "/description", "d", "baremetal:node:update"},
		{"replace", "/resource_class", "gpu", "baremetal:node:update"},
		{"replace", "/name", "n", "baremetal:node:update:name"},
		{"replace", "/shard", "s", "baremetal:node:update:shard"},
		{"replace", "/parent_node", "p", "baremetal:node:update:parent_node"},
		{"replace", "/nonsense_interface", "x", "baremetal:node:update"},
	} {
		if got := nodePatchRule(patchOp{Op: c.op, Path: c.path, Value: c.value}); got != c.want {
			t.Errorf("%s %s = %v: %s, want %s", c.op, c.path, c.value, got, c.want)
		}
	}
	if got := nodePatchRules(nil); len(got) != 1 || got[0] != "baremetal:node:update" {
		t.Errorf("no operation: %v", got)
	}
}

// authzFixture: project A owns node "zz", project B owns node "zz.json"
// (with a port, a volume connector and target, a runbook) and node "lb"
// leased to A.
type authzFixture struct {
	e                          *env
	a, b, leased               *model.Node
	port                       *model.Port
	connector, target, runbook string
	portgroup                  string
}

func newAuthzFixture(t *testing.T) *authzFixture {
	e := newEnv(t)
	ctx := context.Background()
	f := &authzFixture{e: e}
	f.a = e.mustNode(&model.Node{Name: "zz", Owner: "projA", DriverInfo: model.JSON{"ipmi_password": "a-pw"}})
	f.b = e.mustNode(&model.Node{Name: "zz.json", Owner: "projB", DriverInfo: model.JSON{"ipmi_password": "b-pw"},
		LastError: "b-secret-error"})
	f.leased = e.mustNode(&model.Node{Name: "lb", Owner: "projB", Lessee: "projA", LastError: "leased-error"})
	f.port = &model.Port{Address: "52:54:00:bb:bb:01", NodeUUID: f.b.UUID, Extra: model.JSON{"b": "secret"}}
	if err := e.st.Ports().CreatePort(ctx, f.port); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*model.Port{{Address: "52:54:00:aa:aa:01", NodeUUID: f.a.UUID}, {Address: "52:54:00:11:11:01", NodeUUID: f.leased.UUID}} {
		if err := e.st.Ports().CreatePort(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	c := &model.VolumeConnector{NodeUUID: f.b.UUID, Type: "iqn", ConnectorID: "iqn.b"}
	if err := e.st.Volumes().CreateVolumeConnector(ctx, c); err != nil {
		t.Fatal(err)
	}
	tg := &model.VolumeTarget{NodeUUID: f.b.UUID, VolumeType: "iscsi", VolumeID: "vol-b", BootIndex: 0}
	if err := e.st.Volumes().CreateVolumeTarget(ctx, tg); err != nil {
		t.Fatal(err)
	}
	rb := &model.Runbook{Name: "CUSTOM_RB_B", Owner: "projB", Steps: []model.RunbookStep{{Interface: "deploy", Step: "erase_devices", Args: model.JSON{}, Order: 1}}}
	if err := e.st.Runbooks().CreateRunbook(ctx, rb); err != nil {
		t.Fatal(err)
	}
	pg := &model.Portgroup{NodeUUID: f.b.UUID, Name: "pg-b", Address: "52:54:00:bb:bb:99"}
	if err := e.st.Ports().CreatePortgroup(ctx, pg); err != nil {
		t.Fatal(err)
	}
	f.connector, f.target, f.runbook, f.portgroup = c.UUID, tg.UUID, rb.UUID, pg.UUID
	return f
}

// secretsOfB are strings only a reader of B's node, port or records sees.
func (f *authzFixture) secretsOfB() []string {
	return []string{f.b.UUID, f.port.UUID, f.port.Address, f.connector, f.target, f.runbook, f.portgroup,
		"b-secret-error"}
}

// snapshotB is everything of project B's the store holds, as JSON.
func (f *authzFixture) snapshotB(t *testing.T) string {
	ctx := context.Background()
	st := f.e.st
	var parts []any
	for _, get := range []func() (any, error){
		func() (any, error) { return st.Nodes().GetNode(ctx, f.b.UUID) },
		func() (any, error) { return st.Nodes().GetNode(ctx, f.leased.UUID) },
		func() (any, error) { return st.Ports().GetPort(ctx, f.port.UUID) },
		func() (any, error) { return st.Ports().ListPorts(ctx, store.PortQuery{NodeUUID: f.b.UUID}) },
		func() (any, error) { return st.Volumes().GetVolumeConnector(ctx, f.connector) },
		func() (any, error) { return st.Volumes().GetVolumeTarget(ctx, f.target) },
		func() (any, error) { return st.Runbooks().GetRunbook(ctx, f.runbook) },
	} {
		v, err := get()
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		parts = append(parts, v)
	}
	raw, _ := json.Marshal(parts)
	return string(raw)
}

// concrete turns a route pattern into paths aimed at B's records, in each
// spelling the API accepts for it.
func (f *authzFixture) concrete(r Route) []string {
	p := strings.TrimSuffix(r.Pattern, "{$}")
	repl := map[string]string{"{ident}": f.b.UUID, "{id}": f.connector, "{runbook}": f.runbook,
		"{alloc}": "x", "{setting}": "x", "{name}": "fake-hardware", "{hostname}": "x", "{template}": "x",
		"{event}": "x", "{indicator}": "x", "{rule}": "x", "{pg}": "x", "{trait}": "CUSTOM_X", "{method}": "x",
		"{vif}": "x", "{device}": "cdrom"}
	switch {
	case strings.HasPrefix(p, "/v1/ports/{ident}"):
		repl["{ident}"] = f.port.UUID
	case strings.HasPrefix(p, "/v1/volume/targets/{id}"):
		repl["{id}"] = f.target
	}
	var out []string
	for k, v := range repl {
		p = strings.ReplaceAll(p, k, v)
	}
	unversioned := strings.TrimPrefix(p, "/v1")
	out = append(out, p, p+"/", unversioned)
	if strings.HasPrefix(r.Pattern, "/v1/nodes/{ident}") {
		out = append(out, strings.Replace(p, f.b.UUID, "zz.json", 1)) // B's name at 1.91+
	}
	if r.Target == "list" || strings.HasSuffix(p, "/ports") || strings.HasSuffix(p, "/detail") ||
		strings.HasSuffix(p, "/connectors") || strings.HasSuffix(p, "/targets") {
		// Two node parameters: the one checked must be the one used.
		out = append(out, p+"?node="+f.a.UUID+"&node_uuid="+f.b.UUID, p+"?node_uuid="+f.b.UUID+"&node="+f.a.UUID,
			p+"?node="+f.b.UUID)
	}
	if r.Method == "GET" && strings.HasPrefix(r.Pattern, "/v1/nodes/{ident}/") {
		// A's own node in the path, B's in the query.
		own := strings.Replace(p, f.b.UUID, f.a.UUID, 1)
		out = append(out, own+"?node_uuid="+f.b.UUID, own+"?node="+f.b.UUID)
	}
	return out
}

// body is a request body that reaches each handler's authorization.
func (f *authzFixture) body(r Route) string {
	switch {
	case r.Method == "GET" || r.Method == "DELETE":
		return ""
	case r.Method == "PATCH":
		return `[{"op": "add", "path": "/extra/pwn", "value": "x"}]`
	case r.Pattern == "/v1/ports":
		return `{"address": "52:54:00:ee:ee:01", "node_uuid": "` + f.b.UUID + `"}`
	case r.Pattern == "/v1/volume/connectors":
		return `{"node_uuid": "` + f.b.UUID + `", "type": "iqn", "connector_id": "iqn.pwn"}`
	case r.Pattern == "/v1/volume/targets":
		return `{"node_uuid": "` + f.b.UUID + `", "volume_type": "iscsi", "volume_id": "pwn", "boot_index": 9}`
	case strings.HasSuffix(r.Pattern, "/states/provision"):
		return `{"target": "manage"}`
	case strings.HasSuffix(r.Pattern, "/states/power"):
		return `{"target": "power on"}`
	case strings.HasSuffix(r.Pattern, "/vifs"):
		return `{"id": "vif-pwn"}`
	case strings.HasSuffix(r.Pattern, "/vmedia"):
		return `{"device_type": "CDROM", "image_url": "http://127.0.0.1/x.iso"}`
	case strings.HasSuffix(r.Pattern, "/traits"):
		return `{"traits": ["CUSTOM_PWN"]}`
	case strings.HasSuffix(r.Pattern, "/maintenance"):
		return `{"reason": "pwn"}`
	case strings.HasSuffix(r.Pattern, "/boot_device"):
		return `{"boot_device": "pxe"}`
	case strings.HasSuffix(r.Pattern, "/console"):
		return `{"enabled": true}`
	}
	return `{}`
}

// TestRouteMatrix is generated from the route table: every route × each
// role of project A × every spelling of its path (versioned, unversioned,
// trailing slash, B's node by a name ending in .json, two node
// parameters) aimed at project B's records. None may change anything of
// B's, and no answer may carry B's identifiers or secrets. A system
// reader's writes change nothing either.
func TestRouteMatrix(t *testing.T) {
	f := newAuthzFixture(t)
	routes := f.e.server().Routes()
	before := f.snapshotB(t)
	tenants := map[string]auth.Principal{}
	// A tenant's roles. The service role is a trusted service's, as in
	// Ironic (its runbook rules let any service change any runbook).
	for _, role := range []string{"admin", "manager", "member", "reader"} {
		tenants["A "+role] = auth.Principal{User: "a-" + role, Project: "projA", Roles: []string{role}}
	}
	sent := 0
	for name, who := range tenants {
		e := f.e.as(who)
		for _, r := range routes {
			if r.Target == "public" {
				continue
			}
			for _, path := range f.concrete(r) {
				rec := e.doBounded(r.Method, path, f.body(r))
				sent++
				if rec.Code >= 500 {
					t.Errorf("%s: %s %s = %d %s", name, r.Method, path, rec.Code, rec.Body)
				}
				if rec.Code < 300 {
					for _, s := range f.secretsOfB() {
						if strings.Contains(rec.Body.String(), s) {
							t.Errorf("%s: %s %s = %d carries B's %q", name, r.Method, path, rec.Code, s)
						}
					}
				}
				if now := f.snapshotB(t); now != before {
					t.Fatalf("%s: %s %s = %d changed B's records:\n%s\n%s", name, r.Method, path, rec.Code, before, now)
				}
			}
		}
	}
	// A system reader writes nothing, whatever the spelling.
	reader := f.e.as(auth.Principal{User: "sys-reader", Roles: []string{"reader"}})
	for _, r := range routes {
		if r.Target == "public" || r.Method == "GET" {
			continue
		}
		for _, path := range f.concrete(r) {
			rec := reader.doBounded(r.Method, path, f.body(r))
			sent++
			if rec.Code != http.StatusForbidden {
				t.Errorf("system reader: %s %s = %d, want 403", r.Method, path, rec.Code)
			}
		}
	}
	if now := f.snapshotB(t); now != before {
		t.Fatal("the system reader changed B's records")
	}
	t.Logf("%d requests over %d routes", sent, len(routes))
}

// TestRouteSpellings: the same request, spelled every way the API
// accepts, gets the same answer (one parse decides).
func TestRouteSpellings(t *testing.T) {
	f := newAuthzFixture(t)
	for _, who := range []auth.Principal{
		{User: "a", Project: "projA", Roles: []string{"member"}},
		{User: "sys", Roles: []string{"member"}},
	} {
		e := f.e.as(who)
		for _, r := range f.e.server().Routes() {
			if r.Method != "GET" || r.Target == "public" {
				continue
			}
			paths := f.concrete(r)[:3] // /v1/x, /v1/x/, /x
			var codes []int
			for _, p := range paths {
				codes = append(codes, e.doBounded("GET", p, "").Code)
			}
			if codes[0] != codes[1] || codes[0] != codes[2] {
				t.Errorf("%s: GET %v = %v", who.User, paths, codes)
			}
		}
	}
}

// doBounded sends one request at the latest version, ending it after a
// second (the event stream never ends by itself; what it sent by then is
// its answer).
func (e *env) doBounded(method, path, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(ctx, method, "http://"+testHost+path, rd)
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}
