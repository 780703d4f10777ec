package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Sessions are the dashboard's login. A browser's EventSource cannot send
// an Authorization header, and a page should keep no password or token
// where its scripts can read it. So the page logs in once: POST
// Config.SessionPath with the credentials (JSON {"username", "password"}
// under http_basic, {"token"} under jwt) is checked by the same strategy
// as every API request; on success a random session id is set as a
// cookie — HttpOnly (scripts never see it), SameSite=Strict (no other
// site's page sends it), Secure under TLS, Path /, Max-Age the session's
// life — and the answer carries a CSRF token (never the credential).
//
// Requests without an Authorization or X-Auth-Token header present the
// cookie instead. Writes must also carry the CSRF token in CSRFHeader
// (a header no cross-site form can set, and no cross-origin script
// without a CORS grant, which Anvil never gives), and an Origin header,
// when sent, must name this server. A session ends at logout (DELETE),
// after SessionTTL, when its token expires, or when its http_basic user's
// entry changes (password changed, user removed). GET answers who is
// logged in, 200 with "authenticated": false when no one is, so the page
// asks for a login without an error. Sessions live in this process's
// memory: a restart logs everyone out, and several API processes behind
// one address need sticky sessions.

// Session cookie and header names.
const (
	SessionCookie = "anvil_session"
	CSRFHeader    = "X-Anvil-CSRF"
)

// DefaultSessionTTL is a session's life unless Config.SessionTTL says.
const DefaultSessionTTL = 8 * time.Hour

// maxSessions bounds the sessions kept; the one ending soonest makes room.
const maxSessions = 10000

type session struct {
	g       grant
	csrf    string
	expires time.Time
}

type sessions struct {
	strategy string
	verify   func(*http.Request) (grant, int, string)
	ttl      time.Duration
	log      *slog.Logger

	mu sync.Mutex
	m  map[[32]byte]*session // SHA-256 of the cookie's id → session
}

func newSessions(cfg Config, check func(*http.Request) (grant, int, string)) *sessions {
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &sessions{strategy: cfg.Strategy, verify: check, ttl: ttl, log: cfg.Log, m: map[[32]byte]*session{}}
}

// sessionInfo is what GET and POST answer: never the credential.
type sessionInfo struct {
	Strategy      string     `json:"strategy"`
	Authenticated bool       `json:"authenticated"`
	User          string     `json:"user,omitempty"`
	Project       string     `json:"project,omitempty"`
	Roles         []string   `json:"roles,omitempty"`
	CSRFToken     string     `json:"csrf_token,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty"`
}

func (s *sessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		info := sessionInfo{Strategy: s.strategy}
		if ss, _ := s.lookup(r); ss != nil {
			info = s.info(ss)
		}
		writeJSON(w, http.StatusOK, info)
	case http.MethodPost:
		s.login(w, r)
	case http.MethodDelete:
		ss, key := s.lookup(r)
		if ss == nil || !sameOrigin(r) || !validCSRF(r, ss) {
			writeAuthError(w, http.StatusForbidden, "Log out from the dashboard, with its "+CSRFHeader+" header", "")
			return
		}
		s.mu.Lock()
		delete(s.m, key)
		s.mu.Unlock()
		http.SetCookie(w, s.cookie(r, "", -1))
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "DELETE, GET, HEAD, POST")
		writeAuthError(w, http.StatusMethodNotAllowed, "Method not allowed", "")
	}
}

// login checks the posted credentials with the strategy and opens a session.
func (s *sessions) login(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" || !sameOrigin(r) {
		writeAuthError(w, http.StatusBadRequest, "Log in with a JSON body from the dashboard", "")
		return
	}
	var creds struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Token    string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&creds); err != nil {
		writeAuthError(w, http.StatusBadRequest, "The login body is not JSON", "")
		return
	}
	probe := r.Clone(r.Context())
	probe.Method = http.MethodGet // the login itself is no write: a reader may log in
	probe.Header = http.Header{}
	switch s.strategy {
	case HTTPBasic:
		probe.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(creds.Username+":"+creds.Password)))
	case JWT:
		probe.Header.Set("Authorization", "Bearer "+creds.Token)
	}
	g, status, msg := s.verify(probe)
	if status != 0 {
		writeAuthError(w, status, msg, "")
		return
	}
	id, csrf := randomToken(), randomToken()
	ss := &session{g: g, csrf: csrf, expires: time.Now().Add(s.ttl)}
	if !g.until.IsZero() && g.until.Before(ss.expires) {
		ss.expires = g.until
	}
	s.store(sha256.Sum256([]byte(id)), ss)
	http.SetCookie(w, s.cookie(r, id, int(time.Until(ss.expires).Seconds())))
	s.log.Info("dashboard login", "user", truncate(g.who.User), "project", g.who.Project, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, s.info(ss))
}

func (s *sessions) info(ss *session) sessionInfo {
	exp := ss.expires.UTC().Truncate(time.Second)
	return sessionInfo{Strategy: s.strategy, Authenticated: true, User: ss.g.who.User,
		Project: ss.g.who.Project, Roles: ss.g.who.Roles, CSRFToken: ss.csrf, ExpiresAt: &exp}
}

func (s *sessions) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	if maxAge == 0 {
		maxAge = -1 // 0 would mean "for the browser's session": none is unbounded
	}
	return &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}

func (s *sessions) store(key [32]byte, ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if len(s.m) >= maxSessions {
		var soonest [32]byte
		var first *session
		for k, v := range s.m {
			if v.expires.Before(now) {
				delete(s.m, k)
			} else if first == nil || v.expires.Before(first.expires) {
				soonest, first = k, v
			}
		}
		if len(s.m) >= maxSessions {
			delete(s.m, soonest)
		}
	}
	s.m[key] = ss
}

// lookup returns r's live session and its key, or nil.
func (s *sessions) lookup(r *http.Request) (*session, [32]byte) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, [32]byte{}
	}
	key := sha256.Sum256([]byte(c.Value))
	s.mu.Lock()
	ss := s.m[key]
	if ss != nil && (time.Now().After(ss.expires) || ss.g.valid != nil && !ss.g.valid()) {
		delete(s.m, key)
		ss = nil
	}
	s.mu.Unlock()
	return ss, key
}

// check authenticates r by its session cookie; fromSession is false when
// r has none (the strategy then checks it as any request).
func (s *sessions) check(r *http.Request) (g grant, status int, msg string, fromSession bool) {
	if c, err := r.Cookie(SessionCookie); err != nil || c.Value == "" {
		return grant{}, 0, "", false
	}
	ss, _ := s.lookup(r)
	if ss == nil {
		return grant{}, http.StatusUnauthorized, "The session has ended: log in again", true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && (!sameOrigin(r) || !validCSRF(r, ss)) {
		return ss.g, http.StatusForbidden, "A write with the session cookie needs the session's " + CSRFHeader + " header", true
	}
	status, msg = refuseRole(ss.g.who, r.Method, s.strategy == JWT)
	return ss.g, status, msg, true
}

func validCSRF(r *http.Request, ss *session) bool {
	got := r.Header.Get(CSRFHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}

// sameOrigin reports whether r's Origin header, if any, names r's host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// noAuthSessions answers GET path, under noauth, that no login is needed.
func noAuthSessions(h http.Handler, path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			h.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeAuthError(w, http.StatusMethodNotAllowed, "No authentication is configured: nothing to log in to", "")
			return
		}
		writeJSON(w, http.StatusOK, sessionInfo{Strategy: NoAuth, Authenticated: true})
	})
}
