package bench

// The four figures of the performance issue, each next to Ironic 21.4's on
// the same kind of machine (2 cores, SQLite, fake hardware):
//
//	BenchmarkCreateNodes        nodes/s         Ironic 47/s       target >= 2,000/s
//	BenchmarkListDetail1000     ms/list         Ironic 711 ms     target <= 15 ms
//	BenchmarkEnrollToActive200  s/200nodes      Ironic 59 s       target <= 1 s
//	BenchmarkRSS10000Nodes      MiB-RSS         Ironic 134-152    target <= 40 MiB
//
// ns/op is each benchmark's own operation (one create, one list, one batch of
// 200 lifecycles, one load + full listing of 10,000 nodes); B/op and
// allocs/op are the client's, not the server's. srv-cpu-ms/op, srv-cores and
// client-cores (from /proc) tell a CPU-bound server from a waiting one.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"

	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	createClients    = 16  // concurrent clients of BenchmarkCreateNodes and of loads
	lifecycleWorkers = 32  // nodes moved through their lifecycle at once
	lifecycleNodes   = 200 // nodes per BenchmarkEnrollToActive200 iteration
	// transitionsPerNode: enroll→verifying→manageable (manage),
	// manageable→cleaning→available (provide), available→deploying→active
	// (deploy) — fake-hardware neither waits for a call-back nor holds.
	transitionsPerNode = 6
	rssNodes           = 10000
	// slowPut: a provision PUT this slow waited on something (e.g. the
	// server retrying a node lock), it did not work that long.
	slowPut = 250 * time.Millisecond
)

// BenchmarkCreateNodes: b.N POST /v1/nodes (fake-hardware, unique name) from
// 16 concurrent keep-alive clients. Ironic 21.4: 47 nodes/s; target ≥ 2,000.
func BenchmarkCreateNodes(b *testing.B) {
	s := serverFor(b, "create", nil)
	r503 := retries503.Load()
	b.ResetTimer()
	var m cpuMeter
	m.start(s)
	err := s.createMany(b.N, createClients)
	m.stop()
	b.StopTimer()
	if err != nil {
		b.Fatalf("%v\n%s", err, s.logTail())
	}
	b.ReportMetric(float64(b.N)/m.wall.Seconds(), "nodes/s")
	m.report(b)
	b.ReportMetric(float64(retries503.Load()-r503)/float64(b.N), "503s/op")
}

// BenchmarkListDetail1000: with 1,000 nodes stored, each iteration is one
// GET /v1/nodes/detail?limit=1000 answered with all 1,000 full node objects,
// body read to the end. Ironic 21.4: 711 ms; target ≤ 15 ms.
func BenchmarkListDetail1000(b *testing.B) {
	s := serverFor(b, "list-detail", func(s *server) { s.loadNodes(b, 1000, createClients) })
	benchListDetail1000(b, s)
}

// benchListDetail1000 times GET /v1/nodes/detail?limit=1000 on s, which
// holds at least 1,000 nodes.
func benchListDetail1000(b *testing.B, s *server) {
	const n = 1000
	ctx := context.Background()
	const path = "/v1/nodes/detail?limit=1000"

	// Check once, untimed, that the answer really is 1,000 full nodes.
	status, body, err := s.do(ctx, "GET", path, nil)
	if err != nil || status != http.StatusOK {
		b.Fatalf("GET %s: %d %v %.500s", path, status, err, body)
	}
	var page nodeList
	if err := json.Unmarshal(body, &page); err != nil {
		b.Fatalf("GET %s: %v", path, err)
	}
	if len(page.Nodes) != n {
		b.Fatalf("GET %s returned %d nodes, want %d", path, len(page.Nodes), n)
	}
	if !bytes.Contains(body, []byte(`"driver_info"`)) || !bytes.Contains(body, []byte(`"provision_state"`)) {
		b.Fatalf("GET %s: nodes are not detailed: %.300s", path, body)
	}
	size := len(body)
	b.SetBytes(int64(size))

	var buf bytes.Buffer
	b.ResetTimer()
	var m cpuMeter
	m.start(s)
	for range b.N {
		got, err := s.getInto(ctx, path, &buf)
		if err != nil {
			b.Fatal(err)
		}
		// Same node set, so the size may differ only by a few bytes (timestamps).
		if got < size*9/10 {
			b.Fatalf("GET %s: %d bytes, the checked answer had %d", path, got, size)
		}
	}
	m.stop()
	b.StopTimer()
	b.ReportMetric(ms(m.wall)/float64(b.N), "ms/list")
	m.report(b)
	b.ReportMetric(float64(size)/1024, "KiB/list")
}

