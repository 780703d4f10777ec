package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/secret"
)

// DefaultAPIVersion is the microversion the CLI asks for unless told
// otherwise: the compatibility contract of Anvil.
const DefaultAPIVersion = "1.89"

// Header names of Ironic's microversion protocol.
const (
	hdrVersion    = "X-OpenStack-Ironic-API-Version"
	hdrMaxVersion = "X-OpenStack-Ironic-API-Maximum-Version"
	hdrRequestID  = "Openstack-Request-Id"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	Endpoint      string        // http://host:6385, with or without /v1
	APIVersion    string        // "1.N" or "latest"; "" means DefaultAPIVersion
	MaxRetries    int           // extra attempts on 409 "locked" and 503
	RetryInterval time.Duration // first pause between attempts
	Timeout       time.Duration // per HTTP request; 0 means 60 s
	Username      string        // HTTP basic auth when set
	Password      string
	Token         string    // sent as X-Auth-Token when set (jwt, keystone)
	Debug         io.Writer // request log, or nil
	// Transport, when set, carries the requests (a CA bundle for https).
	Transport http.RoundTripper
	HTTP      *http.Client
	// Sleep pauses between retries; nil means a context-aware timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client talks to an Ironic-compatible API. It is safe for concurrent use.
type Client struct {
	base     string
	version  string
	pinned   bool // the user chose the version: never downgrade
	cfg      ClientConfig
	http     *http.Client
	sleep    func(ctx context.Context, d time.Duration) error
	versionM chan struct{} // guards version (a one-slot semaphore)
}

// NewClient checks the endpoint and builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.Endpoint), "/")
	base = strings.TrimSuffix(base, "/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid endpoint %q: want http://host:port", cfg.Endpoint)
	}
	c := &Client{base: base, version: cfg.APIVersion, cfg: cfg, http: cfg.HTTP,
		sleep: cfg.Sleep, versionM: make(chan struct{}, 1)}
	if c.version == "" {
		c.version = DefaultAPIVersion
	} else {
		c.pinned = true
		if !strings.EqualFold(c.version, "latest") {
			if _, ok := minorOf(c.version); !ok {
				return nil, fmt.Errorf("invalid API version %q: want 1.N or latest", c.version)
			}
		}
	}
	if c.http == nil {
		t := cfg.Timeout
		if t <= 0 {
			t = 60 * time.Second
		}
		c.http = &http.Client{Timeout: t, Transport: cfg.Transport}
		if cfg.Transport != nil {
			c.cfg.HTTP = &http.Client{Transport: cfg.Transport} // event streams: no timeout
		}
	}
	if c.sleep == nil {
		c.sleep = clock.Sleep
	}
	return c, nil
}

// Endpoint is the API's base URL, without /v1.
func (c *Client) Endpoint() string { return c.base }

// minorOf parses "1.N".
func minorOf(v string) (int, bool) {
	major, minor, ok := strings.Cut(strings.TrimSpace(v), ".")
	if !ok || major != "1" {
		return 0, false
	}
	n, err := strconv.Atoi(minor)
	return n, err == nil && n >= 0
}

// APIError is an error answer of the API: the faultstring of Ironic's
// error body and the HTTP status.
type APIError struct {
	Status    int
	Message   string
	RequestID string // the answer's Openstack-Request-Id, if any

	maxVersion string // the server's X-OpenStack-Ironic-API-Maximum-Version
}

// Error reads as python-ironicclient prints it: "<message> (HTTP <code>)",
// then " (Request-ID: req-...)" when the server named the request.
func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	if e.RequestID != "" {
		msg += " (Request-ID: " + e.RequestID + ")"
	}
	return msg
}

// Locked reports whether the error is Ironic's NodeLocked conflict.
func (e *APIError) Locked() bool {
	return e.Status == http.StatusConflict && strings.Contains(e.Message, " is locked by host ")
}

