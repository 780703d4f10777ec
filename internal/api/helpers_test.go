package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is one API under test with its store and conductor.
type env struct {
	t     testing.TB
	h     http.Handler
	st    eventbus.Publisher
	cond  *testConductor
	clock *testClock
}

const testHost = "anvil.test:6385"

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvOn(t, nil)
}

// newEnvOn is newEnv on the store open opens with the env's clock (nil:
// SQLite in a temporary directory).
func newEnvOn(t testing.TB, open func(now func() time.Time) store.Store) *env {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 12, 2, 12, 16, 3, 434301000, time.UTC)}
	var (
		st eventbus.Publisher
		fc *testConductor
	)
	if open == nil {
		st, fc = newTestBackend(t, "anvil-test", clock.Now)
	} else {
		st, fc = newTestBackendOn(t, open(clock.Now), "anvil-test", clock.Now, nil)
	}
	h := New(Wire(Config{Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, fc))
	return &env{t: t, h: h, st: st, cond: fc, clock: clock}
}

// with returns a copy of e reporting to t (for fuzz targets sharing an env).
func (e *env) with(t testing.TB) *env {
	c := *e
	c.t = t
	return &c
}

// do sends one request; headers are "Name: value" strings. A version
// header of "" sends none.
func (e *env) do(method, path, body string, headers ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://"+testHost+path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		if h == "" {
			continue
		}
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// at returns the version header for 1.minor.
func at(minor int) string { return "X-OpenStack-Ironic-API-Version: " + versionString(minor) }

var latest = "X-OpenStack-Ironic-API-Version: latest"

// decode parses a JSON response body.
func decode(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, rec.Body.String())
	}
	return m
}

// fault parses Ironic's error body and returns faultcode and faultstring.
func faultOf(t testing.TB, rec *httptest.ResponseRecorder) (code, msg string) {
	t.Helper()
	m := decode(t, rec)
	s, ok := m["error_message"].(string)
	if !ok || len(m) != 1 {
		t.Fatalf("not an Ironic error body: %s", rec.Body.String())
	}
	var inner map[string]any
	if err := json.Unmarshal([]byte(s), &inner); err != nil {
		t.Fatalf("error_message is not JSON text: %v: %q", err, s)
	}
	if len(inner) != 3 {
		t.Fatalf("unexpected inner error shape: %v", inner)
	}
	if desc, ok := inner["description"].(string); ok {
		// webob's routing-error document: {"code", "title", "description"}.
		if c, _ := inner["code"].(float64); int(c) != rec.Code || inner["title"] != http.StatusText(rec.Code) {
			t.Fatalf("webob error document with code %v title %v on HTTP %d", inner["code"], inner["title"], rec.Code)
		}
		return "Client", desc
	}
	if inner["debuginfo"] != nil {
		t.Fatalf("unexpected inner error shape: %v", inner)
	}
	code, _ = inner["faultcode"].(string)
	msg, _ = inner["faultstring"].(string)
	return code, msg
}

// mustNode creates a node directly in the store.
func (e *env) mustNode(n *model.Node) *model.Node {
	e.t.Helper()
	if n.Driver == "" {
		n.Driver = fakeDriver
	}
	if n.ProvisionState == "" {
		n.ProvisionState = "enroll"
	}
	if err := e.cond.drivers.Compose(n); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Nodes().CreateNode(context.Background(), n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// createNode creates a node through the API at latest and returns it.
func (e *env) createNode(body string) map[string]any {
	e.t.Helper()
	rec := e.do("POST", "/v1/nodes", body, latest)
	if rec.Code != 201 {
		e.t.Fatalf("create node: %d %s", rec.Code, rec.Body.String())
	}
	return decode(e.t, rec)
}

// nodeFixture is an enrolled fake-hardware node with a secret.
func nodeFixture(name string) *model.Node {
	n := &model.Node{Name: name, Driver: fakeDriver, ProvisionState: "enroll",
		DriverInfo: model.JSON{"ipmi_username": "admin", "ipmi_password": "s3cret-pw"}}
	return n
}
