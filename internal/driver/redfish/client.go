package redfish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stmcginnis/gofish/common"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/model"
)

// Errors a call can be classified as (match with errors.Is).
var (
	// ErrAuth: the BMC refused the credentials (HTTP 401 or 403).
	ErrAuth = errors.New("the BMC refused the credentials")
	// ErrUnreachable: no answer (connection refused, reset, timeout, TLS).
	ErrUnreachable = errors.New("the BMC could not be reached")
	// ErrNotFound: the resource (usually the system) does not exist.
	ErrNotFound = errors.New("resource not found on the BMC")
)

// Error is a failed Redfish call. Its text names the BMC, never a password.
type Error struct {
	Method, URL string
	Status      int    // HTTP status, 0 when there was no answer
	Message     string // the BMC's error message, or the transport error
	User        string // the account the call used
	kind        error
}

func (e *Error) Error() string {
	switch e.kind {
	case ErrAuth:
		return fmt.Sprintf("Redfish BMC refused the credentials of user %q (HTTP %d on %s %s)", e.User, e.Status, e.Method, e.URL)
	case ErrUnreachable:
		return fmt.Sprintf("Redfish BMC unreachable: %s %s: %s", e.Method, e.URL, e.Message)
	}
	if e.Message == "" {
		return fmt.Sprintf("Redfish call %s %s failed with HTTP %d", e.Method, e.URL, e.Status)
	}
	return fmt.Sprintf("Redfish call %s %s failed with HTTP %d: %s", e.Method, e.URL, e.Status, e.Message)
}

// Unwrap lets errors.Is match ErrAuth, ErrUnreachable or ErrNotFound.
func (e *Error) Unwrap() error { return e.kind }

// retryable reports whether a call may succeed if repeated.
func retryable(status int, err error) bool {
	if err != nil {
		return true
	}
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		http.StatusTooManyRequests:
		return true
	}
	return false
}

// sessionKey identifies a BMC account: at most one session is kept per
// address and user, whatever the password (a changed password replaces the
// session, see session).
type sessionKey struct {
	address, username string
}

// authState is what the driver remembers about a BMC account.
type authState struct {
	token, location string
	basic           bool // use basic auth (auth type auto on a BMC without usable sessions)
	// expired: a session was refused mid-operation; the next login is a
	// re-login, whose failure is final (no fallback to basic, as sushy's
	// SessionOrBasicAuth once a session has worked).
	expired bool
	pwHash  [32]byte // of the password that logged in (never the password itself)
	conn    *conn    // what logged in: where to log out (a session's only)
}

// usable reports whether st can authenticate a request without a login.
func (st authState) usable() bool { return st.basic || st.token != "" }

// conn implements gofish's common.Client for one operation on one BMC: the
// operation's context, bounded retries of transient failures, and basic or
// session authentication with sessions cached per BMC account.
type conn struct {
	ctx  context.Context
	d    *Driver
	in   info
	hc   *http.Client
	base *url.URL
	key  sessionKey
	pw   [32]byte // the password's hash
	// oneTryIfRefused: a refused connection (nothing listens at the BMC's
	// address) is not retried, and a kept connection the BMC closed is
	// dialled again without a wait — for calls that are a courtesy, like
	// a shutdown's logout from a BMC that is gone.
	oneTryIfRefused bool
}

func (d *Driver) conn(ctx context.Context, in info) (*conn, error) {
	hc, err := d.httpClient(in)
	if err != nil {
		return nil, err
	}
	base, _ := url.Parse(in.address)
	return &conn{ctx: ctx, d: d, in: in, hc: hc, base: base,
		key: sessionKey{address: in.address, username: in.username}, pw: sha256.Sum256([]byte(in.password))}, nil
}

// httpClient returns a client for the node's TLS verification setting.
func (d *Driver) httpClient(in info) (*http.Client, error) {
	key := "verify"
	if !in.verify {
		key = "insecure"
	} else if in.caPath != "" {
		key = "ca:" + in.caPath
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[key]; ok {
		return c, nil
	}
	rt := d.cfg.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil // BMC networks are reached directly
		tr.MaxIdleConnsPerHost = 4
		// Idle connections kept across BMCs: http's default (100) makes a
		// fleet of thousands reconnect on nearly every call, and each
		// closed connection holds a loopback port in TIME_WAIT.
		tr.MaxIdleConns = 1024
		tls := &tls.Config{InsecureSkipVerify: !in.verify} //nolint:gosec // the operator's redfish_verify_ca=false
		if in.caPath != "" {
			pool, err := loadCAs(in.caPath)
			if err != nil {
				return nil, err
			}
			tls.RootCAs = pool
		}
		tr.TLSClientConfig = tls
		rt = tr
	}
	c := &http.Client{Transport: rt, Timeout: d.cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	d.clients[key] = c
	return c, nil
}

func loadCAs(path string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			pool.AppendCertsFromPEM(b)
		}
	}
	return pool, nil
}