// retryable reports whether python-ironicclient would retry the answer:
// a node lock held by a conductor, or no free conductor worker. Other
// conflicts (duplicate name, MAC) fail at once: retrying cannot fix them.
func (e *APIError) retryable() bool {
	return e.Locked() || e.Status == http.StatusServiceUnavailable
}

// IsNotFound reports whether err is an HTTP 404 answer.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// parseError turns an error answer into an APIError. Ironic's body is
// {"error_message": "<JSON text with faultstring>"}; anything else is
// shown as it came.
func parseError(status int, body []byte) *APIError {
	var outer struct {
		ErrorMessage json.RawMessage `json:"error_message"`
	}
	msg := ""
	if json.Unmarshal(body, &outer) == nil && len(outer.ErrorMessage) > 0 {
		var s string
		if json.Unmarshal(outer.ErrorMessage, &s) != nil {
			s = string(outer.ErrorMessage) // an object, not a string
		}
		var inner struct {
			Faultstring *string `json:"faultstring"`
		}
		if json.Unmarshal([]byte(s), &inner) == nil && inner.Faultstring != nil {
			msg = *inner.Faultstring
		} else {
			msg = s
		}
	}
	if msg == "" {
		// The authentication middleware's {"error": {"message", "code"}}.
		var auth struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &auth) == nil {
			msg = auth.Error.Message
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if status == http.StatusUnauthorized {
		msg += authHint
	}
	return &APIError{Status: status, Message: msg}
}

// authHint follows a 401: how to give the CLI credentials.
const authHint = ". The API wants credentials: export OS_AUTH_TYPE=http_basic OS_USERNAME=... OS_PASSWORD=... " +
	"(or OS_TOKEN=<bearer token>), or pass --os-auth-type, --os-username, --os-password, --os-token"

// Request is one API call.
type Request struct {
	Method string
	Path   string     // under the endpoint, e.g. /v1/nodes/x
	Query  url.Values // may be nil
	Body   any        // JSON-encoded unless nil
	// MinVersion is the microversion ("1.N") the request needs: a client
	// whose version the user did not pin sends it when its own is lower.
	MinVersion string
}

// Do sends req, retrying locked and busy answers with backoff, and
// decodes a JSON answer into out (when out is not nil). Numbers decode as
// json.Number so they print as the server sent them.
func (c *Client) Do(ctx context.Context, req Request, out any) error {
	var body []byte
	if req.Body != nil {
		b, err := json.Marshal(req.Body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = b
	}
	target := c.base + req.Path
	if len(req.Query) > 0 {
		target += "?" + req.Query.Encode()
	}
	downgraded := false
	for attempt := 0; ; attempt++ {
		data, err := c.once(ctx, req.Method, target, c.versionFor(req.MinVersion), body)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotAcceptable && !downgraded && c.downgrade(ae) {
			downgraded = true
			attempt--
			continue
		}
		if errors.As(err, &ae) && ae.retryable() && attempt < c.cfg.MaxRetries {
			c.debugf("%s; attempt %d of %d", ae, attempt+1, c.cfg.MaxRetries+1)
			if n, ok := ctx.Value(retryCounterKey{}).(*int); ok {
				*n++
			}
			if serr := c.sleep(ctx, c.backoff(attempt)); serr != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if out == nil || len(bytes.TrimSpace(data)) == 0 {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return fmt.Errorf("%s %s: undecodable answer: %w", req.Method, req.Path, err)
		}
		return nil
	}
}

type retryCounterKey struct{}

// withRetryCounter makes Do count its retries into n (one goroutine's).
func withRetryCounter(ctx context.Context, n *int) context.Context {
	return context.WithValue(ctx, retryCounterKey{}, n)
}

// backoff is the pause before retry attempt+1: the retry interval,
// doubling up to four times it, with ±25% jitter so a batch of clients
// does not retry in lockstep.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.RetryInterval
	for i := 0; i < attempt && i < 2; i++ {
		d *= 2
	}
	if d <= 0 {
		return 0
	}
	jitter := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	return d + jitter
}

// downgrade lowers the microversion to the server's maximum when the
// server refused ours as too new and the user did not pin it.
func (c *Client) downgrade(ae *APIError) bool {
	if c.pinned || ae.maxVersion == "" {
		return false
	}
	maxMinor, ok := minorOf(ae.maxVersion)
	if !ok {
		return false
	}
	c.versionM <- struct{}{}
	defer func() { <-c.versionM }()
	cur, ok := minorOf(c.version)
	if !ok || cur <= maxMinor {
		return false
	}
	c.version = ae.maxVersion
	return true
}

func (c *Client) currentVersion() string {
	c.versionM <- struct{}{}
	defer func() { <-c.versionM }()
	return c.version
}

// versionFor is the version to send a request needing minVersion with:
// the client's, raised to minVersion unless the user pinned it.
func (c *Client) versionFor(minVersion string) string {
	cur := c.currentVersion()
	need, ok := minorOf(minVersion)
	if !ok || c.pinned {
		return cur
	}
	if have, ok := minorOf(cur); ok && have < need {
		return minVersion
	}
	return cur
}

func (c *Client) once(ctx context.Context, method, target, version string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	hr.Header.Set(hdrVersion, version)
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "anvil-cli")
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.authHeader() {
		hr.Header[k] = v
	}
	c.debugf("REQ: %s %s %s", method, secret.String(target), secret.JSON(body))
	resp, err := c.http.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("unable to establish connection to %s: %w", target, unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, target, err)
	}
	c.debugf("RESP: %d %s", resp.StatusCode, secret.JSON(data))
	if resp.StatusCode >= 400 {
		ae := parseError(resp.StatusCode, data)
		ae.maxVersion = resp.Header.Get(hdrMaxVersion)
		ae.RequestID = resp.Header.Get(hdrRequestID)
		return nil, ae
	}
	return data, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c *Client) debugf(format string, args ...any) {
	if c.cfg.Debug != nil {
		fmt.Fprintf(c.cfg.Debug, format+"\n", args...)
	}
}

