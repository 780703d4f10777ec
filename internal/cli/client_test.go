package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ironicError writes Ironic's error body.
func ironicError(w http.ResponseWriter, status int, msg string) {
	inner, _ := json.Marshal(map[string]any{"faultcode": "Client", "faultstring": msg, "debuginfo": nil})
	body, _ := json.Marshal(map[string]string{"error_message": string(inner)})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// testClient builds a client for srv that never really sleeps; sleeps
// records the pauses it was asked for.
func testClient(t *testing.T, srv *httptest.Server, retries int, sleeps *[]time.Duration) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{Endpoint: srv.URL + "/v1/", MaxRetries: retries, RetryInterval: time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if sleeps != nil {
				*sleeps = append(*sleeps, d)
			}
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"ironic body", 404, `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node x could not be found.\", \"debuginfo\": null}"}`,
			"Node x could not be found. (HTTP 404)"},
		{"error_message not JSON inside", 400, `{"error_message": "plain words"}`, "plain words (HTTP 400)"},
		{"not JSON at all", 502, "Bad Gateway\n", "Bad Gateway (HTTP 502)"},
		{"empty body", 503, "", "Service Unavailable (HTTP 503)"},
		{"authentication refused", 401, `{"error": {"message": "Authentication required", "code": 401}}`,
			"Authentication required" + authHint + " (HTTP 401)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseError(tt.status, []byte(tt.body)).Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClientHeadersAndEndpoint(t *testing.T) {
	var gotVersion, gotPath, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotVersion, gotPath = r.Header.Get(hdrVersion), r.URL.Path
		gotAuth = r.Header.Get("Authorization")
		fmt.Fprint(w, `{"uuid": "u", "n": 1.50}`)
	}))
	defer srv.Close()
	c := testClient(t, srv, 0, nil)
	var out map[string]any
	if err := c.Get(t.Context(), "/v1/nodes/a%20b", nil, &out); err != nil {
		t.Fatal(err)
	}
	if gotVersion != DefaultAPIVersion || gotPath != "/v1/nodes/a b" || gotAuth != "" {
		t.Errorf("version %q path %q auth %q", gotVersion, gotPath, gotAuth)
	}
	if n, ok := out["n"].(json.Number); !ok || n.String() != "1.50" {
		t.Errorf("numbers must decode as json.Number, got %#v", out["n"])
	}
	if _, err := NewClient(ClientConfig{Endpoint: "localhost:6385"}); err == nil {
		t.Error("an endpoint without scheme must be refused")
	}
	if _, err := NewClient(ClientConfig{Endpoint: srv.URL, APIVersion: "2.x"}); err == nil {
		t.Error("a malformed version must be refused")
	}
	b, _ := NewClient(ClientConfig{Endpoint: srv.URL, Username: "u", Password: "p"})
	if err := b.Get(t.Context(), "/v1", nil, nil); err != nil || !strings.HasPrefix(gotAuth, "Basic ") {
		t.Errorf("basic auth: err %v, header %q", err, gotAuth)
	}
}

func TestClientRetriesLockedOnly(t *testing.T) {
	tests := []struct {
		name      string
		answers   []func(w http.ResponseWriter)
		retries   int
		wantCalls int
		wantErr   string
		wantPause int
	}{
		{"locked then ok", []func(http.ResponseWriter){
			func(w http.ResponseWriter) {
				ironicError(w, 409, "Node u is locked by host c1, please retry after the current operation is completed.")
			},
			func(w http.ResponseWriter) { w.WriteHeader(202) },
		}, 5, 2, "", 1},
		{"busy then ok", []func(http.ResponseWriter){
			func(w http.ResponseWriter) { ironicError(w, 503, "No free conductor workers available") },
			func(w http.ResponseWriter) { w.WriteHeader(202) },
		}, 5, 2, "", 1},
		{"duplicate is not retried", []func(http.ResponseWriter){
			func(w http.ResponseWriter) { ironicError(w, 409, "A node with name n already exists.") },
		}, 5, 1, "A node with name n already exists. (HTTP 409)", 0},
		{"locked beyond the retries", []func(http.ResponseWriter){
			func(w http.ResponseWriter) { ironicError(w, 409, "Node u is locked by host c1, please retry.") },
		}, 2, 3, "Node u is locked by host c1, please retry. (HTTP 409)", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1)) - 1
				tt.answers[min(n, len(tt.answers)-1)](w)
			}))
			defer srv.Close()
			var pauses []time.Duration
			c := testClient(t, srv, tt.retries, &pauses)
			err := c.Do(t.Context(), Request{Method: "PUT", Path: "/v1/nodes/u/states/provision", Body: map[string]any{"target": "manage"}}, nil)
			if got := errString(err); got != tt.wantErr {
				t.Errorf("error %q, want %q", got, tt.wantErr)
			}
			if int(calls.Load()) != tt.wantCalls || len(pauses) != tt.wantPause {
				t.Errorf("calls %d pauses %v, want %d calls %d pauses", calls.Load(), pauses, tt.wantCalls, tt.wantPause)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	c := &Client{cfg: ClientConfig{RetryInterval: time.Second}}
	for attempt, base := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		for range 20 {
			d := c.backoff(attempt)
			if d < base*3/4 || d > base*5/4 {
				t.Fatalf("backoff(%d) = %s, want %s ±25%%", attempt, d, base)
			}
		}
	}
}

