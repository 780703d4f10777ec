package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// Enroll → active throughput with 1 and with 3 processes (each --role all:
// API + conductor) on one PostgreSQL database, each with the same worker
// pool and every fake step (verify, automated clean, deploy) taking
// ANVIL_SCALING_DELAY seconds, so that workers, not this machine's cores,
// are the limit, as with real BMCs. One client per worker, bound to one
// process, takes the next node through manage → provide → deploy, sending
// each verb to its process and polling the node until it is settled before
// the next; so the pools stay full without 503 storms.
//
//	go test ./test/scale -run '^$' -bench Scaling -benchtime 1x
//	ANVIL_SCALING_NODES=10000 ANVIL_SCALING_WORKERS=100 ANVIL_SCALING_DELAY=1 \
//	  go test ./test/scale -run '^$' -bench Scaling -benchtime 1x -timeout 60m
//
// Worker-bound, one process moves workers/(3 × delay) nodes/s: 120 nodes,
// 10 workers, 1 s → 36 s and 12 s; 10,000, 100, 1 s → 300 s and 100 s.
// x-vs-1 (on conductors=3) is its rate over the conductors=1 rate.
func BenchmarkScalingEnrollToActive(b *testing.B) {
	cfg := scalingFromEnv(b)
	var rate1 float64
	for _, k := range []int{1, 3} {
		b.Run(fmt.Sprintf("conductors=%d", k), func(b *testing.B) {
			var took time.Duration
			var retries atomic.Int64
			var cpu cpuUse
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f := startFleet(b, k, cfg)
				ids := f.createNodes(b, cfg)
				b.StartTimer()
				c0 := f.cpu()
				start := time.Now()
				if err := f.lifecycle(b.Context(), ids, cfg, &retries); err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
				cpu.add(f.cpu(), c0)
			}
			rate := float64(b.N*cfg.nodes) / took.Seconds()
			b.ReportMetric(rate, "nodes/s")
			b.ReportMetric(float64(retries.Load())/float64(b.N), "retries/op")
			cpu.report(b, b.N*cfg.nodes, took)
			if k == 1 {
				rate1 = rate
			} else if rate1 > 0 {
				b.ReportMetric(rate/rate1, "x-vs-1")
			}
		})
	}
}

// scalingConfig is the size of BenchmarkScalingEnrollToActive.
type scalingConfig struct {
	nodes, workers int
	delay          string // seconds per fake step
}

func scalingFromEnv(b *testing.B) scalingConfig {
	cfg := scalingConfig{nodes: 120, workers: 10, delay: "1"}
	for _, v := range []struct {
		env string
		n   *int
	}{{"ANVIL_SCALING_NODES", &cfg.nodes}, {"ANVIL_SCALING_WORKERS", &cfg.workers}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", v.env, s)
			}
			*v.n = n
		}
	}
	if s := os.Getenv("ANVIL_SCALING_DELAY"); s != "" {
		if d, err := strconv.ParseFloat(s, 64); err != nil || d < 0 {
			b.Fatalf("ANVIL_SCALING_DELAY=%q: want seconds", s)
		}
		cfg.delay = s
	}
	return cfg
}

// fleet is k anvil processes on one fresh PostgreSQL schema, and the HTTP
// client the benchmark talks to them with (keep-alive for every client
// goroutine: testbin's client keeps only two idle connections per host).
type fleet struct {
	bases  []string
	procs  []*testbin.Process
	client *http.Client
}

func startFleet(b *testing.B, k int, cfg scalingConfig) *fleet {
	db := pg.URL(b)
	f := &fleet{client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		Proxy:               nil, // loopback only
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: cfg.workers + 16,
	}}}
	b.Cleanup(f.client.CloseIdleConnections)
	// The concurrency caps count nodes in every process (as Ironic's):
	// raised so that only the worker pools limit.
	capped := fmt.Sprint(k * cfg.workers)
	for i := 0; i < k; i++ {
		base, p := testbin.ServeOn(b, anvilBin, db, fmt.Sprintf("bench-%d", i),
			"--workers", fmt.Sprint(cfg.workers), "--max-concurrent-clean", capped, "--max-concurrent-deploy", capped,
			"--sync-power-state-interval", "0", "--lock-retries", "0")
		f.bases, f.procs = append(f.bases, base), append(f.procs, p)
	}
	return f
}

// cpuUse is CPU time used so far (or over a run) by the anvil processes,
// the PostgreSQL processes this test binary started, and the benchmark's
// own clients; failed is set when /proc could not be read.
type cpuUse struct {
	anvil, pg, client time.Duration
	failed            bool
}

func (f *fleet) cpu() cpuUse {
	var u cpuUse
	for _, p := range f.procs {
		d, err := testbin.ProcCPU(p.Cmd.Process.Pid)
		u.anvil += d
		u.failed = u.failed || err != nil
	}
	var err1, err2 error
	u.pg, _, err1 = testbin.ProcTreeCPU(os.Getpid(), "postgres")
	u.client, err2 = testbin.ProcCPU(os.Getpid())
	u.failed = u.failed || err1 != nil || err2 != nil
	return u
}

