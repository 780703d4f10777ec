package server

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
)

// route is one method on one path of the API, with a body that would
// succeed (or at least reach the handler) for an authorised caller.
type route struct {
	method, path, body string
	public             bool
}

// routes are every route of the API (on node "m1" and its port), in the
// order the matrix sends them: reads, then writes, deletes last.
func routes(portUUID string) []route {
	n := "/v1/nodes/m1"
	return []route{
		{"GET", "/", "", true}, {"GET", "/v1", "", true}, {"GET", "/v1/", "", true},
		{"GET", "/v1/lookup?addresses=52:54:00:12:34:56", "", true},
		{"GET", "/dashboard/", "", true}, {"GET", "/dashboard/session", "", true},
		{"GET", "/v1/nodes", "", false}, {"GET", "/v1/nodes/detail", "", false}, {"GET", n, "", false},
		{"GET", n + "/states", "", false}, {"GET", n + "/validate", "", false}, {"GET", "/v1/nodes/validate?node=m1", "", false},
		{"GET", n + "/management/boot_device", "", false}, {"GET", n + "/management/boot_device/supported", "", false},
		{"GET", n + "/history", "", false}, {"GET", n + "/inventory", "", false}, {"GET", n + "/ports", "", false},
		{"GET", n + "/ports/detail", "", false}, {"GET", "/v1/ports", "", false}, {"GET", "/v1/ports/detail", "", false},
		{"GET", "/v1/ports/" + portUUID, "", false}, {"GET", "/v1/drivers", "", false}, {"GET", "/v1/drivers/fake-hardware", "", false},
		{"GET", "/v1/drivers/fake-hardware/properties", "", false}, {"GET", "/v1/conductors", "", false},
		{"GET", "/v1/chassis", "", false}, {"GET", "/metrics", "", false}, {"GET", "/v1/events/stream?snapshot=false", "", false},
		{"POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "m2"}`, false},
		{"PATCH", n, `[{"op": "add", "path": "/extra/x", "value": "y"}]`, false},
		{"PUT", n + "/states/power", `{"target": "power on"}`, false},
		{"PUT", n + "/states/provision", `{"target": "manage"}`, false},
		{"PUT", n + "/maintenance", `{"reason": "r"}`, false}, {"DELETE", n + "/maintenance", "", false},
		{"PUT", n + "/management/boot_device", `{"boot_device": "pxe"}`, false},
		{"POST", "/v1/ports", `{"address": "52:54:00:aa:bb:cc", "node_uuid": "00000000-0000-0000-0000-000000000000"}`, false},
		{"PATCH", "/v1/ports/" + portUUID, `[{"op": "add", "path": "/extra/x", "value": "y"}]`, false},
		{"DELETE", "/v1/ports/" + portUUID, "", false}, {"DELETE", n, "", false},
	}
}

// send makes one request with the given Authorization header value and
// returns its status; streams are not read.
func send(t *testing.T, base string, r route, authz string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), r.method, base+r.path, strings.NewReader(r.body))
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.path, "/v1/events/stream") {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// snapshot is every node and port as an admin reads them.
func snapshot(t *testing.T, base, authz string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/v1/nodes/detail", "/v1/ports/detail"} {
		req, _ := http.NewRequest("GET", base+p, nil)
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		req.Header.Set("Authorization", authz)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.Write(raw)
	}
	return b.String()
}

