package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/dashboard"
)

// TestServeDashboard: a browser's GET / is redirected to the dashboard,
// which `anvil serve` serves; an API client's GET / is Ironic's root.
func TestServeDashboard(t *testing.T) {
	s := serve(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, accept string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", s.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get("/", "text/html,application/xhtml+xml,*/*;q=0.8")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/dashboard/" {
		t.Errorf("browser GET /: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, accept := range []string{"", "application/json", "*/*"} {
		resp := get("/", accept)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"OpenStack Ironic API"`) {
			t.Errorf("API GET / (Accept %q): %d %s", accept, resp.StatusCode, body)
		}
	}
	resp = get("/dashboard/", "text/html")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "app.js") {
		t.Errorf("GET /dashboard/: %d %s", resp.StatusCode, body)
	}
	if resp := get("/dashboard/lifecycle.svg", ""); resp.StatusCode != 200 {
		t.Errorf("GET /dashboard/lifecycle.svg: %d", resp.StatusCode)
	}
}

// TestDashboardSession: under jwt the dashboard's page is public, a
// project's token logs in at its session endpoint, and the session cookie
// then stands for the token through the same policy: the fleet narrowed to
// the project, writes only with the session's CSRF header.
func TestDashboardSession(t *testing.T) {
	iss := authtest.NewIssuer(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}}
	})
	system := "Bearer " + iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}})
	do := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	var mine string
	for _, owner := range []string{"p1", "p2"} {
		resp := do("POST", "/v1/nodes", `{"driver": "fake-hardware", "owner": "`+owner+`"}`, "Authorization", system)
		var n struct{ UUID string }
		_ = json.NewDecoder(resp.Body).Decode(&n)
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d", resp.StatusCode)
		}
		if owner == "p1" {
			mine = n.UUID
		}
	}
	if resp := do("GET", "/dashboard/", ""); resp.StatusCode != 200 {
		t.Errorf("the page without a session: %d", resp.StatusCode)
	}
	token := iss.Token(t, iss.Key, map[string]any{"roles": []any{"member"}, "project_id": "p1"})
	resp := do("POST", dashboard.SessionPath, `{"token": "`+token+`"}`)
	var sess struct {
		CSRF string `json:"csrf_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&sess)
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	if resp.StatusCode != 200 || cookie == "" || sess.CSRF == "" {
		t.Fatalf("login: %d %q", resp.StatusCode, cookie)
	}
	resp = do("GET", "/v1/fleet/nodes?fields=uuid", "", "Cookie", cookie)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), mine) || !strings.Contains(string(body), `"matching": 1`) {
		t.Errorf("p1's fleet through the session: %d %s", resp.StatusCode, body)
	}
	path := "/v1/nodes/" + mine + "/maintenance"
	if resp := do("PUT", path, `{"reason": "r"}`, "Cookie", cookie); resp.StatusCode != 403 {
		t.Errorf("a write with the cookie and no CSRF header: %d", resp.StatusCode)
	}
	if resp := do("PUT", path, `{"reason": "r"}`, "Cookie", cookie, auth.CSRFHeader, sess.CSRF); resp.StatusCode != 202 {
		t.Errorf("a write with the session's CSRF header: %d", resp.StatusCode)
	}
}