// resolve turns an @odata.id (a path) into a URL on this BMC; links that
// point elsewhere are refused so a BMC cannot send the driver to other hosts.
func (c *conn) resolve(ref string) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("bad resource link %q: %w", ref, err)
	}
	if u.IsAbs() && u.Host != c.base.Host {
		return "", fmt.Errorf("resource link %q points away from the BMC %s", ref, c.in.address)
	}
	return c.base.ResolveReference(u).String(), nil
}

// do performs one Redfish call with authentication and bounded retries.
func (c *conn) do(method, ref string, body []byte, contentType string, headers map[string]string) (*http.Response, error) {
	target, err := c.resolve(ref)
	if err != nil {
		return nil, err
	}
	return c.send(method, target, body, contentType, headers, true)
}

// send performs one call to target with bounded retries of transient
// failures; authed adds the account's credentials (and re-logs in once when
// a cached session is refused). Unauthenticated calls are the service root
// and the login itself.
func (c *conn) send(method, target string, body []byte, contentType string, headers map[string]string, authed bool) (resp *http.Response, err error) {
	start, attempts := time.Now(), 0
	defer func() { c.record(method, target, start, attempts, err) }()
	var last error
	reauthed := false
	for attempt := 1; ; attempt++ {
		attempts = attempt
		resp, token, err := c.once(method, target, body, contentType, headers, authed)
		var ae *Error
		if errors.As(err, &ae) {
			return nil, ae // logging in failed; login has retried already
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		if err == nil && status >= 200 && status < 300 {
			return resp, nil
		}
		if err != nil && c.ctx.Err() != nil {
			return nil, &Error{Method: method, URL: target, Message: c.ctx.Err().Error(), kind: ErrUnreachable}
		}
		retryAfter := ""
		if resp != nil {
			retryAfter = resp.Header.Get("Retry-After")
		}
		last = c.failure(method, target, resp, err)
		if authed && status == http.StatusUnauthorized && !reauthed && c.dropSession(token) {
			reauthed = true // a cached session expired: log in again, once
			continue
		}
		if !retryable(status, err) || attempt >= c.d.cfg.Attempts || (c.oneTryIfRefused && errors.Is(err, syscall.ECONNREFUSED)) {
			return nil, last
		}
		if c.oneTryIfRefused && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			// A kept connection the BMC has closed fails before the
			// request reaches it: a courtesy call dials again at once
			// (a gone BMC then refuses it, and is asked no more).
			continue
		}
		wait := c.d.retryWait(attempt, status, retryAfter)
		c.d.cfg.Log.Debug("redfish call failed, retrying", "method", method, "url", target, "attempt", attempt, "wait", wait, "err", last)
		if serr := c.d.sleep(c.ctx, wait); serr != nil {
			return nil, last
		}
	}
}

// record adds a call's outcome to the node's BMC calls: "auth" when the
// BMC refused the credentials, "unreachable" when it did not answer.
func (c *conn) record(method, target string, start time.Time, attempts int, err error) {
	if c.d.cfg.Calls == nil || c.in.node == "" {
		return
	}
	path := target
	if u, perr := url.Parse(target); perr == nil {
		path = u.Path
	}
	call := model.BMCCall{Time: start.UTC(), Protocol: "redfish", BMC: c.base.Host, Op: method + " " + path, Attempts: attempts,
		Millis: time.Since(start).Milliseconds()}
	if err != nil {
		call.Error = c.scrub(err.Error())
		switch {
		case errors.Is(err, ErrAuth):
			call.Kind = "auth"
		case errors.Is(err, ErrUnreachable):
			call.Kind = "unreachable"
		}
	}
	c.d.cfg.Calls.AddOrMerge(c.in.node, call, call.MergeInto)
}

// once sends the request a single time; token is the session token it
// carried ("" for basic auth or none).
func (c *conn) once(method, target string, body []byte, contentType string, headers map[string]string, authed bool) (resp *http.Response, token string, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c.ctx, method, target, rd)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OData-Version", "4.0")
	req.Header.Set("User-Agent", "anvil-redfish/1")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		if k != "" {
			req.Header.Set(k, v)
		}
	}
	if authed {
		if err := c.authenticate(req); err != nil {
			return nil, "", err
		}
	}
	release, err := c.d.enter(c.ctx, c.in.address)
	if err != nil {
		return nil, "", err
	}
	resp, err = c.hc.Do(req)
	release()
	return resp, req.Header.Get("X-Auth-Token"), err
}

