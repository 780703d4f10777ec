package auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
)

func TestJWT(t *testing.T) {
	iss := authtest.NewIssuer(t)
	var seen string
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = auth.User(r.Context()) })
	h, err := auth.Middleware(t.Context(), inner, auth.Config{Strategy: auth.JWT, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		JWT: auth.JWTConfig{Issuer: iss.URL, Audience: "anvil", RolesClaim: "realm_access.roles"}})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	roles := func(r ...any) map[string]any { return map[string]any{"realm_access": map[string]any{"roles": r}} }
	admin := iss.Token(t, iss.Key, map[string]any{"realm_access": map[string]any{"roles": []any{"admin"}}, "preferred_username": "alice"})
	cases := []struct {
		name, method, hdr string
		status            int
	}{
		{"no token", "GET", "", 401},
		{"admin writes", "POST", "Bearer " + admin, 200},
		{"admin via X-Auth-Token", "X-Auth-Token", admin, 200},
		{"member writes", "POST", "Bearer " + iss.Token(t, iss.Key, roles("member")), 200},
		{"reader reads", "GET", "Bearer " + iss.Token(t, iss.Key, roles("reader")), 200},
		{"reader may not write", "PATCH", "Bearer " + iss.Token(t, iss.Key, roles("reader")), 403},
		{"no role", "GET", "Bearer " + iss.Token(t, iss.Key, roles()), 403},
		{"project-scoped passes (the project policy decides)", "GET", "Bearer " + iss.Token(t, iss.Key, map[string]any{"realm_access": map[string]any{"roles": []any{"admin"}}, "project_id": "p1"}), 200},
		{"expired", "GET", "Bearer " + iss.Token(t, iss.Key, map[string]any{"exp": time.Now().Add(-time.Hour).Unix(), "realm_access": map[string]any{"roles": []any{"admin"}}}), 401},
		{"wrong audience", "GET", "Bearer " + iss.Token(t, iss.Key, map[string]any{"aud": "other", "realm_access": map[string]any{"roles": []any{"admin"}}}), 401},
		{"other signer", "GET", "Bearer " + iss.Token(t, other, roles("admin")), 401},
		{"garbage", "GET", "Bearer not.a.jwt", 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen = ""
			method := c.method
			req := httptest.NewRequest(method, "/v1/nodes", nil)
			if method == "X-Auth-Token" {
				req = httptest.NewRequest("POST", "/v1/nodes", nil)
				req.Header.Set("X-Auth-Token", c.hdr)
			} else if c.hdr != "" {
				req.Header.Set("Authorization", c.hdr)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, c.status)
			}
			if c.status == 200 && seen == "" {
				t.Fatal("no user reached the handler")
			}
		})
	}
	// The public routes stay public.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1", nil))
	if rec.Code != 200 {
		t.Fatalf("/v1 without a token: %d", rec.Code)
	}
	if _, err := auth.Middleware(t.Context(), inner, auth.Config{Strategy: auth.JWT}); err == nil {
		t.Fatal("jwt without an issuer was accepted")
	}
}

// TestJWTProjectClaimStrict: a project claim that is present but not a
// non-empty string is refused with 401 naming the claim, never read as a
// system-scoped token (issue 21, item 5).
func TestJWTProjectClaimStrict(t *testing.T) {
	iss := authtest.NewIssuer(t)
	var seen auth.Principal
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen, _ = auth.PrincipalOf(r.Context()) })
	h, err := auth.Middleware(t.Context(), inner, auth.Config{Strategy: auth.JWT, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		JWT: auth.JWTConfig{Issuer: iss.URL, Audience: "anvil"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		project any // omitted when absent
		absent  bool
		status  int
		want    string // the principal's project when admitted
	}{
		{name: "absent: system scope", absent: true, status: 200},
		{name: "null: system scope", project: nil, status: 200},
		{name: "a string", project: "projA", status: 200, want: "projA"},
		{name: "a list", project: []any{"projA"}, status: 401},
		{name: "an empty list", project: []any{}, status: 401},
		{name: "a number", project: 12345, status: 401},
		{name: "an empty string", project: "", status: 401},
		{name: "blanks", project: "  ", status: 401},
		{name: "an object", project: map[string]any{"id": "projA"}, status: 401},
		{name: "a boolean", project: true, status: 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims := map[string]any{"roles": []any{"admin"}}
			if !c.absent {
				claims["project_id"] = c.project
			}
			seen = auth.Principal{Project: "unset"}
			req := httptest.NewRequest("GET", "/v1/nodes", nil)
			req.Header.Set("Authorization", "Bearer "+iss.Token(t, iss.Key, claims))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, c.status)
			}
			if c.status == 401 {
				if !strings.Contains(rec.Body.String(), `project_id`) || !strings.Contains(rec.Body.String(), "non-empty string") {
					t.Errorf("refusal %s does not say the project claim is malformed", rec.Body)
				}
				if seen.Project != "unset" {
					t.Errorf("the handler ran as %+v", seen)
				}
				return
			}
			if seen.Project != c.want {
				t.Errorf("principal project %q, want %q", seen.Project, c.want)
			}
		})
	}
}
