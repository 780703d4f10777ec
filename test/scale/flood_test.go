package scale

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/pkg/events"
)

// The attacks of issue 21 on a real `anvil serve` (noauth, so that nothing
// but the resource limits stands in the way) on loopback: 2,000
// connections trickling POST bodies a byte every 5 s, and 2,000 event
// streams resuming 6,300 events back that never read, each spread over 100
// loopback addresses (so that the per-address caps alone do not stop
// them), on their own and together. A well-behaved client on 127.0.0.1
// must keep being answered once the attack has connected; its latencies
// and the server's peak RSS are logged (docs/security.md, "Resource
// limits"), not asserted.
const (
	floodConns   = 2000
	floodSources = 100
	floodBacklog = 6300
	// goodTries is how many GET /v1/nodes the well-behaved client sends,
	// paced by goodEvery, each with up to goodRetries attempts of at most
	// goodTimeout.
	goodTries   = 200
	goodEvery   = 50 * time.Millisecond
	goodRetries = 3
	goodTimeout = 10 * time.Second
)

func TestFloods(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the server with 4,000 connections")
	}
	needFiles(t, 3*floodConns+1000)
	for _, tc := range []struct {
		name            string
		stalled, stream bool
	}{
		{"no attack (the baseline on this machine)", false, false},
		{"stalled bodies", true, false},
		{"non-reading streams", false, true},
		{"both", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, proc := testbin.Serve(t, anvilBin, "flood")
			after := preload(t, base)
			good := newGoodClient()
			defer good.CloseIdleConnections()
			// A client of the server before the attack: it holds a
			// keep-alive connection.
			if _, err := good.get(base); err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			t.Cleanup(func() { stop(); wg.Wait() })
			var held atomic.Int64
			for i := range floodConns {
				src := func(block int) string { return fmt.Sprintf("127.0.%d.%d", block, i%floodSources+1) }
				if tc.stalled {
					wg.Add(1)
					go func() { defer wg.Done(); stallBody(ctx, base, src(1), i, &held) }()
				}
				if tc.stream {
					wg.Add(1)
					go func() { defer wg.Done(); sleepyStream(ctx, base, src(2), after, &held) }()
				}
			}
			// Measure under the attack's whole weight: once every attacker
			// has connected (bounded).
			want := int64(0)
			for _, on := range []bool{tc.stalled, tc.stream} {
				if on {
					want += floodConns
				}
			}
			for deadline := time.Now().Add(goodTimeout); held.Load() < want; {
				if time.Now().After(deadline) {
					t.Fatalf("the attack connected %d of %d connections in %v", held.Load(), want, goodTimeout)
				}
				time.Sleep(10 * time.Millisecond) // bounded polling
			}
			lat, fails := good.run(t, base)
			_, hwm, err := testbin.ProcMemory(proc.Cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			stop()
			wg.Wait()
			slowest := slices.Clone(lat)
			slices.SortFunc(slowest, func(a, b sample) int { return cmp.Compare(b.d, a.d) })
			for _, s := range slowest[:5] {
				t.Logf("slow: %v at +%v", s.d, s.at.Round(time.Millisecond))
			}
			slices.SortFunc(lat, func(a, b sample) int { return cmp.Compare(a.d, b.d) })
			q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))].d }
			t.Logf("%s: well-behaved GET /v1/nodes: %d answered, %d attempts failed; p50 %v p99 %v max %v; attack connections opened %d; server peak RSS %d MB",
				tc.name, len(lat), fails, q(0.5), q(0.99), lat[len(lat)-1].d, held.Load(), hwm>>20)
		})
	}
}

// sample is one answered request: its latency, and when it was sent.
type sample struct{ d, at time.Duration }

// needFiles raises the open-file limit to n, or skips (fails under CI).
func needFiles(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max >= n {
		lim.Cur = n
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
			return
		}
	}
	msg := fmt.Sprintf("needs %d open files, ulimit -n allows %d (hard %d)", n, lim.Cur, lim.Max)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// preload creates 10 nodes and toggles their maintenance until more than