// failure turns a failed round trip into an *Error (closing the body).
func (c *conn) failure(method, target string, resp *http.Response, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error()
		}
		return &Error{Method: method, URL: target, Message: c.scrub(msg), kind: ErrUnreachable}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Method: method, URL: target, Status: resp.StatusCode, Message: c.scrub(redfishMessage(b)), User: c.in.username}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.kind = ErrAuth
	case http.StatusNotFound:
		e.kind = ErrNotFound
	}
	return e
}

// scrub removes the password from text a BMC or the network sent back.
func (c *conn) scrub(s string) string { return Scrub(s, c.in.password) }

// Scrub replaces every occurrence of secret in s (secrets of 3+ characters).
func Scrub(s, secret string) string {
	if len(secret) < 3 {
		return s
	}
	return strings.ReplaceAll(s, secret, "******")
}

// redfishMessage extracts the message of a Redfish error body.
func redfishMessage(b []byte) string {
	var body struct {
		Error struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Extended []struct {
				Message string `json:"Message"`
			} `json:"@Message.ExtendedInfo"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && (body.Error.Message != "" || len(body.Error.Extended) > 0) {
		msg := body.Error.Message
		for _, x := range body.Error.Extended {
			if x.Message != "" && x.Message != msg {
				msg = strings.TrimSpace(msg + " " + x.Message)
			}
		}
		return msg
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// authenticate adds basic auth or a session token to req.
func (c *conn) authenticate(req *http.Request) error {
	if c.in.username == "" && c.in.password == "" {
		return nil
	}
	if c.in.authType == AuthBasic {
		req.SetBasicAuth(c.in.username, c.in.password)
		return nil
	}
	st, err := c.session()
	if err != nil {
		return err
	}
	if st.basic {
		req.SetBasicAuth(c.in.username, c.in.password)
		return nil
	}
	req.Header.Set("X-Auth-Token", st.token)
	return nil
}

// session returns the cached authentication of this account, logging in if
// needed. Auth type auto follows sushy's SessionOrBasicAuth: a session when
// the service root links a session service and the login succeeds, basic
// auth otherwise — except that an unreachable BMC is an error, and so is a
// refused re-login after a session expired.
func (c *conn) session() (authState, error) {
	c.d.mu.Lock()
	st, ok := c.d.sessions[c.key]
	lock := c.d.logins[c.key]
	if lock == nil {
		lock = &sync.Mutex{}
		c.d.logins[c.key] = lock
	}
	c.d.mu.Unlock()
	if ok && st.usable() && c.current(st) {
		return st, nil
	}
	// one login per account at a time: concurrent calls (gofish reads a
	// collection's members in parallel) wait for it and share the session
	lock.Lock()
	defer lock.Unlock()
	c.d.mu.Lock()
	st, ok = c.d.sessions[c.key]
	c.d.mu.Unlock()
	if ok && st.usable() && c.current(st) {
		return st, nil
	}
	c.d.mu.Lock()
	closed := c.d.closed
	c.d.mu.Unlock()
	if closed && c.in.authType != AuthAuto {
		return authState{}, errShutDown
	}
	if closed {
		return authState{basic: true}, nil // auto: basic auth opens no session
	}
	old := st // a session of the account's former password, to end
	relogin := ok && st.expired
	st, err := c.login(relogin)
	if err != nil {
		return authState{}, err
	}
	st.pwHash = c.pw
	if st.token != "" {
		lc := *c
		lc.ctx = nil // a logout brings its own context
		st.conn = &lc
	}
	c.d.mu.Lock()
	c.d.sessions[c.key] = st
	c.d.mu.Unlock()
	if old.token != "" && old.location != "" {
		c.d.logout(c.ctx, c, old)
	}
	return st, nil
}

// current reports whether st was made with this call's password (basic
// auth always uses the call's own password).
func (c *conn) current(st authState) bool { return st.basic || st.pwHash == c.pw }

// standardSessions is where DSP0266 puts the sessions collection, used by
// auth type session when the service root links none (as sushy does).
const standardSessions = "/redfish/v1/SessionService/Sessions"

// login decides how this account authenticates and, for a session, logs in
// (POST to the sessions collection the service root links).
func (c *conn) login(relogin bool) (authState, error) {
	auto := c.in.authType == AuthAuto
	ref, err := c.sessionsLink()
	if err != nil {
		return authState{}, err
	}
	if ref == "" {
		if auto {
			c.d.cfg.Log.Debug("redfish service root links no session service: using basic auth", "bmc", c.in.address)
			return authState{basic: true}, nil
		}
		ref = standardSessions
	}
	target, err := c.resolve(ref)
	if err != nil {
		return authState{}, err
	}
	payload, _ := json.Marshal(map[string]string{"UserName": c.in.username, "Password": c.in.password})
	resp, err := c.send(http.MethodPost, target, payload, "application/json", nil, false)
	if err == nil {
		resp.Body.Close()
		if tok := resp.Header.Get("X-Auth-Token"); tok != "" {
			return authState{token: tok, location: resp.Header.Get("Location")}, nil
		}
		err = &Error{Method: http.MethodPost, URL: target, Status: resp.StatusCode, User: c.in.username,
			Message: "the login answered no X-Auth-Token", kind: ErrAuth}
	}
	if !auto || relogin || errors.Is(err, ErrUnreachable) {
		return authState{}, err
	}
	c.d.cfg.Log.Warn("redfish session login failed: falling back to basic auth", "bmc", c.in.address, "err", err)
	return authState{basic: true}, nil
}

// sessionsLink reads Links.Sessions of the service root (fetched without
// credentials, as DSP0266 allows): "" when the root links none or will not
// answer without credentials.
func (c *conn) sessionsLink() (string, error) {
	target, _ := c.resolve("/redfish/v1/")
	resp, err := c.send(http.MethodGet, target, nil, "", nil, false)
	if err != nil {
		if errors.Is(err, ErrUnreachable) {
			return "", err
		}
		return "", nil
	}
	defer resp.Body.Close()
	var root struct {
		Links struct {
			Sessions struct {
				ID string `json:"@odata.id"`
			} `json:"Sessions"`
		} `json:"Links"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&root) != nil {
		return "", nil
	}
	return root.Links.Sessions.ID, nil
}

