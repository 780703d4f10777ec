package bench

// The figures at 100,000 nodes (issue 15). Loading that many takes a while,
// so these run only with ANVIL_BENCH_100K=1:
//
//	ANVIL_BENCH_100K=1 go test -run '^$' -bench 100k -benchtime 1x -timeout 60m ./bench/
//
//	BenchmarkCreate100k/store=sqlite    100,000 POST /v1/nodes (16 clients), fresh SQLite
//	BenchmarkCreate100k/store=postgres  the same on a throwaway PostgreSQL (pgtest)
//	BenchmarkListDetail1000At100k       GET /v1/nodes/detail?limit=1000 with 100,000 stored
//	BenchmarkListFieldsAll100k          GET /v1/nodes?fields=uuid,provision_state, all 100 pages
//	BenchmarkMetrics100k                GET /metrics with 100,000 nodes stored
//	BenchmarkRSS100k                    server RSS started on 100,000 nodes, then after a full detail listing
//	BenchmarkRSS100kPowerSync           server RSS after its first power-sync pass over 100,000 nodes
//
// The read benchmarks serve a SQLite file written once per test process
// through the store package (conductor.CreateNode with the server's default
// driver registry, what POST /v1/nodes stores: fake-hardware, a name, enroll)
// — 100,000 creates through HTTP would add a minute or more to each. The
// creates themselves are timed through HTTP by BenchmarkCreate100k, which
// also reports the server's RSS after them.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	fleetNodes = 100_000
	// env100k turns on the benchmarks at 100,000 nodes.
	env100k = "ANVIL_BENCH_100K"
	// pageLimit is the server's largest page ([api]max_limit); limit=0 is
	// Ironic's 400 "Limit must be positive", so a full listing is 100 pages.
	pageLimit = 1000
)

func need100k(b *testing.B) {
	b.Helper()
	if os.Getenv(env100k) != "1" {
		b.Skipf("set %s=1 to run the benchmarks at 100,000 nodes (minutes)", env100k)
	}
}

// BenchmarkCreate100k: each iteration starts a server on an empty database
// and times 100,000 POST /v1/nodes from 16 concurrent keep-alive clients, in
// ten rounds of 10,000 (first- and last-10k-nodes/s tell whether creates slow
// down as the table grows). MiB-RSS-after is the server's VmRSS once they
// are all created, MiB-WAL-after (SQLite) the size of its write-ahead log
// then.
func BenchmarkCreate100k(b *testing.B) {
	need100k(b)
	const rounds = 10
	for _, st := range []string{"sqlite", "postgres"} {
		b.Run("store="+st, func(b *testing.B) {
			var m cpuMeter
			var rss, wal int64
			var first, last time.Duration
			r503 := retries503.Load()
			for range b.N {
				b.StopTimer()
				database := ""
				if st == "postgres" {
					database = pg.URL(b)
				}
				s := freshServerOn(b, "create-100k-"+st, database)
				// Stop the server before pgtest drops its schema.
				b.Cleanup(s.stop)
				b.StartTimer()
				for r := range rounds {
					m.start(s)
					t0 := time.Now()
					err := s.createMany(fleetNodes/rounds, createClients)
					took := time.Since(t0)
					m.stop()
					if err != nil {
						b.Fatalf("%v\n%s", err, s.logTail())
					}
					switch r {
					case 0:
						first += took
					case rounds - 1:
						last += took
					}
				}
				b.StopTimer()
				if r, _, err := testbin.ProcMemory(s.pid()); err == nil {
					rss += r
				}
				if fi, err := os.Stat(filepath.Join(s.dir, "anvil.db-wal")); err == nil {
					wal += fi.Size()
				}
				s.stop()
			}
			b.ReportMetric(float64(b.N*fleetNodes)/m.wall.Seconds(), "nodes/s")
			b.ReportMetric(float64(b.N*fleetNodes/rounds)/first.Seconds(), "first-10k-nodes/s")
			b.ReportMetric(float64(b.N*fleetNodes/rounds)/last.Seconds(), "last-10k-nodes/s")
			m.report(b)
			b.ReportMetric(float64(retries503.Load()-r503)/float64(b.N), "503s/op")
			b.ReportMetric(float64(rss)/float64(b.N)/(1<<20), "MiB-RSS-after")
			if st == "sqlite" {
				b.ReportMetric(float64(wal)/float64(b.N)/(1<<20), "MiB-WAL-after")
			}
		})
	}
}