// getInto GETs path into buf (reused) and returns the body size.
func (s *server) getInto(ctx context.Context, path string, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", apiVersion)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %.500s", path, resp.StatusCode, buf.Bytes())
	}
	return buf.Len(), nil
}

// BenchmarkEnrollToActive200: each iteration creates 200 fresh nodes
// (untimed), then times manage → provide → deploy of all 200, 32 at a time,
// until every one is active. Ironic 21.4: 59 s (20 transitions/s); target ≤ 1 s.
func BenchmarkEnrollToActive200(b *testing.B) {
	s := serverFor(b, "enroll-to-active", nil)
	r503, r409 := retries503.Load(), retries409.Load()
	var m cpuMeter
	var puts []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		uuids := s.loadNodes(b, lifecycleNodes, createClients)
		b.StartTimer()
		m.start(s)
		lat, err := s.lifecycle(uuids, lifecycleWorkers)
		m.stop()
		puts = append(puts, lat...)
		if err != nil {
			b.Fatalf("%v\n%s", err, s.logTail())
		}
	}
	b.StopTimer()
	b.ReportMetric(m.wall.Seconds()/float64(b.N), "s/200nodes")
	b.ReportMetric(float64(b.N*lifecycleNodes*transitionsPerNode)/m.wall.Seconds(), "transitions/s")
	m.report(b)
	// Latency of the PUT .../states/provision calls (accepted ones, with
	// retries): a long tail here is the server waiting, not working.
	slices.Sort(puts)
	b.ReportMetric(ms(puts[len(puts)/2]), "put-p50-ms")
	b.ReportMetric(ms(puts[len(puts)*99/100]), "put-p99-ms")
	b.ReportMetric(ms(puts[len(puts)-1]), "put-max-ms")
	slow := len(puts) - sort.Search(len(puts), func(i int) bool { return puts[i] >= slowPut })
	b.ReportMetric(float64(slow)/float64(b.N), "slow-puts/op")
	b.ReportMetric(float64(retries409.Load()-r409)/float64(b.N), "409s/op")
	b.ReportMetric(float64(retries503.Load()-r503)/float64(b.N), "503s/op")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lifecycle moves every node enroll → manageable → available → active with
