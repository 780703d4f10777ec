package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/store"
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
// asks for a login without an error. Sessions are kept in
// Config.Sessions — the database, so that every API process sharing it
// knows them and they outlive a restart — as records of who and until
// when, under the SHA-256 of the cookie's id; the CSRF token is derived
// from the id, so it is never stored. Without Config.Sessions they live in
// this process's memory.

// Session cookie and header names.
const (
	SessionCookie = "anvil_session"
	CSRFHeader    = "X-Anvil-CSRF"
)

// DefaultSessionTTL is a session's life unless Config.SessionTTL says.
const DefaultSessionTTL = 8 * time.Hour

// SessionStore keeps sessions by key (the hex SHA-256 of the cookie's id):
// data is a JSON record of who and until when, never a credential.
// store.SessionStore satisfies it; GetSession fails for an unknown or
// expired key.
type SessionStore interface {
	PutSession(ctx context.Context, key string, data []byte, expires time.Time) error
	GetSession(ctx context.Context, key string) ([]byte, error)
	DeleteSession(ctx context.Context, key string) error
}

// session is a live session: the grant its login proved and its end.
type session struct {
	g       grant
	csrf    string
	expires time.Time
}

// sessionRecord is a session as a SessionStore keeps it.
type sessionRecord struct {
	User    string    `json:"user"`
	Project string    `json:"project,omitempty"`
	Roles   []string  `json:"roles,omitempty"`
	Until   time.Time `json:"until,omitzero"`  // the token's expiry
	Entry   string    `json:"entry,omitempty"` // http_basic: entrySum of the user's entry
	Expires time.Time `json:"expires"`
}

type sessions struct {
	strategy string
	verify   func(*http.Request) (grant, int, string)
	holds    func(grant) bool // nil: a grant holds until it ends
	ttl      time.Duration
	log      *slog.Logger
	db       SessionStore
}

func newSessions(cfg Config, check func(*http.Request) (grant, int, string), holds func(grant) bool) *sessions {
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	db := cfg.Sessions
	if db == nil {
		db = &memSessions{m: map[string]memSession{}}
	}
	return &sessions{strategy: cfg.Strategy, verify: check, holds: holds, ttl: ttl, log: cfg.Log, db: db}
}

// sessionKey is the key a cookie's id is kept under.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// csrfToken is the session's CSRF token: derived from its id (so no process
// needs to store it), and telling nothing of the id.
func csrfToken(id string) string {
	sum := sha256.Sum256([]byte("anvil dashboard csrf\x00" + id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
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
		if err := s.db.DeleteSession(r.Context(), key); err != nil {
			s.log.Error("dashboard logout: the session could not be ended", "err", err)
			writeAuthError(w, http.StatusServiceUnavailable, "The session could not be ended: try again", "")
			return
		}
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
	id := randomToken()
	ss := &session{g: g, csrf: csrfToken(id), expires: time.Now().Add(s.ttl).UTC()}
	if !g.until.IsZero() && g.until.Before(ss.expires) {
		ss.expires = g.until
	}
	rec, _ := json.Marshal(sessionRecord{User: g.who.User, Project: g.who.Project, Roles: g.who.Roles,
		Until: g.until, Entry: g.entry, Expires: ss.expires})
	if err := s.db.PutSession(r.Context(), sessionKey(id), rec, ss.expires); err != nil {
		s.log.Error("dashboard login: the session could not be kept", "err", err)
		writeAuthError(w, http.StatusServiceUnavailable, "The session could not be kept: try again", "")
		return
	}
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

// lookup returns r's live session and its key, or nil. A session whose
// grant no longer holds (its http_basic entry changed) is ended.
func (s *sessions) lookup(r *http.Request) (*session, string) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, ""
	}
	ss, key, _ := s.byID(r.Context(), c.Value)
	return ss, key
}

// byID returns the live session of cookie value id and its key, or nil;
// failed is set when the store could not answer (the session may live).
func (s *sessions) byID(ctx context.Context, id string) (_ *session, key string, failed bool) {
	key = sessionKey(id)
	data, err := s.db.GetSession(ctx, key)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Error("dashboard session: could not be read", "err", err)
			return nil, key, true
		}
		return nil, key, false
	}
	var rec sessionRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		s.log.Error("dashboard session: unreadable record", "err", err)
		return nil, key, false
	}
	ss := &session{g: grant{who: Principal{User: rec.User, Project: rec.Project, Roles: rec.Roles}, until: rec.Until, entry: rec.Entry},
		csrf: csrfToken(id), expires: rec.Expires}
	if time.Now().After(ss.expires) || s.holds != nil && !s.holds(ss.g) {
		_ = s.db.DeleteSession(ctx, key)
		return nil, key, false
	}
	return ss, key, false
}

// stillLive is a request's re-check of its session (see StillValid).
func (s *sessions) stillLive(id string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		ss, _, failed := s.byID(ctx, id)
		return ss != nil || failed
	}
}

// check authenticates r by its session cookie; fromSession is false when
// r has none (the strategy then checks it as any request).
func (s *sessions) check(r *http.Request) (g grant, status int, msg string, fromSession bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
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
	g = ss.g
	g.until = ss.expires // the request's credential lasts as long as the session
	g.live = s.stillLive(c.Value)
	return g, status, msg, true
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

// maxSessions bounds the sessions kept in memory; the one ending soonest
// makes room.
const maxSessions = 10000

// memSessions is the SessionStore of a process without Config.Sessions.
type memSessions struct {
	mu sync.Mutex
	m  map[string]memSession
}

type memSession struct {
	data    []byte
	expires time.Time
}

func (m *memSessions) PutSession(_ context.Context, key string, data []byte, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if len(m.m) >= maxSessions {
		var soonest string
		var first *memSession
		for k, v := range m.m {
			if !v.expires.After(now) {
				delete(m.m, k)
			} else if first == nil || v.expires.Before(first.expires) {
				soonest, first = k, &v
			}
		}
		if len(m.m) >= maxSessions {
			delete(m.m, soonest)
		}
	}
	m.m[key] = memSession{data: data, expires: expires}
	return nil
}

func (m *memSessions) GetSession(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	if !ok || !v.expires.After(time.Now()) {
		delete(m.m, key)
		return nil, store.ErrNotFound
	}
	return v.data, nil
}

func (m *memSessions) DeleteSession(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
	return nil
}