// The SQLite file holding 100,000 nodes, written once per test process.
var (
	fleetOnce sync.Once
	fleetPath string
	fleetTook time.Duration
	fleetErr  error
)

// fleetDB returns the path of the shared 100,000-node SQLite file. Servers
// open it one at a time (curSrv); none changes its nodes (the fake driver
// reports the power state a node has, so power sync writes nothing).
func fleetDB(b *testing.B) string {
	b.Helper()
	need100k(b)
	fleetOnce.Do(func() {
		fleetPath = filepath.Join(workDir, "fleet-100k.db")
		t0 := time.Now()
		fleetErr = writeFleet(context.Background(), fleetPath, fleetNodes)
		fleetTook = time.Since(t0)
		if fleetErr == nil {
			fmt.Fprintf(os.Stderr, "bench: wrote %d nodes through the store in %s\n", fleetNodes, fleetTook.Round(time.Millisecond))
		}
	})
	if fleetErr != nil {
		b.Fatalf("writing %d nodes to %s: %v", fleetNodes, fleetPath, fleetErr)
	}
	return fleetPath
}

// writeFleet creates n fake-hardware nodes named bench-fleet-N in a new
// SQLite file, as POST /v1/nodes {"driver": "fake-hardware", "name": ...}
// would: conductor.CreateNode with the server's default driver registry.
// It reopens the store every 5,000 nodes: closing it checkpoints and removes
// the write-ahead log, which otherwise grows by about 100 KiB a node while
// the store is open (11 GiB seen at 100,000; see docs/benchmarks.md).
func writeFleet(ctx context.Context, path string, n int) error {
	const batch = 5000
	for i := 0; i < n; i += batch {
		if err := writeNodes(ctx, path, i, min(n, i+batch)); err != nil {
			return err
		}
	}
	return nil
}

