package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/anvil-metal/anvil/internal/auth"
)

// userFile writes an htpasswd file with bcrypt entries user:password.
func userFile(t *testing.T, pairs ...string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		h, err := bcrypt.GenerateFromPassword([]byte(pairs[i+1]), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(pairs[i] + ":" + string(h) + "\n")
	}
	p := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func basicHdr(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestBasic(t *testing.T) {
	path := userFile(t, "admin", "pw-Φ:colon")
	var seenUser string
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seenUser = auth.User(r.Context()) })
	h, err := auth.Middleware(t.Context(), inner, auth.Config{Strategy: auth.HTTPBasic, UserFile: path,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, authz string
		status            int
		msg               string
	}{
		{"no credentials", "/v1/nodes", "", 401, "Authorization required"},
		{"wrong password", "/v1/nodes", basicHdr("admin", "nope"), 401, "Incorrect username or password"},
		{"unknown user", "/v1/nodes", basicHdr("root", "pw-Φ:colon"), 401, "Incorrect username or password"},
		{"bearer", "/v1/nodes", "Bearer abc", 400, `Unsupported authorization type "Bearer"`},
		{"garbage", "/v1/nodes", "Basic", 400, "Could not parse Authorization header"},
		{"not base64", "/v1/nodes", "Basic !!!", 400, "Could not decode authorization token"},
		{"metrics", "/metrics", "", 401, "Authorization required"},
		{"event stream", "/v1/events/stream", "", 401, "Authorization required"},
		{"right", "/v1/nodes", basicHdr("admin", "pw-Φ:colon"), 200, ""},
		{"right again (cached)", "/v1/nodes/n1", basicHdr("admin", "pw-Φ:colon"), 200, ""},
		{"root", "/", "", 200, ""},
		{"v1", "/v1/", "", 200, ""},
		{"v1.json", "/v1.json", "", 200, ""},
		{"lookup", "/v1/lookup", "", 200, ""},
		{"heartbeat", "/v1/heartbeat/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "", 200, ""},
		{"continue_inspection", "/v1/continue_inspection", "", 200, ""},
		{"heartbeat subpath", "/v1/heartbeat/n1/x", "", 401, "Authorization required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seenUser = ""
			req := httptest.NewRequest("GET", c.path, nil)
			if c.authz != "" {
				req.Header.Set("Authorization", c.authz)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("%s: %d %s, want %d", c.path, rec.Code, rec.Body, c.status)
			}
			if c.status == 200 {
				if c.authz != "" && seenUser != "admin" {
					t.Fatalf("user %q reached the handler, want admin", seenUser)
				}
				return
			}
			if got := rec.Header().Get("WWW-Authenticate"); (c.status == 401) != (got == auth.Realm) {
				t.Fatalf("WWW-Authenticate %q on %d", got, c.status)
			}
			var body struct {
				Error struct {
					Message string
					Code    int
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != c.status || body.Error.Message != c.msg {
				t.Fatalf("body %s, want {\"error\": {\"message\": %q, \"code\": %d}}", rec.Body, c.msg, c.status)
			}
		})
	}
}

// TestUserFileReloaded: a user added to the file is accepted without a
// restart.
func TestUserFileReloaded(t *testing.T) {
	path := userFile(t, "a", "1")
	h, err := auth.Middleware(t.Context(), http.NotFoundHandler(), auth.Config{Strategy: auth.HTTPBasic, UserFile: path,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	try := func(u, p string) int {
		req := httptest.NewRequest("GET", "/v1/nodes", nil)
		req.Header.Set("Authorization", basicHdr(u, p))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if c := try("b", "2"); c != 401 {
		t.Fatalf("b before being added: %d", c)
	}
	hb, _ := bcrypt.GenerateFromPassword([]byte("2"), bcrypt.MinCost)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("b:" + string(hb) + "\n")
	f.Close()
	if c := try("b", "2"); c != 404 {
		t.Fatalf("b after being added: %d", c)
	}
}

func TestConfigErrors(t *testing.T) {
	md5 := filepath.Join(t.TempDir(), "htpasswd")
	_ = os.WriteFile(md5, []byte("u:$apr1$abc$def\n"), 0o600)
	for name, cfg := range map[string]auth.Config{
		"unknown strategy": {Strategy: "keystone"},
		"missing file":     {Strategy: auth.HTTPBasic, UserFile: filepath.Join(t.TempDir(), "none")},
		"md5 entry":        {Strategy: auth.HTTPBasic, UserFile: md5},
	} {
		if _, err := auth.Middleware(t.Context(), http.NotFoundHandler(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// BenchmarkBasicCached: an authenticated request after the first pays no
// bcrypt.
func BenchmarkBasicCached(b *testing.B) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.DefaultCost)
	p := filepath.Join(b.TempDir(), "htpasswd")
	_ = os.WriteFile(p, []byte("admin:"+string(h)+"\n"), 0o600)
	mw, err := auth.Middleware(b.Context(), http.NotFoundHandler(), auth.Config{Strategy: auth.HTTPBasic, UserFile: p})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/v1/nodes", nil)
	req.Header.Set("Authorization", basicHdr("admin", "pw"))
	for b.Loop() {
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, req)
		if rec.Code != 404 {
			b.Fatal(rec.Code)
		}
	}
}