// authHeader is the credentials every request carries (API and streams).
func (c *Client) authHeader() http.Header {
	h := http.Header{}
	if c.cfg.Username != "" {
		r := &http.Request{Header: h}
		r.SetBasicAuth(c.cfg.Username, c.cfg.Password)
	}
	if c.cfg.Token != "" {
		h.Set("X-Auth-Token", c.cfg.Token)
	}
	return h
}

// Get fetches path into out.
func (c *Client) Get(ctx context.Context, path string, q url.Values, out any) error {
	return c.Do(ctx, Request{Method: http.MethodGet, Path: path, Query: q}, out)
}

// List fetches every page of a collection (following the "next" links as
// gophercloud and python-ironicclient do) and returns its items; limit > 0
// stops after that many.
func (c *Client) List(ctx context.Context, path, key string, q url.Values, limit int) ([]map[string]any, error) {
	q = cloneValues(q)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var items []map[string]any
	for page := 0; ; page++ {
		var body map[string]any
		if err := c.Get(ctx, path, q, &body); err != nil {
			return nil, err
		}
		raw, _ := body[key].([]any)
		for _, it := range raw {
			if m, ok := it.(map[string]any); ok {
				items = append(items, m)
			}
		}
		if limit > 0 && len(items) >= limit {
			return items[:limit], nil
		}
		next, _ := body["next"].(string)
		if next == "" || len(raw) == 0 || page > 100000 {
			return items, nil
		}
		nu, err := url.Parse(next)
		if err != nil {
			return nil, fmt.Errorf("bad next link %q: %w", next, err)
		}
		nq := nu.Query()
		if limit > 0 {
			nq.Set("limit", strconv.Itoa(limit-len(items)))
		}
		path, q = nextPath(nu.Path), nq
	}
}

// nextPath keeps the /v1/... part of a next link, whatever host it names.
func nextPath(p string) string {
	if i := strings.Index(p, "/v1/"); i >= 0 {
		return p[i:]
	}
	return p
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
