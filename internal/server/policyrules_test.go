package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// TestNodeRulesMatrix: each rule × {owner, lessee, stranger} × {reader,
// member, admin} of a project, against Ironic 21.4's defaults written out
// as the set of principals each allows.
func TestNodeRulesMatrix(t *testing.T) {
	who := []string{"owner-reader", "owner-member", "owner-admin", "lessee-reader", "lessee-member", "lessee-admin",
		"stranger-admin"}
	var (
		projectReader            = who[:6]
		projectMember            = []string{"owner-member", "owner-admin", "lessee-member", "lessee-admin"}
		ownerReader              = who[:3]
		ownerMember              = []string{"owner-member", "owner-admin"}
		ownerAdmin               = []string{"owner-admin"}
		ownerMemberOrLesseeAdmin = []string{"owner-member", "owner-admin", "lessee-admin"}
		none                     []string
	)
	want := map[string][]string{
		"baremetal:node:get":                      projectReader,
		"baremetal:node:get:driver_info":          ownerReader,
		"baremetal:node:get:last_error":           ownerReader,
		"baremetal:node:get:reservation":          ownerReader,
		"baremetal:node:get:driver_internal_info": ownerReader,
		"baremetal:node:history:get":              ownerReader,
		"baremetal:node:update":                   projectMember,
		"baremetal:node:update_extra":             projectMember,
		"baremetal:node:update_instance_info":     ownerMemberOrLesseeAdmin,
		"baremetal:node:update_owner_provisioned": none,
		"baremetal:node:update:owner":             none,
		"baremetal:node:update:driver_info":       ownerMember,
		"baremetal:node:update:lessee":            ownerMember,
		"baremetal:node:update:name":              ownerMember,
		"baremetal:node:update:driver_interfaces": ownerAdmin,
		"baremetal:node:update:chassis_uuid":      none,
		"baremetal:node:disable_cleaning":         none,
		"baremetal:node:delete":                   none,
		"baremetal:node:set_provision_state":      ownerMemberOrLesseeAdmin,
		"baremetal:node:set_power_state":          projectMember,
		"baremetal:node:set_maintenance":          ownerMemberOrLesseeAdmin,
		"baremetal:node:set_boot_device":          ownerAdmin,
		"baremetal:node:vif:attach":               ownerMemberOrLesseeAdmin,
		"baremetal:node:traits:set":               ownerAdmin,
		"baremetal:port:create":                   ownerAdmin,
		"baremetal:volume:get":                    projectReader,
		"baremetal:volume:list":                   append(slices.Clone(projectReader), "stranger-admin"), // the node's visibility is checked first
		"baremetal:volume:create":                 {"owner-admin", "lessee-admin"},
		"baremetal:volume:update":                 ownerMemberOrLesseeAdmin,
		"baremetal:volume:delete":                 {"owner-admin", "lessee-admin"},
		"baremetal:volume:view_target_properties": {"owner-admin", "lessee-admin", "stranger-admin"},
		"baremetal:port:get":                      projectReader,
	}
	node := &model.Node{Owner: "own", Lessee: "lea"}
	for rule, allowed := range want {
		if _, known := allows(rule, subject{}); !known {
			t.Errorf("%s: not in the table", rule)
			continue
		}
		for _, w := range who {
			rel, role, _ := strings.Cut(w, "-")
			project := map[string]string{"owner": "own", "lessee": "lea", "stranger": "other"}[rel]
			got, _ := allows(rule, subjectOf(auth.Principal{Project: project, Roles: []string{role}}, node))
			if got != slices.Contains(allowed, w) {
				t.Errorf("%s for %s: %v", rule, w, got)
			}
		}
	}
	// Every rule a route or a PATCH path names is in the table.
	for route, rule := range routeRules {
		if _, known := allows(rule, subject{}); !known {
			t.Errorf("%s: rule %q not in the table", route, rule)
		}
	}
	for _, p := range patchPaths {
		if _, known := allows(p.rule, subject{}); p.rule != "" && !known {
			t.Errorf("PATCH %s: rule %q not in the table", p.prefix, p.rule)
		}
	}
}

