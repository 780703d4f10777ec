package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestLookupMaskedToken: a lookup answering the token masked (Ironic's
// answer when it pregenerated the token for a virtual media boot) uses the
// boot media's ipa-agent-token, as IPA does; without one the lookup fails
// and the agent holds no token.
func TestLookupMaskedToken(t *testing.T) {
	const pregenerated = "0123456789abcdef0123456789abcdef"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var lr ipa.LookupResponse
		lr.Node.UUID = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
		lr.Config.AgentToken = ipa.MaskedToken
		lr.Config.HeartbeatTimeout = 300
		_ = json.NewEncoder(w).Encode(lr)
	}))
	defer api.Close()
	for _, tc := range []struct {
		name, token string
	}{{"with ipa-agent-token", pregenerated}, {"without", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(Config{APIURL: api.URL, Disk: testDisk(t, 1<<20), MACs: []string{"52:54:00:00:00:01"},
				RootDir: t.TempDir(), AgentToken: tc.token})
			if err != nil {
				t.Fatal(err)
			}
			err = a.lookup(t.Context())
			if tc.token == "" {
				if err == nil || !strings.Contains(err.Error(), "ipa-agent-token") || a.currentToken() != "" {
					t.Fatalf("lookup = %v, token %q", err, a.currentToken())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.currentToken(); got != pregenerated {
				t.Fatalf("token %q, want the pregenerated one", got)
			}
		})
	}
}

// closedURL is an http URL on a loopback port where connections are
// refused (testbin.RefusedAddr holds the port while the test runs).
func closedURL(t *testing.T) string { return "http://" + testbin.RefusedAddr(t) }

const ironic404 = `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node could not be found.\", \"debuginfo\": null}"}`

// A failed lookup says in one line which MACs were looked up on which API
// and why: unreachable, no node (404, Ironic's fault string), refused
// (401), another status, no MAC at all; credentials in the URL are not shown.
func TestLookupOnceReasons(t *testing.T) {
	answer := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/lookup" || r.URL.Query().Get("addresses") != "52:54:00:00:00:01,52:54:00:00:00:02" {
				t.Errorf("lookup %s", r.URL)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	macs := []string{"52:54:00:00:00:01", "52:54:00:00:00:02"}
	down := closedURL(t)
	for _, tc := range []struct {
		name, url string
		macs      []string
		status    int
		want      []string
	}{
		{"unreachable", down, macs, 0, []string{"API unreachable", "connection refused"}},
		{"no node", answer(404, ironic404), macs, 404, []string{"HTTP 404: no node has a port with these MACs", "Node could not be found."}},
		{"unauthorized", answer(401, `{"error_message": {"faultstring": "Authentication required"}}`), macs, 401,
			[]string{"HTTP 401: the API refused the lookup", "Authentication required"}},
		{"server error", answer(503, "<html>\n<body>busy\n</body></html>\n"), macs, 503, []string{"HTTP 503: <html> <body>busy </body></html>"}},
		{"credentials in the URL", strings.Replace(down, "http://", "http://admin:pw-SECRET@", 1), macs, 0, []string{"API unreachable"}},
		{"no MAC", down, nil, 0, []string{"no MAC address to look up by"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(Config{APIURL: tc.url, MACs: tc.macs, RootDir: t.TempDir(), Disk: testDisk(t, 1<<20)})
			if err != nil {
				t.Fatal(err)
			}
			err = a.LookupOnce(t.Context())
			var le *LookupError
			if !errors.As(err, &le) {
				t.Fatalf("LookupOnce = %v, want a *LookupError", err)
			}
			msg := err.Error()
			if le.Status != tc.status || strings.Contains(msg, "\n") || strings.Contains(msg, "SECRET") {
				t.Errorf("status %d (want %d), message %q", le.Status, tc.status, msg)
			}
			for _, w := range append(tc.want, redactURL(tc.url), macList(tc.macs)) {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if a.currentToken() != "" {
				t.Error("a failed lookup left a token")
			}
		})
	}
}

// chanHandler is a slog.Handler that sends each record's message and
// attributes, as one string, on a channel.
type chanHandler struct{ c chan string }

func (h chanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h chanHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	select {
	case h.c <- b.String():
	default:
	}
	return nil
}
func (h chanHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h chanHandler) WithGroup(string) slog.Handler      { return h }

// At the default level (info) the running agent logs each failed lookup as
// a warning with the reason, the MACs and the API URL, retries, and says so
// when the node is found.
func TestLookupFailuresLogged(t *testing.T) {
	var mu sync.Mutex
	failures := 3
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/v1/lookup" && failures > 0:
			failures--
			w.WriteHeader(404)
			_, _ = w.Write([]byte(ironic404))
		case r.URL.Path == "/v1/lookup":
			var lr ipa.LookupResponse
			lr.Node.UUID = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
			lr.Config.AgentToken = "0123456789abcdef0123456789abcdef"
			lr.Config.HeartbeatTimeout = 300
			_ = json.NewEncoder(w).Encode(lr)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer api.Close()
	logs := make(chan string, 100)
	a, err := New(Config{APIURL: api.URL, MACs: []string{"52:54:00:00:00:01"}, RootDir: t.TempDir(),
		Disk: testDisk(t, 1<<20), Listen: "127.0.0.1:0", Log: slog.New(chanHandler{logs})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var warned []string
	guard := time.After(60 * time.Second) // a hang guard, not a speed check
	for {
		select {
		case l := <-logs:
			if strings.HasPrefix(l, "WARN lookup failed; retrying") {
				warned = append(warned, l)
			}
			if strings.HasPrefix(l, "INFO lookup succeeded") {
				if len(warned) != 3 || !strings.Contains(l, "attempts=4") {
					t.Fatalf("%d warnings before %q:\n%s", len(warned), l, strings.Join(warned, "\n"))
				}
				for _, w := range []string{"reason=HTTP 404: no node has a port with these MACs", "Node could not be found.",
					"macs=52:54:00:00:00:01", "api_url=" + api.URL, "attempt=1", "retry_in="} {
					if !strings.Contains(warned[0], w) {
						t.Errorf("warning %q lacks %q", warned[0], w)
					}
				}
				return
			}
		case <-guard:
			t.Fatalf("no successful lookup; warnings:\n%s", strings.Join(warned, "\n"))
		}
	}
}

// The back-off doubles up to its bound, each delay drawn in [d/2, d].
func TestLookupBackoff(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999999} {
		b := backoff{next: lookupBackoffMin, max: lookupBackoffMax}
		d := lookupBackoffMin
		for i := 0; i < 20; i++ {
			got := b.delay(r)
			if got < d/2 || got > d {
				t.Fatalf("r=%v step %d: delay %v outside [%v, %v]", r, i, got, d/2, d)
			}
			d = min(2*d, lookupBackoffMax)
		}
		if b.next != lookupBackoffMax {
			t.Errorf("r=%v: after 20 steps the bound is %v, want %v", r, b.next, lookupBackoffMax)
		}
	}
	lo, hi := backoff{next: time.Second, max: time.Second}, backoff{next: time.Second, max: time.Second}
	if lo.delay(0) == hi.delay(0.9) {
		t.Error("the delay does not depend on the draw (no jitter)")
	}
}
