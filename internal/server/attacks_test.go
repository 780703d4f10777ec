package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
)

// tenantServer serves Anvil with jwt authentication and an audit file;
// as(project, role) is a bearer token, call sends a request with a legacy
// version header (ver) and returns status and body.
type tenantServer struct {
	t     *testing.T
	base  string
	audit string
	iss   *authtest.Issuer
}

func newTenantServer(t *testing.T) *tenantServer {
	iss := authtest.NewIssuer(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}}
		c.Security.AuditLog = audit
	})
	return &tenantServer{t: t, base: s.base, audit: audit, iss: iss}
}

func (s *tenantServer) as(project, role string) string {
	claims := map[string]any{"roles": []any{role}}
	if project != "" {
		claims["project_id"] = project
	}
	return "Bearer " + s.iss.Token(s.t, s.iss.Key, claims)
}

func (s *tenantServer) call(authz, ver, method, path, body string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if ver != "" {
		req.Header.Set("X-OpenStack-Ironic-API-Version", ver)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// create makes a node as the system admin and returns its UUID.
func (s *tenantServer) create(body string) string {
	s.t.Helper()
	st, raw := s.call(s.as("", "admin"), "latest", "POST", "/v1/nodes", body)
	if st != 201 {
		s.t.Fatalf("create %s: %d %s", body, st, raw)
	}
	var n struct{ UUID string }
	_ = json.Unmarshal([]byte(raw), &n)
	return n.UUID
}

// TestTenantAttacks replays the attacks a hostile tenant made on the
// second router the policy used to be (issue 21: items 1, 2, 3, 4, 7);
// each case failed then.
func TestTenantAttacks(t *testing.T) {
	s := newTenantServer(t)
	admin := s.as("", "admin")
	a := s.create(`{"driver": "fake-hardware", "name": "zz", "owner": "projA"}`)
	b := s.create(`{"driver": "fake-hardware", "name": "zz.json", "owner": "projB", "driver_info": {"ipmi_address": "10.9.9.9", "ipmi_password": "b-secret-pw"}}`)
	leased := s.create(`{"driver": "fake-hardware", "name": "lb", "owner": "projB", "lessee": "projA"}`)
	for node, mac := range map[string]string{a: "52:54:00:aa:00:01", b: "52:54:00:bb:00:01"} {
		if st, raw := s.call(admin, "latest", "POST", "/v1/ports", `{"address": "`+mac+`", "node_uuid": "`+node+`", "extra": {"secret": "port-extra"}}`); st != 201 {
			t.Fatalf("port: %d %s", st, raw)
		}
	}
	// The leased node fails, so it has a last_error and a history entry.
	if st, raw := s.call(admin, "latest", "PATCH", "/v1/nodes/lb", `[{"op": "add", "path": "/last_error", "value": "x"}]`); st == 500 {
		t.Fatalf("patch: %d %s", st, raw)
	}
	memberA, readerA := s.as("projA", "member"), s.as("projA", "reader")
	bBefore := func() string { _, raw := s.call(admin, "latest", "GET", "/v1/nodes/"+b, ""); return raw }()

	t.Run("2 ports of another project's node by a second node parameter", func(t *testing.T) {
		for _, path := range []string{
			"/v1/ports?node=" + a + "&node_uuid=" + b,
			"/v1/ports/detail?node=" + a + "&node_uuid=" + b,
			"/v1/ports?node_uuid=" + b + "&node=zz",
			"/v1/nodes/" + a + "/ports/detail?node_uuid=" + b,
			"/v1/nodes/zz/ports?node_uuid=" + b,
		} {
			st, raw := s.call(readerA, "latest", "GET", path, "")
			if strings.Contains(raw, "52:54:00:bb:00:01") || strings.Contains(raw, "port-extra") && !strings.Contains(raw, "52:54:00:aa:00:01") {
				t.Errorf("GET %s = %d leaks B's port: %s", path, st, raw)
			}
		}
	})

	t.Run("3 another project's node by a name ending in .json", func(t *testing.T) {
		for _, c := range []struct{ ver, method, body string }{
			{"1.110", "GET", ""},
			{"1.110", "PATCH", `[{"op": "replace", "path": "/driver_info/ipmi_address", "value": "127.0.0.1"}]`},
			{"latest", "PATCH", `[{"op": "replace", "path": "/extra", "value": {"x": 1}}]`},
		} {
			st, raw := s.call(memberA, c.ver, c.method, "/v1/nodes/zz.json", c.body)
			if st != 404 {
				t.Errorf("%s %s /v1/nodes/zz.json = %d %s, want 404", c.ver, c.method, st, raw)
			}
		}
		// Below 1.91 the suffix is stripped: zz, A's own node.
		if st, raw := s.call(memberA, "1.90", "GET", "/v1/nodes/zz.json", ""); st != 200 || !strings.Contains(raw, a) {
			t.Errorf("1.90 GET zz.json = %d %s, want A's zz", st, raw)
		}
		if _, raw := s.call(admin, "latest", "GET", "/v1/nodes/"+b, ""); raw != bBefore {
			t.Errorf("B's node changed:\n%s\n%s", bBefore, raw)
		}
	})

	t.Run("4 unversioned paths take the same rules, and are audited with their node", func(t *testing.T) {
		sysMember := s.as("", "member")
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/inspection_rules", `{"actions": [{"op": "set-attribute", "args": {"path": "/extra/x", "value": 1}}]}`},
			{"DELETE", "/inspection_rules", ""},
			{"PATCH", "/nodes/" + b, `[{"op": "add", "path": "/extra/x", "value": 1}]`},
		} {
			st, raw := s.call(sysMember, "latest", c.method, c.path, c.body)
			v1, raw1 := s.call(sysMember, "latest", c.method, "/v1"+c.path, c.body)
			if st != v1 {
				t.Errorf("%s %s = %d %s but under /v1 %d %s", c.method, c.path, st, raw, v1, raw1)
			}
		}
		f, err := os.Open(s.audit)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		found := false
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec AuditRecord
			_ = json.Unmarshal(sc.Bytes(), &rec)
			if rec.Method == "PATCH" && rec.Path == "/nodes/"+b {
				found = true
				if rec.Node != b {
					t.Errorf("the unversioned PATCH is audited with node %q, want %s", rec.Node, b)
				}
			}
		}
		if !found {
			t.Error("the unversioned PATCH was not audited")
		}
	})

	t.Run("7 a lessee reader sees no last_error, history or console", func(t *testing.T) {
		_, raw := s.call(readerA, "latest", "GET", "/v1/nodes/lb/states", "")
		var states map[string]any
		_ = json.Unmarshal([]byte(raw), &states)
		if le, _ := states["last_error"].(string); le != "" && !strings.Contains(le, "baremetal:node:get:last_error") {
			t.Errorf("the lessee's /states last_error: %q", le)
		}
		st, raw := s.call(readerA, "latest", "GET", "/v1/nodes/"+leased+"/history/00000000-0000-0000-0000-000000000001", "")
		if st != 403 {
			t.Errorf("a lessee's history entry: %d %s, want 403", st, raw)
		}
		if st, raw := s.call(readerA, "latest", "GET", "/v1/nodes/lb/states/console", ""); st != 403 {
			t.Errorf("a lessee's console state: %d %s, want 403", st, raw)
		}
		if st, raw := s.call(s.as("projB", "member"), "latest", "GET", "/v1/nodes/lb/states/console", ""); st == 403 || st == 404 {
			t.Errorf("the owner member's console state: %d %s", st, raw)
		}
	})

	t.Run("1 a project may not point an image at a local file", func(t *testing.T) {
		ownerA := s.as("projA", "admin")
		for _, c := range []struct{ path, body string }{
			{"/v1/nodes/zz", `[{"op": "add", "path": "/driver_info/deploy_kernel", "value": "file:///etc/shadow"}]`},
			{"/v1/nodes/zz", `[{"op": "add", "path": "/driver_info/deploy_ramdisk", "value": "FILE:/var/lib/anvil/anvil.db"}]`},
			{"/v1/nodes/zz", `[{"op": "add", "path": "/driver_info", "value": {"deploy_kernel": "/etc/shadow"}}]`},
			{"/v1/nodes/zz", `[{"op": "add", "path": "/instance_info/image_source", "value": "file:///etc/passwd"}]`},
			{"/v1/nodes/zz", `[{"op": "add", "path": "/instance_info/kernel", "value": "../../etc/shadow"}]`},
			{"/nodes/zz", `[{"op": "add", "path": "/driver_info/rescue_kernel", "value": "file:///etc/shadow"}]`},
		} {
			if st, raw := s.call(ownerA, "latest", "PATCH", c.path, c.body); st != 403 {
				t.Errorf("PATCH %s %s = %d %s, want 403", c.path, c.body, st, raw)
			}
		}
		if st, raw := s.call(ownerA, "latest", "POST", "/v1/nodes/zz/vmedia", `{"device_type": "CDROM", "image_url": "file:///etc/shadow"}`); st != 403 && st != 400 {
			t.Errorf("vmedia file URL: %d %s", st, raw)
		}
		if st, raw := s.call(ownerA, "latest", "PATCH", "/v1/nodes/zz", `[{"op": "add", "path": "/driver_info/deploy_kernel", "value": "http://127.0.0.1/k"}]`); st != 200 {
			t.Errorf("an http kernel: %d %s", st, raw)
		}
	})
}