// TestPatchRule: the rule of each PATCH path, in Ironic's order.
func TestPatchRule(t *testing.T) {
	for _, c := range []struct {
		path  string
		value any
		want  string
	}{
		{"/instance_info/image_source", "x", "baremetal:node:update_instance_info"},
		{"/extra/a", 1, "baremetal:node:update_extra"},
		{"/automated_clean", false, "baremetal:node:disable_cleaning"},
		{"/automated_clean", "off", "baremetal:node:disable_cleaning"},
		{"/automated_clean", true, "baremetal:node:update"},
		{"/driver_info/ipmi_address", "x", "baremetal:node:update:driver_info"},
		{"/driver_internal_info", "x", "baremetal:node:update:driver_interfaces"}, // Ironic's prefix test: "/driver"
		{"/driver", "ipmi", "baremetal:node:update:driver_interfaces"},
		{"/deploy_interface", "direct", "baremetal:node:update:driver_interfaces"},
		{"/owner", "p", "baremetal:node:update:owner"},
		{"/lessee", "p", "baremetal:node:update:lessee"},
		{"/maintenance_reason", "r", "baremetal:node:set_maintenance"},
		{"/description", "d", "baremetal:node:update"},
		{"/resource_class", "gpu", "baremetal:node:update"},
		{"/protected", true, "baremetal:node:update"},
		{"/name", "n", "baremetal:node:update:name"},
		{"/shard", "s", "baremetal:node:update:shard"},
		{"/nonsense_interface", "x", "baremetal:node:update"},
	} {
		if got := patchRule(c.path, c.value); got != c.want {
			t.Errorf("PATCH %s = %v: %s, want %s", c.path, c.value, got, c.want)
		}
	}
}

