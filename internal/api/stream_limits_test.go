package api

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/pkg/events"
)

// writeSizes is a ResponseWriter that records the size of each write and
// cancels the request once it has seen the line "id: <last>".
type writeSizes struct {
	h      http.Header
	mu     sync.Mutex
	sizes  []int
	tail   []byte
	last   string
	cancel context.CancelFunc
}

func (w *writeSizes) Header() http.Header { return w.h }
func (w *writeSizes) WriteHeader(int)     {}
func (w *writeSizes) Flush()              {}
func (w *writeSizes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sizes = append(w.sizes, len(p))
	w.tail = append(w.tail, p...)
	if bytes.Contains(w.tail, []byte("id: "+w.last+"\n")) {
		w.cancel()
	}
	if n := len(w.tail); n > 256 { // keep enough to find a line cut across writes
		w.tail = append(w.tail[:0], w.tail[n-256:]...)
	}
	return len(p), nil
}

// TestStreamWritesBounded: a stream resumed 6,300 events back (issue 21)
// writes its backlog a bounded number of bytes at a time, rather than
// encoding all of it into one buffer first, and delivers all of it.
func TestStreamWritesBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int
		back  int
	}{
		{"6,300 back", 7000, 6300},
		{"the whole ring", 10000, 9999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := newStreamEnv(t, eventbus.Config{Buffer: 10000})
			var pub []events.Event
			for i := range tc.total {
				pub = append(pub, se.b.Publish(events.Event{Type: events.TypeUpdated, Node: "n" + strconv.Itoa(i%7),
					Changed: []string{events.FieldProvisionState}, State: &events.NodeState{ProvisionState: "s" + strconv.Itoa(i)}}))
			}
			ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
			defer cancel()
			w := &writeSizes{h: http.Header{}, last: strconv.FormatUint(pub[tc.total-1].ID, 10), cancel: cancel}
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, events.StreamPath, nil)
			req.Header.Set("Last-Event-ID", strconv.FormatUint(pub[tc.total-tc.back-1].ID, 10))
			se.h.ServeHTTP(w, req)
			if ctx.Err() != context.Canceled {
				t.Fatalf("the stream did not deliver its last event (%s) within %v", w.last, streamTimeout)
			}
			largest, total := 0, 0
			for _, n := range w.sizes {
				largest, total = max(largest, n), total+n
			}
			if bound := streamFlushBytes + 4<<10; largest > bound {
				t.Fatalf("a write of %d bytes (of %d in all); want at most %d", largest, total, bound)
			}
		})
	}
}

// htpasswdFile writes a user file of cheap bcrypt entries.
func htpasswdFile(t *testing.T, users ...string) string {
	t.Helper()
	var b strings.Builder
	for _, u := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(u+"-pw"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(u + ":" + string(h) + "\n")
	}
	p := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamsPerClient: one client (a principal, or an address under
// noauth) holds at most MaxStreamsPerClient streams; one more is refused
// 429 with Ironic's error body while other clients are served; and the
// server holds at most MaxStreams (503 beyond).
func TestStreamsPerClient(t *testing.T) {
	type open struct{ from, user string }
	for _, tc := range []struct {
		name  string
		basic bool
		total int    // the server's cap (0: the default)
		held  []open // opened first, all served
		next  open
		want  int
		msg   string
	}{
		{"noauth, same address", false, 0, []open{{"127.0.0.1", ""}, {"127.0.0.1", ""}}, open{"127.0.0.1", ""},
			http.StatusTooManyRequests, "Too many open event streams for this client"},
		{"noauth, another address", false, 0, []open{{"127.0.0.1", ""}, {"127.0.0.1", ""}}, open{"127.0.0.2", ""}, http.StatusOK, ""},
		{"user, another address", true, 0, []open{{"127.0.0.1", "u"}, {"127.0.0.2", "u"}}, open{"127.0.0.3", "u"},
			http.StatusTooManyRequests, "Too many open event streams for this client"},
		{"another user, same address", true, 0, []open{{"127.0.0.1", "u"}, {"127.0.0.1", "u"}}, open{"127.0.0.1", "v"}, http.StatusOK, ""},
		{"server full", false, 3, []open{{"127.0.0.1", ""}, {"127.0.0.2", ""}, {"127.0.0.3", ""}}, open{"127.0.0.4", ""},
			http.StatusServiceUnavailable, "Too many open event streams on this server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := newStreamEnv(t, eventbus.Config{}, func(c *Config) { c.MaxStreamsPerClient, c.MaxStreams = 2, tc.total })
			var h http.Handler = se.h
			if tc.basic {
				var err error
				h, err = auth.Middleware(context.Background(), h, auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswdFile(t, "u", "v")})
				if err != nil {
					t.Fatal(err)
				}
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			t.Cleanup(se.b.Close) // runs first: open streams end
			get := func(o open) (int, string) {
				ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
				t.Cleanup(cancel)
				tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(o.from)}}).DialContext}
				t.Cleanup(tr.CloseIdleConnections)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+events.StreamPath, nil)
				if o.user != "" {
					req.SetBasicAuth(o.user, o.user+"-pw")
				}
				resp, err := (&http.Client{Transport: tr}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				if resp.StatusCode == http.StatusOK {
					return resp.StatusCode, ""
				}
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			for i, o := range tc.held {
				if code, body := get(o); code != http.StatusOK {
					t.Fatalf("stream %d: %d %s", i, code, body)
				}
			}
			code, body := get(tc.next)
			if code != tc.want {
				t.Fatalf("next stream: %d %s; want %d", code, body, tc.want)
			}
			if !strings.Contains(body, tc.msg) || code != http.StatusOK && !strings.Contains(body, "error_message") {
				t.Fatalf("refusal without Ironic's error body: %s", body)
			}
		})
	}
}