// add adds end - start to u.
func (u *cpuUse) add(end, start cpuUse) {
	u.anvil += end.anvil - start.anvil
	u.pg += end.pg - start.pg
	u.client += end.client - start.client
	u.failed = u.failed || end.failed || start.failed
}

// report gives the CPU milliseconds per node lifecycle of each party and
// the cores they kept busy together: near this machine's core count, the
// run was CPU-bound rather than worker-bound.
func (u cpuUse) report(b *testing.B, nodes int, wall time.Duration) {
	if u.failed || nodes == 0 || wall <= 0 {
		return
	}
	per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(nodes) }
	b.ReportMetric(per(u.anvil), "anvil-cpu-ms/node")
	b.ReportMetric(per(u.pg), "pg-cpu-ms/node")
	b.ReportMetric(per(u.client), "client-cpu-ms/node")
	b.ReportMetric((u.anvil+u.pg+u.client).Seconds()/wall.Seconds(), "cores")
}

// call sends one JSON request at the latest microversion and returns the
// status and body.
func (f *fleet) call(ctx context.Context, method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// createNodes creates the enroll nodes (16 clients, round-robin over the
// processes), every fake step of theirs taking cfg.delay seconds.
func (f *fleet) createNodes(b *testing.B, cfg scalingConfig) []string {
	info := map[string]any{"fake_verify_delay": cfg.delay, "fake_clean_delay": cfg.delay, "fake_deploy_delay": cfg.delay}
	ids := make([]string, cfg.nodes)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) || b.Failed() {
					return
				}
				status, body, err := f.call(b.Context(), http.MethodPost, f.bases[i%len(f.bases)]+"/v1/nodes",
					map[string]any{"driver": "fake-hardware", "driver_info": info})
				var n struct{ UUID string }
				if err == nil && status == http.StatusCreated {
					err = json.Unmarshal(body, &n)
				}
				if err != nil || status != http.StatusCreated || n.UUID == "" {
					b.Errorf("POST /v1/nodes: %d %v %.300s", status, err, body)
					return
				}
				ids[i] = n.UUID
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ids
}

// lifecycle moves every node enroll → manageable → available → active:
// workers clients per process, client c sending to process c mod k.
func (f *fleet) lifecycle(ctx context.Context, ids []string, cfg scalingConfig, retries *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	delay, _ := strconv.ParseFloat(cfg.delay, 64)
	step := time.Duration(delay * float64(time.Second))
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for c := range len(f.bases) * cfg.workers {
		base := f.bases[c%len(f.bases)]
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				for _, v := range []struct{ target, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}} {
					err := f.provision(ctx, base, ids[i], v.target, retries)
					if err == nil {
						err = f.settle(ctx, base, ids[i], v.state, step)
					}
					if err != nil {
						once.Do(func() { firstErr = err; cancel() })
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// provision sends the verb until it is accepted: 503 (no free worker, or a
// concurrency cap) and 409 (the node still locked) are retried after 50 ms.
func (f *fleet) provision(ctx context.Context, base, id, target string, retries *atomic.Int64) error {
	url := base + "/v1/nodes/" + id + "/states/provision"
	for {
		status, body, err := f.call(ctx, http.MethodPut, url, map[string]any{"target": target})
		if err != nil {
			return fmt.Errorf("%s %s: %w", target, id, err)
		}
		switch status {
		case http.StatusAccepted:
			return nil
		case http.StatusServiceUnavailable, http.StatusConflict:
			retries.Add(1)
		default:
			return fmt.Errorf("%s %s: HTTP %d %.300s", target, id, status, body)
		}
		if err := clock.Sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("%s %s: still HTTP %d: %w", target, id, status, err)
		}
	}
}

// settle waits first (the fake step takes that long), then polls the node
// every 50 ms until it is in state and unlocked; a failure state ends it.
func (f *fleet) settle(ctx context.Context, base, id, state string, first time.Duration) error {
	url := base + "/v1/nodes/" + id + "?fields=provision_state,reservation,last_error"
	wait := first
	for {
		if err := clock.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("node %s never %s: %w", id, state, err)
		}
		wait = 50 * time.Millisecond
		status, body, err := f.call(ctx, http.MethodGet, url, nil)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("GET node %s: %d %v %.300s", id, status, err, body)
		}
		var n struct {
			ProvisionState string  `json:"provision_state"`
			Reservation    *string `json:"reservation"`
			LastError      *string `json:"last_error"`
		}
		if err := json.Unmarshal(body, &n); err != nil {
			return fmt.Errorf("GET node %s: %w", id, err)
		}
		if n.ProvisionState == state && n.Reservation == nil {
			return nil
		}
		if testbin.FailureState(n.ProvisionState) {
			return fmt.Errorf("node %s is %s waiting for %s: %v", id, n.ProvisionState, state, n.LastError)
		}
	}
}