// TestProjectViews: what a lessee is shown of a node (Ironic's masks), and
// the fleet views and the event stream narrowed to the project.
func TestProjectViews(t *testing.T) {
	iss := authtest.NewIssuer(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}}
	})
	tok := func(project, role string) string {
		claims := map[string]any{"roles": []any{role}}
		if project != "" {
			claims["project_id"] = project
		}
		return "Bearer " + iss.Token(t, iss.Key, claims)
	}
	system, p1 := tok("", "admin"), tok("p1", "member")
	call := func(authz, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", authz)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp.StatusCode, m
	}
	uuids := map[string]string{}
	for _, n := range []struct{ name, owner, lessee string }{{"a", "p1", ""}, {"b", "p2", "p1"}, {"c", "p2", ""}} {
		st, m := call(system, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "`+n.name+`", "owner": "`+n.owner+`", "lessee": "`+n.lessee+`", "driver_info": {"ipmi_username": "root-`+n.name+`"}}`)
		if st != 201 {
			t.Fatalf("create %s: %d %v", n.name, st, m)
		}
		uuids[n.name] = m["uuid"].(string)
	}

	t.Run("a lessee sees Ironic's placeholders", func(t *testing.T) {
		_, own := call(p1, "GET", "/v1/nodes/a", "")
		if di, _ := own["driver_info"].(map[string]any); di["ipmi_username"] != "root-a" {
			t.Errorf("the owner's driver_info: %v", own["driver_info"])
		}
		_, leased := call(p1, "GET", "/v1/nodes/b", "")
		if di, _ := leased["driver_info"].(map[string]any); !strings.Contains(di["content"].(string), "baremetal:node:get:driver_info") {
			t.Errorf("the lessee's driver_info: %v", leased["driver_info"])
		}
		if dii, _ := leased["driver_internal_info"].(map[string]any); dii["content"] == nil {
			t.Errorf("the lessee's driver_internal_info: %v", leased["driver_internal_info"])
		}
		for _, f := range []string{"last_error", "reservation"} {
			if v, _ := leased[f].(string); !strings.Contains(v, "baremetal:node:get:"+f) {
				t.Errorf("the lessee's %s: %v", f, leased[f])
			}
		}
		_, list := call(p1, "GET", "/v1/fleet/nodes?fields=uuid,driver_info&sort_key=name", "")
		nodes := list["nodes"].([]any)
		if len(nodes) != 2 || list["matching"] != float64(2) {
			t.Fatalf("p1's fleet: %v", list)
		}
		if di := nodes[1].(map[string]any)["driver_info"].(map[string]any); di["content"] == nil {
			t.Errorf("the lessee's driver_info in the fleet list: %v", di)
		}
		_, sys := call(system, "GET", "/v1/nodes/b", "")
		if di, _ := sys["driver_info"].(map[string]any); di["ipmi_username"] != "root-b" || sys["last_error"] != nil {
			t.Errorf("the system's view of b: %v %v", sys["driver_info"], sys["last_error"])
		}
	})

	t.Run("the fleet summary counts the project's nodes only", func(t *testing.T) {
		_, sum := call(p1, "GET", "/v1/fleet/summary", "")
		if sum["total"] != float64(2) || len(sum["conductors"].([]any)) != 0 {
			t.Errorf("p1's summary: total %v, conductors %v", sum["total"], sum["conductors"])
		}
		_, sum = call(system, "GET", "/v1/fleet/summary", "")
		if sum["total"] != float64(3) || len(sum["conductors"].([]any)) == 0 {
			t.Errorf("the system's summary: total %v, conductors %v", sum["total"], sum["conductors"])
		}
	})

	t.Run("the stream carries the project's nodes only", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", s.base+"/v1/events/stream?project=p2", nil)
		req.Header.Set("Authorization", p1) // p1 asks for p2's: narrowed to p1 anyway
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		lines := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// c (p2's only) changes first, then b (leased to p1): the stream is
		// in order, so c's event would come before b's.
		for _, n := range []string{"c", "b"} {
			if st, m := call(system, "PUT", "/v1/nodes/"+n+"/maintenance", `{"reason": "m-`+n+`"}`); st != 202 {
				t.Fatalf("maintenance %s: %d %v", n, st, m)
			}
		}
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the stream ended")
				}
				if strings.Contains(l, uuids["c"]) {
					t.Fatalf("p1's stream carried c: %s", l)
				}
				if strings.Contains(l, uuids["b"]) {
					return
				}
			case <-deadline:
				t.Fatal("no event of b")
			}
		}
	})
}

var update = flag.Bool("update", false, "rewrite docs/policy.md from the policy tables")

// TestGoldenPolicyDoc keeps docs/policy.md in step with the tables. Run
// `go test ./internal/server -run TestGoldenPolicyDoc -update` to rewrite it.
func TestGoldenPolicyDoc(t *testing.T) {
	var got bytes.Buffer
	if err := writePolicyDoc(&got); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "policy.md")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read docs/policy.md (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("docs/policy.md is stale; run `go test ./internal/server -run TestGoldenPolicyDoc -update`")
	}
}

// fakeNodes is a nodeReader of fixed nodes.
type fakeNodes map[string]*model.Node

func (f fakeNodes) GetNode(_ context.Context, ident string) (*model.Node, error) {
	if n, ok := f[ident]; ok {
		return n, nil
	}
	return nil, store.ErrNotFound
}

func (f fakeNodes) GetPort(context.Context, string) (*model.Port, error) {
	return nil, store.ErrNotFound
}

func (f fakeNodes) GetVolumeConnector(context.Context, string) (*model.VolumeConnector, error) {
	return nil, store.ErrNotFound
}

func (f fakeNodes) GetVolumeTarget(context.Context, string) (*model.VolumeTarget, error) {
	return nil, store.ErrNotFound
}

func (f fakeNodes) GetRunbook(context.Context, string) (*model.Runbook, error) {
	return nil, store.ErrNotFound
}

// TestOwnerProvisioned: baremetal:node:update_owner_provisioned — a system
// member may not change an active node's owner (409, as Ironic answers); a
// system admin may, and other fields or states are not concerned.
func TestOwnerProvisioned(t *testing.T) {
	iss := authtest.NewIssuer(t)
	nodes := fakeNodes{"act": {UUID: "act", ProvisionState: "active"}, "man": {UUID: "man", ProvisionState: "manageable"}}
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++; w.WriteHeader(200) })
	h, err := auth.Middleware(t.Context(), &projectPolicy{nodes: nodes, next: next},
		auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}})
	if err != nil {
		t.Fatal(err)
	}
	member := "Bearer " + iss.Token(t, iss.Key, map[string]any{"roles": []any{"member"}})
	admin := "Bearer " + iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}})
	owner := `[{"op": "replace", "path": "/owner", "value": "p9"}]`
	for _, c := range []struct {
		who, authz, node, body string
		want                   int
	}{
		{"member", member, "act", owner, 409},
		{"member", member, "man", owner, 200},
		{"member", member, "act", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 200},
		{"admin", admin, "act", owner, 200},
	} {
		req := httptest.NewRequest("PATCH", "/v1/nodes/"+c.node, strings.NewReader(c.body))
		req.Header.Set("Authorization", c.authz)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s PATCH %s %s: %d %s, want %d", c.who, c.node, c.body, rec.Code, rec.Body, c.want)
		}
	}
	if reached != 3 {
		t.Errorf("%d requests reached the API, want 3", reached)
	}
}

// TestInspectionRulePolicy: Ironic master's baremetal:inspection_rule:*
// defaults: system readers read, system admins write, projects neither.
func TestInspectionRulePolicy(t *testing.T) {
	iss := authtest.NewIssuer(t)
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++; w.WriteHeader(200) })
	h, err := auth.Middleware(t.Context(), &projectPolicy{nodes: fakeNodes{}, next: next},
		auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(project, role string) string {
		claims := map[string]any{"roles": []any{role}}
		if project != "" {
			claims["project_id"] = project
		}
		return "Bearer " + iss.Token(t, iss.Key, claims)
	}
	const one = "/v1/inspection_rules/1be26c0b-03f2-4d2e-ae87-c02d7f33c125"
	for _, c := range []struct {
		who, authz, method, path string
		want                     int
		msg                      string
	}{
		{"system reader", tok("", "reader"), "GET", "/v1/inspection_rules", 200, ""},
		{"system member", tok("", "member"), "GET", one, 200, ""},
		{"system member", tok("", "member"), "POST", "/v1/inspection_rules", 403, "baremetal:inspection_rule:create is disallowed by policy"},
		{"system member", tok("", "member"), "PATCH", one, 403, "baremetal:inspection_rule:update is disallowed by policy"},
		{"system member", tok("", "member"), "DELETE", "/v1/inspection_rules", 403, "baremetal:inspection_rule:delete is disallowed by policy"},
		{"system admin", tok("", "admin"), "POST", "/v1/inspection_rules", 200, ""},
		{"system admin", tok("", "admin"), "DELETE", one, 200, ""},
		{"project admin", tok("p1", "admin"), "GET", "/v1/inspection_rules", 403, "baremetal:inspection_rule:get is disallowed by policy"},
		{"project admin", tok("p1", "admin"), "POST", "/v1/inspection_rules", 403, "baremetal:inspection_rule:create is disallowed by policy"},
	} {
		before := reached
		req := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
		req.Header.Set("Authorization", c.authz)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want || (c.msg != "" && !strings.Contains(rec.Body.String(), c.msg)) || (c.want == 200) != (reached > before) {
			t.Errorf("%s %s %s: %d %s, want %d %q", c.who, c.method, c.path, rec.Code, rec.Body, c.want, c.msg)
		}
	}
}