// TestAuthMatrix: every route × {no credentials, wrong password, other
// scheme, reader, member, admin, project-scoped token}; writes refused
// leave the database unchanged.
func TestAuthMatrix(t *testing.T) {
	iss := authtest.NewIssuer(t)
	strategies := map[string]auth.Config{
		"http_basic": {Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "admin", "M4trix-pw")},
		"jwt":        {Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL, Audience: "anvil"}},
	}
	bearer := func(claims map[string]any) string { return "Bearer " + iss.Token(t, iss.Key, claims) }
	basicAdmin := "Basic " + b64("admin:M4trix-pw")
	for name, ac := range strategies {
		t.Run(name, func(t *testing.T) {
			s := serveWith(t, func(c *Config) { c.Security.Auth = ac })
			admin := basicAdmin
			if name == "jwt" {
				admin = bearer(map[string]any{"roles": []any{"admin"}})
			}
			if st := send(t, s.base, route{method: "POST", path: "/v1/nodes", body: `{"driver": "fake-hardware", "name": "m1"}`}, admin); st != 201 {
				t.Fatalf("create m1 as admin: %d", st)
			}
			portUUID := createPort(t, s.base, admin)
			before := snapshot(t, s.base, admin)
			refused := map[string]string{"none": "", "other scheme": "Digest x"}
			if name == "http_basic" {
				refused["wrong password"] = "Basic " + b64("admin:nope")
				refused["unknown user"] = "Basic " + b64("eve:M4trix-pw")
			} else {
				refused["forged"] = "Bearer " + iss.Token(t, otherKey(t), map[string]any{"roles": []any{"admin"}})
				refused["reader writes"] = bearer(map[string]any{"roles": []any{"reader"}})
				refused["project-scoped"] = bearer(map[string]any{"roles": []any{"admin"}, "project_id": "p1"})
				refused["no role"] = bearer(map[string]any{})
			}
			for who, authz := range refused {
				for _, r := range routes(portUUID) {
					st := send(t, s.base, r, authz)
					write := r.method != "GET"
					switch {
					case r.public:
						if st == 401 || st == 403 {
							t.Errorf("%s: public %s %s answered %d", who, r.method, r.path, st)
						}
					case who == "reader writes" && !write && memberReads(r.path):
						// Ironic's defaults: validate and the boot device are
						// SYSTEM_MEMBER rules, reads or not.
						if st != 403 {
							t.Errorf("reader: %s %s = %d, want 403", r.method, r.path, st)
						}
					case who == "reader writes" && !write:
						if st == 401 || st == 403 || st >= 500 {
							t.Errorf("reader: %s %s = %d, want it served", r.method, r.path, st)
						}
					case who == "project-scoped":
						// m1 belongs to no project: invisible (404) or system-only
						// (403); its lists (and the event stream) come back empty.
						isList := r.method == "GET" && (r.path == "/v1/nodes" || r.path == "/v1/nodes/detail" ||
							strings.HasPrefix(r.path, "/v1/events/stream"))
						// A port for a node it may not see is refused as one
						// for no node (400), so as not to tell it exists.
						portCreate := r.method == "POST" && r.path == "/v1/ports" && st == 400
						if !isList && !portCreate && st != 403 && st != 404 || isList && st != 200 {
							t.Errorf("%s: %s %s = %d", who, r.method, r.path, st)
						}
					case who == "reader writes" || who == "no role":
						if st != 403 {
							t.Errorf("%s: %s %s = %d, want 403", who, r.method, r.path, st)
						}
					case who == "other scheme" && name == "http_basic":
						if st != 400 {
							t.Errorf("%s: %s %s = %d, want 400", who, r.method, r.path, st)
						}
					default:
						if st != 401 {
							t.Errorf("%s: %s %s = %d, want 401", who, r.method, r.path, st)
						}
					}
				}
			}
			if after := snapshot(t, s.base, admin); after != before {
				t.Errorf("refused requests changed the database:\nbefore %s\nafter  %s", before, after)
			}
			// The authorised principals reach every handler.
			allowed := []string{admin}
			if name == "jwt" {
				allowed = append(allowed, bearer(map[string]any{"roles": []any{"member"}}))
			}
			for _, authz := range allowed {
				for _, r := range routes(portUUID) {
					if r.method != "GET" {
						continue
					}
					if st := send(t, s.base, r, authz); st == 401 || st == 403 {
						t.Errorf("authorised %s %s = %d", r.method, r.path, st)
					}
				}
			}
			for _, r := range routes(portUUID) {
				if r.method == "GET" {
					continue
				}
				if st := send(t, s.base, r, admin); st == 401 || st == 403 || st >= 500 {
					t.Errorf("admin %s %s = %d", r.method, r.path, st)
				}
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func otherKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// createPort creates a port on m1 as authz and returns its UUID.
func createPort(t *testing.T, base, authz string) string {
	t.Helper()
	get, _ := http.NewRequest("GET", base+"/v1/nodes/m1", nil)
	get.Header.Set("Authorization", authz)
	get.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	gr, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	var n struct{ UUID string }
	_ = json.NewDecoder(gr.Body).Decode(&n)
	gr.Body.Close()
	req, _ := http.NewRequest("POST", base+"/v1/ports", strings.NewReader(`{"address": "52:54:00:12:34:56", "node_uuid": "`+n.UUID+`"}`))
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var p struct{ UUID string }
	if err := json.Unmarshal(raw, &p); err != nil || p.UUID == "" {
		t.Fatalf("create port: %d %v %s", resp.StatusCode, err, raw)
	}
	return p.UUID
}

// memberReads reports whether a GET path is guarded by a member rule
// (baremetal:node:validate, baremetal:node:get_boot_device).
func memberReads(path string) bool {
	return strings.Contains(path, "/validate") || strings.Contains(path, "/management/boot_device")
}