// floodBacklog events are kept; it returns the ID floodBacklog events back.
func preload(t *testing.T, base string) uint64 {
	var nodes []string
	for i := range 10 {
		n := testbin.MustCall(t, http.StatusCreated, "POST", base+"/v1/nodes",
			map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("flood-%d", i)}).JSON(t)
		nodes = append(nodes, n["uuid"].(string))
	}
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		go func() {
			var err error
			for i := 0; i < floodBacklog/len(nodes)/2+1 && err == nil; i++ {
				err = call("PUT", base+"/v1/nodes/"+n+"/maintenance", `{"reason": "flood"}`)
				if err == nil {
					err = call("DELETE", base+"/v1/nodes/"+n+"/maintenance", "")
				}
			}
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	last := streamPosition(t, base)
	return last - floodBacklog
}

// call sends one request expecting 202.
func call(method, url, body string) error {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	resp, err := (&http.Client{Timeout: goodTimeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %s %s", method, url, resp.Status, b)
	}
	return nil
}

// streamPosition opens a stream and returns the position of its first
// heartbeat: the last event ID.
func streamPosition(t *testing.T, base string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), goodTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+events.StreamPath, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			n, err := strconv.ParseUint(id, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no position on the stream: %v", sc.Err())
	return 0
}

// dialFrom connects from the loopback address src; held counts successes.
func dialFrom(ctx context.Context, base, src string, held *atomic.Int64) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(base, "http://"))
	if err == nil {
		held.Add(1)
	}
	return c, err
}

// stallBody keeps a connection trickling a POST body (a byte every 5 s,
// to the public heartbeat or to /v1/nodes) open until ctx ends,
// reconnecting whenever the server cuts it.
func stallBody(ctx context.Context, base, src string, i int, held *atomic.Int64) {
	path := "/v1/heartbeat/x"
	if i%2 == 1 {
		path = "/v1/nodes"
	}
	for ctx.Err() == nil {
		c, err := dialFrom(ctx, base, src, held)
		if err != nil {
			_ = clock.Sleep(ctx, time.Second)
			continue
		}
		go func() { <-ctx.Done(); c.Close() }()
		_, err = io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100000\r\n\r\n{")
		// A reader notices the server closing (its answer is discarded).
		closed := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, c); close(closed) }()
		tick := time.NewTicker(5 * time.Second)
		for err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-closed:
				err = io.EOF
			case <-tick.C:
				_, err = io.WriteString(c, " ")
			}
		}
		tick.Stop()
		c.Close()
		_ = clock.Sleep(ctx, 200*time.Millisecond) // a reconnecting attacker
	}
}

// sleepyStream opens an event stream resuming after `after` and never
// reads it, with a small receive buffer so the server's writes block soon.
func sleepyStream(ctx context.Context, base, src string, after uint64, held *atomic.Int64) {
	c, err := dialFrom(ctx, base, src, held)
	if err != nil {
		return
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	_, _ = io.WriteString(c, "GET "+events.StreamPath+" HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: "+
		strconv.FormatUint(after, 10)+"\r\n\r\n")
	<-ctx.Done()
}

// goodClient is the well-behaved client: one keep-alive connection from
// 127.0.0.1.
type goodClient struct{ *http.Client }

func newGoodClient() goodClient {
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}).DialContext,
		MaxIdleConnsPerHost: 1}
	return goodClient{&http.Client{Transport: tr, Timeout: goodTimeout}}
}

// get sends one GET /v1/nodes and returns the status.
func (g goodClient) get(base string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/nodes", nil)
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	resp, err := g.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("GET /v1/nodes: %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// run sends goodTries GET /v1/nodes, paced by goodEvery, each retried up
// to goodRetries times; it returns the latency of each (retries included)
// and the failed attempts. It fails the test if a request is not answered
// 200 within its attempts.
func (g goodClient) run(t *testing.T, base string) ([]sample, int) {
	// The tries span the first cut of the stalled bodies (5 to 7.5 s
	// after they connected).
	tick := time.NewTicker(goodEvery)
	defer tick.Stop()
	var lat []sample
	fails := 0
	begin := time.Now()
	for i := range goodTries {
		<-tick.C
		start := time.Now()
		var err error
		for range goodRetries {
			if _, err = g.get(base); err == nil {
				break
			}
			fails++
		}
		if err != nil {
			t.Fatalf("GET /v1/nodes %d not answered in %d attempts: %v", i, goodRetries, err)
		}
		lat = append(lat, sample{d: time.Since(start), at: start.Sub(begin)})
	}
	return lat, fails
}