func TestClientDowngradesVersion(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(hdrVersion)
		seen = append(seen, v)
		if v != "1.82" {
			w.Header().Set(hdrMaxVersion, "1.82")
			ironicError(w, 406, "Version 1.89 was requested but the minor version is not supported by this service.")
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	c := testClient(t, srv, 0, nil)
	if err := c.Get(t.Context(), "/v1/nodes", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), "/v1/nodes", nil, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "1.89,1.82,1.82" {
		t.Errorf("versions sent: %v", seen)
	}
	pinned, _ := NewClient(ClientConfig{Endpoint: srv.URL, APIVersion: "1.85"})
	if err := pinned.Get(t.Context(), "/v1/nodes", nil, nil); err == nil || !strings.Contains(err.Error(), "(HTTP 406)") {
		t.Errorf("a pinned version must not be downgraded: %v", err)
	}
}

func TestListFollowsNextLinks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		marker := r.URL.Query().Get("marker")
		limit := r.URL.Query().Get("limit")
		switch marker {
		case "":
			fmt.Fprintf(w, `{"nodes": [{"uuid": "a"}, {"uuid": "b"}], "next": "http://elsewhere/v1/nodes?limit=%s&marker=b&fields=uuid"}`, firstNonEmpty(limit, "2"))
		case "b":
			fmt.Fprint(w, `{"nodes": [{"uuid": "c"}]}`)
		default:
			t.Errorf("unexpected marker %q", marker)
		}
	}))
	defer srv.Close()
	c := testClient(t, srv, 0, nil)
	all, err := c.List(t.Context(), "/v1/nodes", "nodes", nil, 0)
	if err != nil || len(all) != 3 || all[2]["uuid"] != "c" {
		t.Fatalf("List = %v, %v", all, err)
	}
	some, err := c.List(t.Context(), "/v1/nodes", "nodes", nil, 2)
	if err != nil || len(some) != 2 {
		t.Fatalf("List limit 2 = %v, %v", some, err)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := NewClient(ClientConfig{Endpoint: url, Timeout: time.Second})
	err := c.Get(t.Context(), "/v1/nodes", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "unable to establish connection to "+url) {
		t.Errorf("error = %v", err)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		t.Errorf("a connection error is not an API error: %v", ae)
	}
}

func TestErrorCarriesRequestID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Openstack-Request-Id", "req-0123")
		ironicError(w, 404, "Node x could not be found.")
	}))
	defer srv.Close()
	err := testClient(t, srv, 0, nil).Get(t.Context(), "/v1/nodes/x", nil, nil)
	if got, want := errString(err), "Node x could not be found. (HTTP 404) (Request-ID: req-0123)"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// TestDebugLogHidesSecrets: --debug shows requests and answers with every
// secret masked: PATCHed passwords, config drives, tokens, keys, passwords
// inside strings and URLs, in both directions.
func TestDebugLogHidesSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"node": {"uuid": "u1"}, "config": {"agent_token": "RespTok3n",
			"driver_info": {"ipmi_password": "RespPassw0rd", "snmp_priv_key": "RespK3y",
			"kernel_append_params": "nofb password=RespKernel"}}}`)
	}))
	defer srv.Close()
	var debug bytes.Buffer
	c, err := NewClient(ClientConfig{Endpoint: srv.URL + "/v1/", Username: "u", Password: "BasicPassw0rd", Debug: &debug})
	if err != nil {
		t.Fatal(err)
	}
	body := []any{
		map[string]any{"op": "add", "path": "/driver_info/ipmi_password", "value": "PatchPassw0rd"},
		map[string]any{"op": "add", "path": "/instance_info/configdrive", "value": "H4sIConfigDrive"},
		map[string]any{"op": "add", "path": "/driver_info/redfish_address", "value": "https://bmc/?password=QueryPassw0rd"},
		map[string]any{"op": "add", "path": "/extra/bmc", "value": "http://root:UrlPassw0rd@10.0.0.1/"},
		map[string]any{"op": "add", "path": "/rescue_password", "value": map[string]any{"token": "NestedTok3n"}},
	}
	q := url.Values{"password": {"QueryStringPassw0rd"}}
	if err := c.Do(t.Context(), Request{Method: "PATCH", Path: "/v1/nodes/n1", Query: q, Body: body}, nil); err != nil {
		t.Fatal(err)
	}
	out := debug.String()
	for _, s := range []string{"RespTok3n", "RespPassw0rd", "RespK3y", "RespKernel", "BasicPassw0rd", "PatchPassw0rd",
		"H4sIConfigDrive", "QueryPassw0rd", "UrlPassw0rd", "NestedTok3n", "QueryStringPassw0rd"} {
		if strings.Contains(out, s) {
			t.Errorf("--debug shows %s:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "/driver_info/ipmi_password") || !strings.Contains(out, "REQ: PATCH") || !strings.Contains(out, "RESP: 200") {
		t.Errorf("--debug lost what it is for:\n%s", out)
	}
}
