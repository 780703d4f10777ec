package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Strategy names, as Ironic's auth_strategy.
const (
	NoAuth    = "noauth"
	HTTPBasic = "http_basic"
)

// Realm is the WWW-Authenticate challenge Ironic sends.
const Realm = `Basic realm="Baremetal API"`

// Config selects and configures the strategy.
type Config struct {
	Strategy string // NoAuth (or ""), HTTPBasic or JWT
	UserFile string // htpasswd file for HTTPBasic
	JWT      JWTConfig
	// Public reports whether a path is served without credentials; nil
	// uses PublicPath.
	Public func(path string) bool
	// SessionPath, when set, is where a browser logs in and out (see
	// sessions.go): the session cookie it issues is then a credential.
	SessionPath string
	// SessionTTL bounds a session's life (default DefaultSessionTTL; a
	// token's own expiry, if sooner, ends it first).
	SessionTTL time.Duration
	// Sessions keeps the sessions (the database, shared by the API
	// processes); nil keeps them in this process's memory.
	Sessions SessionStore
	Log      *slog.Logger
}

// publicRe is Ironic's acl_public_routes, with its optional .json/.xml
// suffix, matched on the path without trailing slashes.
var publicRe = regexp.MustCompile(`^(|/|/v1|/v1/lookup|/v1/heartbeat/[a-z0-9\-]+|/v1/continue_inspection)(\.json|\.xml)?$`)

// PublicPath reports whether path is one of Ironic's public routes.
func PublicPath(path string) bool {
	return publicRe.MatchString(strings.TrimRight(path, "/"))
}

type principalKey struct{}

// Principal is who a request is from: a user, the roles of its token and,
// for a project-scoped token, its project. http_basic users have no roles
// and no project: they are system administrators, as in Ironic.
type Principal struct {
	User    string
	Project string
	Roles   []string
}

// Scoped reports whether the principal acts for one project only.
func (p Principal) Scoped() bool { return p.Project != "" }

// HasRole reports whether the principal holds role.
func (p Principal) HasRole(role string) bool { return slices.Contains(p.Roles, role) }

// PrincipalOf returns the principal of a request's context; ok is false
// under noauth and on public routes.
func PrincipalOf(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WithPrincipal returns ctx carrying who as the request's authenticated
// principal (the middleware's; also for in-process callers and tests).
func WithPrincipal(ctx context.Context, who Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, who)
}

// User returns the authenticated user of a request's context ("" under
// noauth or on a public route).
func User(ctx context.Context) string {
	p, _ := PrincipalOf(ctx)
	return p.User
}

