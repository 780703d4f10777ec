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

	"github.com/anvil-metal/anvil/internal/auth"
)

// dialFrom connects to base from the loopback address src (127.0.0.2, ...),
// so that one test plays several client hosts.
func dialFrom(t testing.TB, src, base string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: testTimeout}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// trickle sends a POST's headers and then its body one byte per tick,
// until the server closes the connection or stop is closed.
func trickle(c net.Conn, path string, tick time.Duration, stop <-chan struct{}) {
	_, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"X-OpenStack-Ironic-API-Version: latest\r\nContent-Length: 100000\r\n\r\n{")
	t := time.NewTicker(tick)
	defer t.Stop()
	for err == nil {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		_, err = io.WriteString(c, " ")
	}
}

// TestTricklingBodyCut: a body sent a byte at a time is cut once it falls
// behind the minimum rate, long before ReadTimeout (set beyond the test's
// wait): answered 408 where the handler reads it, and closed whether or
// not anything reads it (a 401 for missing credentials).
func TestTricklingBodyCut(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		basic      bool
		want       int
	}{
		{"heartbeat, public", "/v1/heartbeat/x", false, http.StatusRequestTimeout},
		{"nodes under noauth", "/v1/nodes", false, http.StatusRequestTimeout},
		{"nodes without credentials", "/v1/nodes", true, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveWith(t, func(c *Config) {
				c.Limits = Limits{ReadTimeout: 4 * testTimeout, BodyGrace: 200 * time.Millisecond}
				if tc.basic {
					c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "admin", "Tr1ckle-pw")}
				}
			})
			c := dial(t, s.base)
			stop := make(chan struct{})
			defer close(stop)
			go trickle(c, tc.path, 50*time.Millisecond, stop)
			_ = c.SetReadDeadline(time.Now().Add(testTimeout))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("no answer to a trickling body within %v", testTimeout)
			}
			if err != nil {
				t.Fatalf("answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want || !strings.Contains(string(body), `"error`) {
				t.Fatalf("answer %d %s; want %d with Ironic's error body", resp.StatusCode, body, tc.want)
			}
			closedByServer(t, c, "trickling body")
		})
	}
}

// TestPacedBodyKept: a body that comes steadily above the minimum rate
// is read whole even though it takes longer than the grace.
func TestPacedBodyKept(t *testing.T) {
	s := serveWith(t, func(c *Config) {
		c.Limits = Limits{BodyGrace: 100 * time.Millisecond, MinBodyRate: 64}
	})
	body := `{"driver": "fake-hardware", "name": "paced", "extra": {"pad": "` + strings.Repeat("x", 200) + `"}}`
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < len(body); i += 16 { // 16 bytes per 20 ms: 800 B/s
			_, _ = io.WriteString(pw, body[i:min(i+16, len(body))])
			time.Sleep(20 * time.Millisecond) // pacing the sender, not synchronisation
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/v1/nodes", pr)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("paced body: %d %s", resp.StatusCode, raw)
	}
}

// TestConnectionCaps: one host cannot hold every connection slot. Beyond
// its share of connections a host is answered 429 at once while another
// host is served; and at the cap, connections whose bodies are behind the
// minimum rate are evicted for a new client (the pacing deadline is set
// beyond the test's wait, so eviction alone frees the slot).
func TestConnectionCaps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lim      Limits
		hogs     int
		sources  []string
		hogWants int // status a hog beyond the cap gets, 0: none checked
	}{
		{"per address", Limits{MaxConnectionsPerAddress: 4}, 5, []string{"127.0.0.2"}, http.StatusTooManyRequests},
		{"stalled bodies evicted", Limits{MaxConnections: 4, MaxConnectionsPerAddress: 100,
			BodyGrace: 4 * testTimeout, ReadTimeout: 4 * testTimeout}, 4, []string{"127.0.0.2", "127.0.0.3"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveWith(t, func(c *Config) { c.Limits = tc.lim })
			stop := make(chan struct{})
			defer close(stop)
			var last net.Conn
			for i := range tc.hogs {
				last = dialFrom(t, tc.sources[i%len(tc.sources)], s.base)
				go trickle(last, "/v1/heartbeat/x", time.Hour, stop)
			}
			if tc.hogWants != 0 {
				_ = last.SetReadDeadline(time.Now().Add(testTimeout))
				resp, err := http.ReadResponse(bufio.NewReader(last), nil)
				if err != nil || resp.StatusCode != tc.hogWants {
					t.Fatalf("connection beyond the host's share: %v %v; want %d", resp, err, tc.hogWants)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1/nodes", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("a well-behaved client was not served: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /v1/nodes: %d", resp.StatusCode)
			}
		})
	}
}

// TestPacedBodyDeadline: the deadline grows with the bytes read and never
// passes the whole-read limit.
func TestPacedBodyDeadline(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		n    int64
		want time.Duration
	}{
		{"nothing read", 0, 5 * time.Second},
		{"one second's worth", 1024, 6 * time.Second},
		{"half a second's worth", 512, 5500 * time.Millisecond},
		{"beyond the limit", 1 << 40, 120 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &pacedBody{start: start, grace: 5 * time.Second, rate: 1024, limit: start.Add(120 * time.Second), n: tc.n}
			if got := b.deadline().Sub(start); got != tc.want {
				t.Fatalf("deadline %v after start, want %v", got, tc.want)
			}
		})
	}
}
