package auth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/store"
)

const sessionPath = "/dashboard/session"

// sessionServer serves cfg's strategy with sessions in front of a handler
// that answers the principal's user and project.
func sessionServer(t *testing.T, cfg auth.Config) *httptest.Server {
	t.Helper()
	cfg.SessionPath = sessionPath
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Public = func(p string) bool { return strings.HasPrefix(p, "/dashboard/") }
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.PrincipalOf(r.Context())
		_, _ = io.WriteString(w, p.User+"|"+p.Project)
	})
	h, err := auth.Middleware(t.Context(), inner, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

type reply struct {
	status int
	body   string
	hdr    http.Header
	cookie *http.Cookie
}

// do sends one request; hdr holds header pairs.
func do(t *testing.T, srv *httptest.Server, method, path, body string, cookie *http.Cookie, hdr ...string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := reply{status: resp.StatusCode, body: string(raw), hdr: resp.Header}
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie {
			out.cookie = c
		}
	}
	return out
}

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `"csrf_token":"`)
	tok, _, _ := strings.Cut(rest, `"`)
	if !ok || tok == "" {
		t.Fatalf("no csrf_token in %s", body)
	}
	return tok
}

func TestSessionsHTTPBasic(t *testing.T) {
	path := userFile(t, "admin", "Sess-pw-1")
	srv := sessionServer(t, auth.Config{Strategy: auth.HTTPBasic, UserFile: path})

	if r := do(t, srv, "GET", sessionPath, "", nil); r.status != 200 || !strings.Contains(r.body, `"authenticated":false`) || !strings.Contains(r.body, `"strategy":"http_basic"`) {
		t.Fatalf("who am I, before login: %d %s", r.status, r.body)
	}
	r := do(t, srv, "POST", sessionPath, `{"username": "admin", "password": "wrong"}`, nil)
	if r.status != 401 || r.cookie != nil || r.hdr.Get("WWW-Authenticate") != "" {
		t.Fatalf("wrong password: %d cookie %v challenge %q", r.status, r.cookie, r.hdr.Get("WWW-Authenticate"))
	}
	if r := do(t, srv, "POST", sessionPath, `username=admin&password=Sess-pw-1`, nil, "Content-Type", "application/x-www-form-urlencoded"); r.status != 400 || r.cookie != nil {
		t.Errorf("a form post (what another site can send) logged in: %d", r.status)
	}
	if r := do(t, srv, "POST", sessionPath, `{"username": "admin", "password": "Sess-pw-1"}`, nil, "Origin", "http://evil.example"); r.status != 400 || r.cookie != nil {
		t.Errorf("a cross-origin login: %d", r.status)
	}
	r = do(t, srv, "POST", sessionPath, `{"username": "admin", "password": "Sess-pw-1"}`, nil)
	c := r.cookie
	if r.status != 200 || c == nil {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 || c.MaxAge > int(auth.DefaultSessionTTL.Seconds()) {
		t.Errorf("cookie: %+v", c)
	}
	if strings.Contains(r.body, "Sess-pw-1") || strings.Contains(r.body, c.Value) {
		t.Errorf("the login answer holds a secret: %s", r.body)
	}
	csrf := csrfOf(t, r.body)
	session := &http.Cookie{Name: c.Name, Value: c.Value}

	if r := do(t, srv, "GET", "/v1/nodes", "", session); r.status != 200 || r.body != "admin|" {
		t.Errorf("read with the session: %d %s", r.status, r.body)
	}
	if r := do(t, srv, "POST", "/v1/nodes", `{}`, session); r.status != 403 {
		t.Errorf("write without the CSRF header: %d", r.status)
	}
	if r := do(t, srv, "POST", "/v1/nodes", `{}`, session, auth.CSRFHeader, "forged"); r.status != 403 {
		t.Errorf("write with a wrong CSRF header: %d", r.status)
	}
	if r := do(t, srv, "POST", "/v1/nodes", `{}`, session, auth.CSRFHeader, csrf, "Origin", "http://evil.example"); r.status != 403 {
		t.Errorf("write from another origin: %d", r.status)
	}
	if r := do(t, srv, "POST", "/v1/nodes", `{}`, session, auth.CSRFHeader, csrf, "Origin", srv.URL); r.status != 200 {
		t.Errorf("write with the CSRF header: %d %s", r.status, r.body)
	}
	if r := do(t, srv, "DELETE", sessionPath, "", session); r.status != 403 {
		t.Errorf("logout without the CSRF header: %d", r.status)
	}
	if r := do(t, srv, "DELETE", sessionPath, "", session, auth.CSRFHeader, csrf); r.status != 204 || r.cookie == nil || r.cookie.MaxAge >= 0 {
		t.Errorf("logout: %d %+v", r.status, r.cookie)
	}
	r = do(t, srv, "GET", "/v1/nodes", "", session, "Sec-Fetch-Mode", "cors")
	if r.status != 401 || r.hdr.Get("WWW-Authenticate") != "" {
		t.Errorf("after logout: %d, challenge %q", r.status, r.hdr.Get("WWW-Authenticate"))
	}

	// A changed password ends the sessions opened with the old one.
	r = do(t, srv, "POST", sessionPath, `{"username": "admin", "password": "Sess-pw-1"}`, nil)
	session = &http.Cookie{Name: r.cookie.Name, Value: r.cookie.Value}
	h, _ := bcrypt.GenerateFromPassword([]byte("Sess-pw-2"), bcrypt.MinCost)
	if err := os.WriteFile(path, []byte("admin:"+string(h)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := do(t, srv, "GET", "/v1/nodes", "", session); r.status != 401 {
		t.Errorf("after the password changed: %d", r.status)
	}
}

// TestChallenge: a script's request (fetch, EventSource) gets no Basic
// challenge, so the browser pops no dialog over the dashboard; a client's
// does.
func TestChallenge(t *testing.T) {
	srv := sessionServer(t, auth.Config{Strategy: auth.HTTPBasic, UserFile: userFile(t, "admin", "x")})
	if r := do(t, srv, "GET", "/v1/nodes", "", nil); r.status != 401 || r.hdr.Get("WWW-Authenticate") != auth.Realm {
		t.Errorf("client: %d %q", r.status, r.hdr.Get("WWW-Authenticate"))
	}
	if r := do(t, srv, "GET", "/v1/events/stream", "", nil, "Sec-Fetch-Mode", "cors"); r.status != 401 || r.hdr.Get("WWW-Authenticate") != "" {
		t.Errorf("script: %d %q", r.status, r.hdr.Get("WWW-Authenticate"))
	}
}

// TestCrossSiteWrite: a browser's write from another site's page is
// refused whatever credentials the browser adds by itself; reads, the
// page's own writes and clients without Fetch Metadata are not concerned.
func TestCrossSiteWrite(t *testing.T) {
	srv := sessionServer(t, auth.Config{Strategy: auth.HTTPBasic, UserFile: userFile(t, "admin", "x")})
	basic := basicHdr("admin", "x")
	for _, c := range []struct {
		method, site string
		want         int
	}{
		{"POST", "cross-site", 403}, {"PUT", "same-site", 403}, {"GET", "cross-site", 200},
		{"POST", "same-origin", 200}, {"POST", "", 200}, {"DELETE", "none", 200},
	} {
		hdr := []string{"Authorization", basic}
		if c.site != "" {
			hdr = append(hdr, "Sec-Fetch-Site", c.site)
		}
		if r := do(t, srv, c.method, "/v1/nodes", "", nil, hdr...); r.status != c.want {
			t.Errorf("%s from %q: %d, want %d", c.method, c.site, r.status, c.want)
		}
	}
}

func TestSessionsJWT(t *testing.T) {
	iss := authtest.NewIssuer(t)
	srv := sessionServer(t, auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}, SessionTTL: time.Hour})
	if r := do(t, srv, "POST", sessionPath, `{"token": "not-a-token"}`, nil); r.status != 401 || r.cookie != nil {
		t.Fatalf("a bad token: %d", r.status)
	}
	if r := do(t, srv, "POST", sessionPath, `{"token": "`+iss.Token(t, iss.Key, map[string]any{})+`"}`, nil); r.status != 403 || r.cookie != nil {
		t.Fatalf("a token with no role: %d", r.status)
	}
	// The session ends with the token, before the TTL.
	tok := iss.Token(t, iss.Key, map[string]any{"roles": []any{"reader"}, "project_id": "p1",
		"exp": time.Now().Add(2 * time.Minute).Unix()})
	r := do(t, srv, "POST", sessionPath, `{"token": "`+tok+`"}`, nil)
	if r.status != 200 || r.cookie == nil || r.cookie.MaxAge > 120 || r.cookie.MaxAge < 100 {
		t.Fatalf("login: %d %+v %s", r.status, r.cookie, r.body)
	}
	if strings.Contains(r.body, tok) || !strings.Contains(r.body, `"project":"p1"`) {
		t.Errorf("login answer: %s", r.body)
	}
	session := &http.Cookie{Name: r.cookie.Name, Value: r.cookie.Value}
	csrf := csrfOf(t, r.body)
	if r := do(t, srv, "GET", "/v1/nodes", "", session); r.status != 200 || r.body != "u-1|p1" {
		t.Errorf("read: %d %s", r.status, r.body)
	}
	if r := do(t, srv, "PUT", "/v1/nodes/x/states/power", `{}`, session, auth.CSRFHeader, csrf); r.status != 403 {
		t.Errorf("a reader's write through the session: %d", r.status)
	}
	if r := do(t, srv, "GET", sessionPath, "", session); !strings.Contains(r.body, `"authenticated":true`) || !strings.Contains(r.body, csrf) {
		t.Errorf("who am I: %s", r.body)
	}
}

// TestSessionTTL: a session ends after its life.
func TestSessionTTL(t *testing.T) {
	srv := sessionServer(t, auth.Config{Strategy: auth.HTTPBasic, UserFile: userFile(t, "admin", "x"), SessionTTL: 50 * time.Millisecond})
	r := do(t, srv, "POST", sessionPath, `{"username": "admin", "password": "x"}`, nil)
	if r.status != 200 {
		t.Fatalf("login: %d", r.status)
	}
	session := &http.Cookie{Name: r.cookie.Name, Value: r.cookie.Value}
	deadline := time.Now().Add(10 * time.Second)
	for do(t, srv, "GET", "/v1/nodes", "", session).status == 200 {
		if time.Now().After(deadline) {
			t.Fatal("the session outlived its TTL")
		}
		time.Sleep(10 * time.Millisecond) // a bounded polling loop
	}
}

func TestSessionsNoAuth(t *testing.T) {
	srv := sessionServer(t, auth.Config{Strategy: auth.NoAuth})
	if r := do(t, srv, "GET", sessionPath, "", nil); r.status != 200 || !strings.Contains(r.body, `"authenticated":true`) {
		t.Errorf("noauth: %d %s", r.status, r.body)
	}
}

// TestSessionCookieSecure: under TLS the session cookie is Secure.
func TestSessionCookieSecure(t *testing.T) {
	cfg := auth.Config{Strategy: auth.HTTPBasic, UserFile: userFile(t, "admin", "x"), SessionPath: sessionPath,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h, err := auth.Middleware(t.Context(), http.NotFoundHandler(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	r := do(t, srv, "POST", sessionPath, `{"username": "admin", "password": "x"}`, nil)
	if r.status != 200 || r.cookie == nil || !r.cookie.Secure || !r.cookie.HttpOnly {
		t.Errorf("login under TLS: %d %+v", r.status, r.cookie)
	}
}

// keptSessions is a SessionStore that remembers every key and record.
type keptSessions struct {
	mu   sync.Mutex
	data map[string][]byte
}

func (k *keptSessions) PutSession(_ context.Context, key string, data []byte, _ time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.data[key] = data
	return nil
}

func (k *keptSessions) GetSession(_ context.Context, key string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d, ok := k.data[key]; ok {
		return d, nil
	}
	return nil, store.ErrNotFound
}

func (k *keptSessions) DeleteSession(_ context.Context, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.data, key)
	return nil
}

// TestSessionsKept: with a SessionStore (the database), a session is kept
// there — under a key that is not the cookie's id, as a record holding
// neither the password, the token, the id nor the CSRF token — and a
// second middleware on the same store (another API process) honours it.
func TestSessionsKept(t *testing.T) {
	iss := authtest.NewIssuer(t)
	for _, c := range []struct {
		cfg    auth.Config
		login  string
		secret string
	}{
		{auth.Config{Strategy: auth.HTTPBasic, UserFile: userFile(t, "admin", "Kept-pw-7")},
			`{"username": "admin", "password": "Kept-pw-7"}`, "Kept-pw-7"},
		{auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}}, "", ""},
	} {
		if c.login == "" {
			c.secret = iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}})
			c.login = `{"token": "` + c.secret + `"}`
		}
		kept := &keptSessions{data: map[string][]byte{}}
		c.cfg.Sessions = kept
		one, other := sessionServer(t, c.cfg), sessionServer(t, c.cfg)
		r := do(t, one, "POST", sessionPath, c.login, nil)
		if r.status != 200 || r.cookie == nil {
			t.Fatalf("%s login: %d %s", c.cfg.Strategy, r.status, r.body)
		}
		csrf := csrfOf(t, r.body)
		if len(kept.data) != 1 {
			t.Fatalf("%s: %d sessions kept, want 1", c.cfg.Strategy, len(kept.data))
		}
		for key, data := range kept.data {
			for _, s := range []string{c.secret, r.cookie.Value, csrf} {
				if key == s || strings.Contains(string(data), s) {
					t.Errorf("%s: the kept session (%s) holds a secret", c.cfg.Strategy, data)
				}
			}
		}
		session := &http.Cookie{Name: r.cookie.Name, Value: r.cookie.Value}
		if r := do(t, other, "GET", "/v1/nodes", "", session); r.status != 200 {
			t.Errorf("%s: the other process with the session: %d %s", c.cfg.Strategy, r.status, r.body)
		}
		if r := do(t, other, "DELETE", sessionPath, "", session, auth.CSRFHeader, csrf); r.status != 204 || len(kept.data) != 0 {
			t.Errorf("%s: logout on the other process: %d, %d kept", c.cfg.Strategy, r.status, len(kept.data))
		}
		if r := do(t, one, "GET", "/v1/nodes", "", session); r.status != 401 {
			t.Errorf("%s: after the logout: %d", c.cfg.Strategy, r.status)
		}
	}
}
