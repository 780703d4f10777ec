package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/pkg/events"
)

// shortLimits makes every timeout short enough to pass within a test.
func shortLimits(c *Config) {
	c.Limits = Limits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxConnections: 4}
}

func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reads c until the server closes it (EOF or reset),
// bounded by testTimeout; it fails if the connection is still open then.
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: connection still open after %v", what, testTimeout)
	}
}

// TestStalledBodyCut: headers and part of a body, then nothing: the server
// closes the connection once ReadTimeout passes.
func TestStalledBodyCut(t *testing.T) {
	s := serveWith(t, shortLimits)
	c := dial(t, s.base)
	_, err := io.WriteString(c, "POST /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"X-OpenStack-Ironic-API-Version: latest\r\nContent-Length: 1000\r\n\r\n{\"driver\": ")
	if err != nil {
		t.Fatal(err)
	}
	closedByServer(t, c, "stalled body")
}

// TestIdleReaped: a keep-alive connection with no further request is closed
// after IdleTimeout.
func TestIdleReaped(t *testing.T) {
	s := serveWith(t, shortLimits)
	c := dial(t, s.base)
	if _, err := io.WriteString(c, "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /v1: %d, close=%v; want 200 kept alive", resp.StatusCode, resp.Close)
	}
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	_, err = io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("idle keep-alive connection never reaped")
	}
}

// TestStalledClientsDoNotStarve: every connection slot taken by a client
// that sends nothing; another client is still served once they are cut.
func TestStalledClientsDoNotStarve(t *testing.T) {
	s := serveWith(t, shortLimits)
	for range 8 { // twice MaxConnections
		c := dial(t, s.base)
		_, _ = io.WriteString(c, "GET /v1 HTTP/1.1\r\n") // headers never end
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a well-behaved client was not served: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1: %d", resp.StatusCode)
	}
}

// TestStreamOutlivesTimeouts: the event stream keeps delivering heartbeats
// well past ReadTimeout and WriteTimeout, which bound ordinary requests.
func TestStreamOutlivesTimeouts(t *testing.T) {
	s := serveWith(t, func(c *Config) {
		shortLimits(c)
		c.Events = eventbus.Config{Heartbeat: 50 * time.Millisecond}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+events.StreamPath, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	start := time.Now()
	beats := 0
	for sc.Scan() && time.Since(start) < 4*300*time.Millisecond {
		if strings.HasPrefix(sc.Text(), ":") || strings.HasPrefix(sc.Text(), "id:") {
			beats++
		}
	}
	if time.Since(start) < 4*300*time.Millisecond {
		t.Fatalf("stream ended after %v (%d lines read): %v", time.Since(start), beats, sc.Err())
	}
}

// TestCapEvictsIdlers: with every connection slot held by an idle
// keep-alive connection or a client that never finishes its headers, a new
// client is served long before the timeouts (set beyond the test's wait)
// would cut them.
func TestCapEvictsIdlers(t *testing.T) {
	for _, kind := range []string{"idle", "silent"} {
		t.Run(kind, func(t *testing.T) {
			s := serveWith(t, func(c *Config) {
				c.Limits = Limits{ReadHeaderTimeout: 2 * testTimeout, IdleTimeout: 2 * testTimeout, MaxConnections: 4}
			})
			for range 4 {
				c := dial(t, s.base)
				if kind == "silent" {
					_, _ = io.WriteString(c, "GET /v1 HTTP/1.1\r\n")
					continue
				}
				_, _ = io.WriteString(c, "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("a new client was not served beside %d %s connections: %v", 4, kind, err)
			}
			resp.Body.Close()
		})
	}
}

// TestCapHolds: connections busy with a request, or just accepted, are not
// evicted; room comes back when one closes.
func TestCapHolds(t *testing.T) {
	l := newConnCap(nil, 2, 0)
	a, b := &net.TCPConn{}, &net.TCPConn{}
	l.conns[a] = &connInfo{state: http.StateActive, since: time.Now().Add(-time.Hour)}
	l.conns[b] = &connInfo{state: http.StateNew, since: time.Now()}
	if l.room() {
		t.Fatal("room made by evicting an active or a fresh connection")
	}
	l.track(a, http.StateClosed)
	if !l.room() {
		t.Fatal("no room after a connection closed")
	}
}