// Middleware wraps h with the configured strategy; a bad configuration
// (unknown strategy, unreadable or non-bcrypt user file, unreachable
// issuer) is an error. ctx bounds the issuer's discovery.
func Middleware(ctx context.Context, h http.Handler, cfg Config) (http.Handler, error) {
	if cfg.Public == nil {
		cfg.Public = PublicPath
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	var (
		check func(*http.Request) (grant, int, string)
		holds func(grant) bool // whether a session's grant still holds
	)
	challenge := Realm
	switch cfg.Strategy {
	case "", NoAuth:
		if cfg.SessionPath != "" {
			return noAuthSessions(h, cfg.SessionPath), nil
		}
		return h, nil
	case HTTPBasic:
		users := &userFile{path: cfg.UserFile}
		if _, err := users.load(); err != nil {
			return nil, err
		}
		b := newBasic(users, cfg.Log)
		check, holds = b.grant, b.holds
	case JWT:
		j, err := newJWT(ctx, cfg.JWT)
		if err != nil {
			return nil, err
		}
		check, challenge = j.check, `Bearer realm="Baremetal API"`
	default:
		return nil, fmt.Errorf("auth strategy %q: want %s, %s or %s", cfg.Strategy, NoAuth, HTTPBasic, JWT)
	}
	var sess *sessions
	if cfg.SessionPath != "" {
		sess = newSessions(cfg, check, holds)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sess != nil && r.URL.Path == cfg.SessionPath {
			sess.ServeHTTP(w, r)
			return
		}
		if cfg.Public(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		if crossSiteWrite(r) {
			writeAuthError(w, http.StatusForbidden, "A browser may not change anything from another site's page", "")
			return
		}
		var (
			g           grant
			status      int
			msg         string
			fromSession bool
		)
		if sess != nil && !hasCredentials(r) {
			g, status, msg, fromSession = sess.check(r)
		}
		if !fromSession {
			g, status, msg = check(r)
		}
		if status != 0 {
			if status == http.StatusForbidden {
				cfg.Log.Info("access denied", "user", truncate(g.who.User), "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
			}
			if status == http.StatusUnauthorized && (fromSession || fromScript(r)) {
				challenge = "" // no login dialog over the dashboard: it asks itself
			}
			writeAuthError(w, status, msg, challenge)
			return
		}
		ctx := WithPrincipal(r.Context(), g.who)
		if !g.until.IsZero() {
			ctx = context.WithValue(ctx, expiryKey{}, g.until)
		}
		if g.live != nil {
			ctx = context.WithValue(ctx, liveKey{}, g.live)
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	}), nil
}

type expiryKey struct{}

type liveKey struct{}

// StillValid returns, for a request authenticated by a dashboard session,
// a function that reports whether the session still holds (false once it
// was logged out anywhere, expired, or its http_basic entry changed; true
// when the store cannot tell), for what outlives the request. ok is false
// for other credentials.
func StillValid(ctx context.Context) (check func(context.Context) bool, ok bool) {
	check, ok = ctx.Value(liveKey{}).(func(context.Context) bool)
	return check, ok
}

// ExpiryOf returns when the credential that authenticated a request stops
// being valid — a JWT's exp, a dashboard session's end — for what outlives
// the request (a console viewer); ok is false for credentials that do not
// expire (http_basic) and under noauth.
func ExpiryOf(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(expiryKey{}).(time.Time)
	return t, ok
}

// grant is what a credential proves: the principal, until when (a
// token's expiry; zero when the credential has none) and, for http_basic,
// the entrySum of the user's entry it was checked against (a session holds
// while the entry is the same).
type grant struct {
	who   Principal
	until time.Time
	entry string
	live  func(context.Context) bool // a session's re-check (logout ends it), nil for others
}

// hasCredentials reports whether r carries an Authorization or
// X-Auth-Token header: those win over a session cookie.
func hasCredentials(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || r.Header.Get("X-Auth-Token") != ""
}

// crossSiteWrite reports whether a browser sends r, a write, from a page
// of another origin (Fetch Metadata): credentials a browser adds by itself
// (cached Basic credentials, the session cookie) must not act for another
// site's page. Clients that are not browsers send no Sec-Fetch-Site.
func crossSiteWrite(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return false
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site != "" && site != "same-origin" && site != "none"
}

// fromScript reports whether a browser sent r from a script (fetch,
// EventSource) rather than by navigating: a Basic challenge there would
// pop the browser's login dialog over the dashboard.
func fromScript(r *http.Request) bool {
	mode := r.Header.Get("Sec-Fetch-Mode")
	return mode != "" && mode != "navigate"
}

// refuseRole is the roles' rule for a token's principal: admin and member
// may write, reader may only read, none may do nothing. Principals
// without roles (http_basic users) are not tokens' and pass.
func refuseRole(who Principal, method string, fromToken bool) (int, string) {
	switch {
	case !fromToken, who.HasRole(RoleAdmin), who.HasRole(RoleMember):
	case who.HasRole(RoleReader):
		if method != http.MethodGet && method != http.MethodHead {
			return http.StatusForbidden, "The reader role may not change anything"
		}
	default:
		return http.StatusForbidden, "The token has none of the roles admin, member, reader"
	}
	return 0, ""
}

// writeAuthError is Ironic's BasicAuthMiddleware answer.
func writeAuthError(w http.ResponseWriter, status int, msg, challenge string) {
	if status == http.StatusUnauthorized && challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(failureWindow/time.Second)))
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "code": status}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

type basic struct {
	users *userFile
	log   *slog.Logger
	fails *failures // throttle.go
	slots slots     // bcrypt checks running
	now   func() time.Time
	// compare is bcrypt.CompareHashAndPassword (tests count its calls).
	compare func(hash, pass []byte) error
	mu      sync.Mutex
	cache   map[[32]byte]bool // hash of user, password and entry, of a match
	// misses are credentials that failed, kept apart so that guesses
	// cannot evict the matches: a repeated failure is answered without
	// bcrypt and is not a new guess to count.
	misses map[[32]byte]bool
}

func newBasic(users *userFile, log *slog.Logger) *basic {
	return &basic{users: users, log: log, fails: newFailures(), slots: make(slots, bcryptSlots()),
		now: time.Now, compare: bcrypt.CompareHashAndPassword, cache: map[[32]byte]bool{}, misses: map[[32]byte]bool{}}
}

// cacheMax bounds the cache of matches (Ironic's lru_cache maxsize) and
// that of failures, each.
const cacheMax = 256

// grant checks r's credentials; the grant holds while the user's entry
// in the file is the one the password was checked against (holds).
func (b *basic) grant(r *http.Request) (grant, int, string) {
	user, hash, status, msg := b.check(r)
	if status != 0 {
		return grant{}, status, msg
	}
	return grant{who: Principal{User: user}, entry: entrySum(hash)}, 0, ""
}

// holds reports whether g's user still has the entry g was granted on: a
// changed password or a removed user ends the sessions logged in with it.
func (b *basic) holds(g grant) bool {
	entries, err := b.users.load()
	hash, ok := entries[g.who.User]
	return err == nil && ok && g.entry == entrySum(hash)
}

// entrySum identifies a user's htpasswd entry (a bcrypt hash) without
// keeping it: a session record holds this, not the hash.
func entrySum(hash []byte) string {
	sum := sha256.Sum256(append([]byte("anvil htpasswd entry\x00"), hash...))
	return hex.EncodeToString(sum[:])
}

// check returns the user and its entry, or the status and message of the
// refusal.
func (b *basic) check(r *http.Request) (string, []byte, int, string) {
	hdr := r.Header.Get("Authorization")
	if hdr == "" {
		return "", nil, http.StatusUnauthorized, "Authorization required"
	}
	kind, token, ok := strings.Cut(strings.TrimSpace(hdr), " ")
	if !ok {
		return "", nil, http.StatusBadRequest, "Could not parse Authorization header"
	}
	if !strings.EqualFold(kind, "basic") {
		return "", nil, http.StatusBadRequest, fmt.Sprintf("Unsupported authorization type \"%s\"", truncate(kind))
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil {
		return "", nil, http.StatusBadRequest, "Could not decode authorization token"
	}
	user, pass, ok := bytes.Cut(raw, []byte(":"))
	if !ok {
		return "", nil, http.StatusBadRequest, "Could not decode authorization token"
	}
	entries, err := b.users.load()
	if err != nil {
		b.log.Error("auth user file", "err", err)
		return "", nil, http.StatusInternalServerError, "Problem reading auth user file"
	}
	hash, found := entries[string(user)]
	key := credKey(user, pass, hash)
	switch matched, known := b.cached(key); {
	case known && matched && found:
		return string(user), hash, 0, ""
	case known && !matched:
		return "", nil, http.StatusUnauthorized, "Incorrect username or password"
	}
	name, addr, now := string(user), clientAddr(r.RemoteAddr), b.now()
	if b.fails.blocked(name, addr, now) {
		return "", nil, http.StatusTooManyRequests, "Too many failed authentication attempts: retry later"
	}
	ok = false
	if found {
		if !b.slots.acquire(r.Context()) {
			return "", nil, http.StatusServiceUnavailable, "The request ended before its credentials were checked"
		}
		ok = b.compare(hash, pass) == nil
		b.slots.release()
	}
	if !ok {
		if b.fails.fail(name, addr, now) {
			b.log.Warn("authentication failures reached a limit: further attempts refused for a while",
				"user", truncate(name), "remote", r.RemoteAddr, "window", b.fails.window.String())
		}
		b.log.Info("authentication failed", "user", truncate(name), "remote", r.RemoteAddr)
		b.remember(key, false)
		return "", nil, http.StatusUnauthorized, "Incorrect username or password"
	}
	b.fails.succeed(name, addr)
	b.remember(key, true)
	return name, hash, 0, ""
}

// credKey identifies credentials checked against an entry.
func credKey(user, pass, hash []byte) [32]byte {
	h := sha256.New()
	for _, p := range [][]byte{user, pass, hash} {
		h.Write(p)
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// cached reports whether the credentials of key were checked before
// (known) and whether they matched.
func (b *basic) cached(key [32]byte) (matched, known bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache[key] {
		return true, true
	}
	return false, b.misses[key]
}

// remember caches a check's result, a match or a failure, each in its
// own bounded map.
func (b *basic) remember(key [32]byte, matched bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.misses
	if matched {
		m = b.cache
	}
	if len(m) >= cacheMax {
		clear(m)
	}
	m[key] = true
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// userFile is an htpasswd file, re-read when its size or time changes.
type userFile struct {
	path    string
	mu      sync.Mutex
	mod     time.Time
	size    int64
	entries map[string][]byte
}

func (u *userFile) load() (map[string][]byte, error) {
	st, err := os.Stat(u.path)
	if err != nil {
		return nil, fmt.Errorf("auth user file: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.entries != nil && st.ModTime().Equal(u.mod) && st.Size() == u.size {
		return u.entries, nil
	}
	data, err := os.ReadFile(u.path)
	if err != nil {
		return nil, fmt.Errorf("auth user file: %w", err)
	}
	entries, err := ParseHTPasswd(data)
	if err != nil {
		return nil, fmt.Errorf("auth user file %s: %w", u.path, err)
	}
	u.entries, u.mod, u.size = entries, st.ModTime(), st.Size()
	return entries, nil
}

// ParseHTPasswd reads an Apache htpasswd file: "user:hash" lines, bcrypt
// hashes only ($2y$, $2a$, $2b$), as Ironic requires. Blank lines and
// lines without ":" are skipped, as Ironic skips them.
func ParseHTPasswd(data []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		user, hash, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if !strings.HasPrefix(hash, "$2y$") && !strings.HasPrefix(hash, "$2a$") && !strings.HasPrefix(hash, "$2b$") {
			return nil, fmt.Errorf("only bcrypt digested passwords are supported for %s", user)
		}
		if _, dup := out[user]; !dup { // the first entry wins, as Ironic reads
			out[user] = []byte(hash)
		}
	}
	return out, sc.Err()
}