// writeNodes creates nodes bench-fleet-from … bench-fleet-(to-1).
func writeNodes(ctx context.Context, path string, from, to int) error {
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := conductor.New(conductor.Config{Store: st, Drivers: hardware.Registry(fake.New()), Host: "bench-loader",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	for i := from; i < to; i++ {
		nd := &model.Node{Driver: "fake-hardware", Name: fmt.Sprintf("bench-fleet-%d", i)}
		if err := c.Nodes().CreateNode(ctx, nd, false); err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
	}
	return nil
}

// fleetServer is the server the 100k read benchmarks share (started on the
// first use, reused by the next ones).
func fleetServer(b *testing.B) *server {
	b.Helper()
	return serverForOn(b, "fleet-100k", fleetDB(b), nil)
}

// BenchmarkListDetail1000At100k: GET /v1/nodes/detail?limit=1000 (the first
// 1,000 by id, in full) with 100,000 nodes stored.
func BenchmarkListDetail1000At100k(b *testing.B) {
	benchListDetail1000(b, fleetServer(b))
}

// BenchmarkListFieldsAll100k: each iteration lists all 100,000 nodes as
// GET /v1/nodes?fields=uuid,provision_state&limit=1000, following "next"
// through the 100 pages (1,000 is the server's largest page).
func BenchmarkListFieldsAll100k(b *testing.B) {
	s := fleetServer(b)
	ctx := context.Background()
	path := fmt.Sprintf("/v1/nodes?fields=uuid,provision_state&limit=%d", pageLimit)
	var size int
	var m cpuMeter
	b.ResetTimer()
	for range b.N {
		m.start(s)
		n, nb, err := s.listPages(ctx, path)
		m.stop()
		if err != nil {
			b.Fatal(err)
		}
		if n != fleetNodes {
			b.Fatalf("listing all pages of %s returned %d nodes, want %d", path, n, fleetNodes)
		}
		size = nb
	}
	b.StopTimer()
	b.ReportMetric(ms(m.wall)/float64(b.N), "ms/list-all")
	b.ReportMetric(float64(fleetNodes)/(m.wall.Seconds()/float64(b.N)), "nodes/s")
	m.report(b)
	b.ReportMetric(float64(size)/(1<<20), "MiB-listed")
}

// nodeGauge matches the lines of anvil_nodes{provision_state="..."} N.
var nodeGauge = regexp.MustCompile(`(?m)^anvil_nodes\{provision_state="[^"]*"\} ([0-9.e+]+)$`)

// BenchmarkMetrics100k: GET /metrics (Prometheus text) with 100,000 nodes
// stored; checked once that the node gauges add up to 100,000.
func BenchmarkMetrics100k(b *testing.B) {
	s := fleetServer(b)
	ctx := context.Background()
	var buf bytes.Buffer
	if _, err := s.getInto(ctx, "/metrics", &buf); err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, g := range nodeGauge.FindAllSubmatch(buf.Bytes(), -1) {
		v, err := strconv.ParseFloat(string(g[1]), 64)
		if err != nil {
			b.Fatal(err)
		}
		total += v
	}
	if total != fleetNodes {
		b.Fatalf("/metrics: anvil_nodes adds up to %v, want %d:\n%.2000s", total, fleetNodes, buf.Bytes())
	}
	size := buf.Len()
	var m cpuMeter
	b.ResetTimer()
	m.start(s)
	for range b.N {
		if _, err := s.getInto(ctx, "/metrics", &buf); err != nil {
			b.Fatal(err)
		}
	}
	m.stop()
	b.StopTimer()
	b.ReportMetric(ms(m.wall)/float64(b.N), "ms/scrape")
	m.report(b)
	b.ReportMetric(float64(size)/1024, "KiB/scrape")
}

// BenchmarkRSS100k: each iteration starts a server on the 100,000-node file,
// reads its VmRSS once it answers (MiB-RSS-started), lists every node with
// GET /v1/nodes/detail (100 pages of 1,000), and reads VmRSS and VmHWM
// again. ns/op is the full listing.
func BenchmarkRSS100k(b *testing.B) {
	if _, _, err := testbin.ProcMemory(1); err != nil {
		b.Skip(err)
	}
	path := fleetDB(b)
	ctx := context.Background()
	var rss, hwm, rssStarted int64
	var size int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := freshServerOn(b, "rss-100k", path)
		r, _, err := testbin.ProcMemory(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		rssStarted += r
		b.StartTimer()
		n, nb, err := s.listAll(ctx)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if n != fleetNodes {
			b.Fatalf("listing all pages returned %d nodes, want %d", n, fleetNodes)
		}
		size = nb
		r, h, err := testbin.ProcMemory(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		rss += r
		hwm += h
	}
	perN := func(v int64) float64 { return float64(v) / float64(b.N) / (1 << 20) }
	b.ReportMetric(perN(rss), "MiB-RSS")
	b.ReportMetric(perN(hwm), "MiB-peak")
	b.ReportMetric(perN(rssStarted), "MiB-RSS-started")
	b.ReportMetric(float64(size)/(1<<20), "MiB-listed")
}

// syncPassLine is the debug line the conductor logs at each power-sync pass,
// once it has listed the nodes it owns.
const syncPassLine = `msg="power sync pass"`

// BenchmarkRSS100kPowerSync: each iteration starts a server on the
// 100,000-node file with a power-sync pass every 2 s (60 s by default) and
// debug logs, waits until the log shows the second pass (so the first one
// ended: passes do not overlap), and reads VmRSS and VmHWM. ns/op is the
// time from the answering server to the second pass.
func BenchmarkRSS100kPowerSync(b *testing.B) {
	if _, _, err := testbin.ProcMemory(1); err != nil {
		b.Skip(err)
	}
	path := fleetDB(b)
	var rss, hwm int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := freshServerOn(b, "rss-100k-sync", path, "--sync-power-state-interval", "2", "--log-level", "debug")
		b.StartTimer()
		if err := s.waitLog(syncPassLine, 2, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		r, h, err := testbin.ProcMemory(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		rss += r
		hwm += h
		s.stop()
	}
	perN := func(v int64) float64 { return float64(v) / float64(b.N) / (1 << 20) }
	b.ReportMetric(perN(rss), "MiB-RSS")
	b.ReportMetric(perN(hwm), "MiB-peak")
}

// waitLog polls the server's log (every 100 ms, up to timeout) until line
// appears n times.
func (s *server) waitLog(line string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(filepath.Join(s.dir, "anvil.log"))
		if err != nil {
			return err
		}
		if got := bytes.Count(b, []byte(line)); got >= n {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("%q logged %d times in %s, want %d:\n%s", line, got, timeout, n, s.logTail())
		}
		if !s.alive() {
			return fmt.Errorf("anvil exited (%v) while waiting for %q:\n%s", s.err, line, s.logTail())
		}
		if err := clock.Sleep(context.Background(), 100*time.Millisecond); err != nil {
			return err
		}
	}
}