// `workers` nodes in flight, each waiting for the stable state before its
// next verb, as a client must. It returns how long each verb's PUT took
// (until 202, retries included).
func (s *server) lifecycle(uuids []string, workers int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	steps := []struct{ verb, want string }{
		{"manage", "manageable"},
		{"provide", "available"},
		{"active", "active"},
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	lat := make([]time.Duration, len(uuids)*len(steps))
	for range min(workers, len(uuids)) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(uuids)) {
					return
				}
				for j, st := range steps {
					t0 := time.Now()
					err := s.provision(ctx, uuids[i], st.verb)
					lat[int(i)*len(steps)+j] = time.Since(t0)
					if err == nil {
						err = s.waitState(ctx, uuids[i], st.want)
					}
					if err != nil {
						errOnce.Do(func() { firstErr = err; cancel() })
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return lat, firstErr
}

// provision sends PUT /v1/nodes/{uuid}/states/provision {"target": verb}:
// 202 is success; 409 "locked" (the previous operation is still releasing
// the node) and 503 (worker pool full) are retried after a short pause.
func (s *server) provision(ctx context.Context, uuid, verb string) error {
	path := "/v1/nodes/" + uuid + "/states/provision"
	req := map[string]string{"target": verb}
	for {
		status, body, err := s.do(ctx, "PUT", path, req)
		if err != nil {
			return fmt.Errorf("PUT %s %s: %w", path, verb, err)
		}
		switch {
		case status == http.StatusAccepted:
			return nil
		case status == http.StatusServiceUnavailable:
			retries503.Add(1)
		case status == http.StatusConflict && bytes.Contains(body, []byte("locked")):
			retries409.Add(1)
		default:
			return fmt.Errorf("PUT %s %s: %d %.500s", path, verb, status, body)
		}
		if err := clock.Sleep(ctx, retryPause); err != nil {
			return fmt.Errorf("PUT %s %s: still %d: %w", path, verb, status, err)
		}
	}
}

// waitState polls GET /v1/nodes/{uuid}?fields=provision_state,last_error
// (from 250 µs up to every 8 ms) until the node reaches want, and fails if it
// lands in another stable or a failure state.
func (s *server) waitState(ctx context.Context, uuid, want string) error {
	path := "/v1/nodes/" + uuid + "?fields=provision_state,last_error"
	wait := 250 * time.Microsecond
	for {
		status, body, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("GET %s: %d %.500s", path, status, body)
		}
		var n node
		if err := json.Unmarshal(body, &n); err != nil {
			return fmt.Errorf("GET %s: %w: %.300s", path, err, body)
		}
		st := n.ProvisionState
		if st == want {
			return nil
		}
		if st == "error" || strings.HasSuffix(st, " failed") || isStable(st) {
			lastErr := ""
			if n.LastError != nil {
				lastErr = *n.LastError
			}
			return fmt.Errorf("node %s is %q, waiting for %q; last_error: %s", uuid, st, want, lastErr)
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("node %s still %q, waiting for %q: %w", uuid, st, want, err)
		}
		wait = min(2*wait, 8*time.Millisecond)
	}
}

func isStable(state string) bool {
	switch state {
	case "enroll", "manageable", "available", "active":
		return true
	}
	return false
}

// BenchmarkRSS10000Nodes: each iteration starts a fresh server, loads 10,000
// nodes through the API (16 concurrent clients), lists them all once with
// GET /v1/nodes/detail (1,000 per page, following "next"), then reads the
// server's VmRSS and VmHWM (peak) from /proc/PID/status. ns/op is load +
// listing. Ironic 21.4: 134–152 MiB; target ≤ 40 MiB.
func BenchmarkRSS10000Nodes(b *testing.B) {
	if _, _, err := testbin.ProcMemory(1); err != nil {
		b.Skip(err)
	}
	ctx := context.Background()
	var rss, hwm, rssLoaded int64
	var load, list time.Duration
	var size int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := freshServer(b, "rss-10000")
		b.StartTimer()
		t0 := time.Now()
		s.loadNodes(b, rssNodes, createClients)
		load += time.Since(t0)
		r, _, err := testbin.ProcMemory(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		rssLoaded += r
		t0 = time.Now()
		n, nb, err := s.listAll(ctx)
		list += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if n != rssNodes {
			b.Fatalf("listing all pages returned %d nodes, want %d", n, rssNodes)
		}
		size = nb
		r, h, err := testbin.ProcMemory(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		rss += r
		hwm += h
	}
	b.StopTimer()
	perN := func(v int64) float64 { return float64(v) / float64(b.N) / (1 << 20) }
	b.ReportMetric(perN(rss), "MiB-RSS")
	b.ReportMetric(perN(hwm), "MiB-peak")
	b.ReportMetric(perN(rssLoaded), "MiB-RSS-before-list")
	b.ReportMetric(float64(size)/(1<<20), "MiB-listed")
	b.ReportMetric(float64(b.N*rssNodes)/load.Seconds(), "load-nodes/s")
	b.ReportMetric(ms(list)/float64(b.N), "ms/list-all")
}

// cpuMeter adds up wall time and the CPU time of the server and of this
// (client) process over the measured parts of a benchmark.
type cpuMeter struct {
	s              *server
	t0             time.Time
	srv0, cli0     time.Duration
	wall, srv, cli time.Duration
	unavailable    bool
}

func (m *cpuMeter) start(s *server) {
	m.s = s
	var err1, err2 error
	m.srv0, err1 = testbin.ProcCPU(s.pid())
	m.cli0, err2 = testbin.ProcCPU(os.Getpid())
	m.unavailable = m.unavailable || err1 != nil || err2 != nil
	m.t0 = time.Now()
}

func (m *cpuMeter) stop() {
	m.wall += time.Since(m.t0)
	srv, err1 := testbin.ProcCPU(m.s.pid())
	cli, err2 := testbin.ProcCPU(os.Getpid())
	m.unavailable = m.unavailable || err1 != nil || err2 != nil
	m.srv += srv - m.srv0
	m.cli += cli - m.cli0
}

// report gives the server's CPU time per op (10 ms resolution) and the
// average number of cores the server and the benchmark's clients kept busy:
// a server near 2 cores on 2 is CPU-bound; well below, it waits.
func (m *cpuMeter) report(b *testing.B) {
	if m.unavailable || m.wall <= 0 {
		return
	}
	b.ReportMetric(ms(m.srv)/float64(b.N), "srv-cpu-ms/op")
	b.ReportMetric(m.srv.Seconds()/m.wall.Seconds(), "srv-cores")
	b.ReportMetric(m.cli.Seconds()/m.wall.Seconds(), "client-cores")
}