// dropSession marks the session token (that a call carried and the BMC
// refused) expired; it reports whether the call may be tried again with a
// new session (false for basic auth).
func (c *conn) dropSession(token string) bool {
	if token == "" {
		return false
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	st := c.d.sessions[c.key]
	if st.token == token {
		c.d.sessions[c.key] = authState{expired: true}
	}
	return true // expired now, or already renewed by a concurrent call
}

// The common.Client methods gofish calls.

func (c *conn) Get(ref string) (*http.Response, error) { return c.GetWithHeaders(ref, nil) }
func (c *conn) GetWithHeaders(ref string, h map[string]string) (*http.Response, error) {
	return c.do(http.MethodGet, ref, nil, "", h)
}
func (c *conn) Post(ref string, p any) (*http.Response, error) { return c.PostWithHeaders(ref, p, nil) }
func (c *conn) PostWithHeaders(ref string, p any, h map[string]string) (*http.Response, error) {
	return c.withJSON(http.MethodPost, ref, p, h)
}
func (c *conn) PostMultipart(ref string, p map[string]io.Reader) (*http.Response, error) {
	return c.PostMultipartWithHeaders(ref, p, nil)
}
func (c *conn) PostMultipartWithHeaders(ref string, p map[string]io.Reader, h map[string]string) (*http.Response, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, r := range p {
		part, err := w.CreateFormField(k)
		if err != nil {
			return nil, err
		}
		if _, err := io.Copy(part, r); err != nil {
			return nil, err
		}
	}
	w.Close()
	return c.do(http.MethodPost, ref, buf.Bytes(), w.FormDataContentType(), h)
}
func (c *conn) Patch(ref string, p any) (*http.Response, error) {
	return c.PatchWithHeaders(ref, p, nil)
}
func (c *conn) PatchWithHeaders(ref string, p any, h map[string]string) (*http.Response, error) {
	return c.withJSON(http.MethodPatch, ref, p, h)
}
func (c *conn) Put(ref string, p any) (*http.Response, error) { return c.PutWithHeaders(ref, p, nil) }
func (c *conn) PutWithHeaders(ref string, p any, h map[string]string) (*http.Response, error) {
	return c.withJSON(http.MethodPut, ref, p, h)
}
func (c *conn) Delete(ref string) (*http.Response, error) { return c.DeleteWithHeaders(ref, nil) }
func (c *conn) DeleteWithHeaders(ref string, h map[string]string) (*http.Response, error) {
	resp, err := c.do(http.MethodDelete, ref, nil, "", h)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

func (c *conn) withJSON(method, ref string, p any, h map[string]string) (*http.Response, error) {
	var body []byte
	if p != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		body = b
	}
	return c.do(method, ref, body, "application/json", h)
}

var _ common.Client = (*conn)(nil)

// sleep waits d or until ctx ends (Config.Sleep in tests).
func (d *Driver) sleep(ctx context.Context, dur time.Duration) error {
	if d.cfg.Sleep != nil {
		return d.cfg.Sleep(ctx, dur)
	}
	return clock.Sleep(ctx, dur)
}
