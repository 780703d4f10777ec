package bench

// The harness: build the anvil binary once, run `anvil serve` as a separate
// process with a fresh SQLite database per benchmark, and talk to it over
// keep-alive HTTP like any Ironic client would.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
)

// apiVersion is the microversion every request asks for (Ironic 2023.2+).
const apiVersion = "1.89"

// maxClients bounds the concurrent HTTP clients any benchmark uses; the
// shared transport keeps that many idle connections per host.
const maxClients = 64

var (
	workDir string // temp dir holding the binary and every server's files

	buildOnce sync.Once
	binPath   string
	buildErr  error

	srvMu  sync.Mutex
	curSrv *server // the running server; one at a time so idle ones cost nothing

	nameSeq atomic.Int64 // unique node names across the whole run

	pg = pgtest.New() // throwaway PostgreSQL, started by the first benchmark that needs one

	client = &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			Proxy:               nil, // loopback: never through an HTTP proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        maxClients,
			MaxIdleConnsPerHost: maxClients,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anvil-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	srvMu.Lock()
	if curSrv != nil {
		curSrv.stop()
		curSrv = nil
	}
	srvMu.Unlock()
	pg.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "bench: server logs kept in", dir)
	}
	os.Exit(code)
}

// anvilBinary builds ./cmd/anvil once per test process (CGO_ENABLED=0, as
// `make build` does). ANVIL_BENCH_BIN names a prebuilt binary instead.
func anvilBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("ANVIL_BENCH_BIN"); p != "" {
			binPath, buildErr = filepath.Abs(p)
			return
		}
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(gomod)))
		binPath = filepath.Join(workDir, "anvil")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/anvil")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/anvil: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// server is one running `anvil serve`.
type server struct {
	name string // the benchmark that owns it
	dir  string
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT
	done chan struct{}
	err  error // Wait's result, set when done closes
}

// serverFor returns the server of the benchmark called name, starting a fresh
// one (stopping any other) on first use and running setup on it once. Later
// rounds of the same benchmark (b.N growing, -count) reuse it.
func serverFor(b *testing.B, name string, setup func(*server)) *server {
	b.Helper()
	return serverForOn(b, name, "", setup)
}

// serverForOn is serverFor on database (see freshServerOn).
func serverForOn(b *testing.B, name, database string, setup func(*server)) *server {
	b.Helper()
	srvMu.Lock()
	reuse := curSrv != nil && curSrv.name == name && curSrv.alive()
	s := curSrv
	srvMu.Unlock()
	if reuse {
		return s
	}
	s = freshServerOn(b, name, database)
	if setup != nil {
		setup(s)
	}
	return s
}

// freshServer stops the running server, if any, and starts a new one with an
// empty database.
func freshServer(tb testing.TB, name string) *server {
	return freshServerOn(tb, name, "")
}

// freshServerOn is freshServer on database: a SQLite file or a postgres://
// URL that may already hold nodes; "" is a fresh SQLite file. extra are more
// flags of anvil serve.
func freshServerOn(tb testing.TB, name, database string, extra ...string) *server {
	tb.Helper()
	srvMu.Lock()
	defer srvMu.Unlock()
	if curSrv != nil {
		curSrv.stop()
		curSrv = nil
	}
	curSrv = startServerOn(tb, name, database, extra...)
	return curSrv
}

func startServer(tb testing.TB, name string) *server {
	tb.Helper()
	return startServerOn(tb, name, "")
}

func startServerOn(tb testing.TB, name, database string, extra ...string) *server {
	tb.Helper()
	bin := anvilBinary(tb)
	dir, err := os.MkdirTemp(workDir, name+"-")
	if err != nil {
		tb.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "anvil.log"))
	if err != nil {
		tb.Fatal(err)
	}
	if database == "" {
		database = filepath.Join(dir, "anvil.db")
	}
	// Port 0: the kernel picks a free loopback port and anvil prints it.
	args := append([]string{"serve",
		"--listen", "127.0.0.1:0",
		"--database", database,
		"--host-id", "bench",
		"--shutdown-timeout", "5s"}, extra...)
	// ANVIL_BENCH_PPROF=127.0.0.1:6060 serves the server's profiles there.
	if addr := os.Getenv("ANVIL_BENCH_PPROF"); addr != "" {
		args = append(args, "--pprof-listen", addr)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stderr = logf
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	s := &server{name: name, dir: dir, cmd: cmd, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		// Find the ready line, then keep draining so anvil never blocks on stdout.
		sc := bufio.NewScanner(stdout)
		const ready = "anvil: listening on http://"
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, ready); i >= 0 {
				addr, _, _ := strings.Cut(line[i+len(ready):], " ")
				addrc <- addr
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		s.err = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	select {
	case addr := <-addrc:
		s.base = "http://" + strings.TrimRight(addr, "/")
	case <-s.done:
		tb.Fatalf("anvil serve exited before listening (%v):\n%s", s.err, s.logTail())
	case <-time.After(30 * time.Second):
		s.stop()
		tb.Fatalf("anvil serve not listening after 30s:\n%s", s.logTail())
	}
	// Ready means listening; wait until the API answers too.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body, err := s.do(context.Background(), "GET", "/v1/nodes?limit=1", nil)
		if err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			tb.Fatalf("GET /v1/nodes never answered 200 (last: %d %v %s):\n%s", status, err, body, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

func (s *server) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM, waits for a clean exit, and kills after 15 s.
func (s *server) stop() {
	if !s.alive() {
		return
	}
	_ = s.cmd.Process.Signal(termSignal)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	client.CloseIdleConnections()
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "anvil.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// do sends one request with the microversion header and returns the status
// and the whole body.
func (s *server) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	url := path
	if !strings.HasPrefix(path, "http://") {
		url = s.base + path
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", apiVersion)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// node is the part of Ironic's node object the benchmarks look at.
type node struct {
	UUID           string  `json:"uuid"`
	Name           *string `json:"name"`
	ProvisionState string  `json:"provision_state"`
	LastError      *string `json:"last_error"`
}

// nodeList is a page of GET /v1/nodes[/detail].
type nodeList struct {
	Nodes []node `json:"nodes"`
	Next  string `json:"next"`
}

// retryPause is how long a client waits after 503 (worker pool full) or 409
// "locked" (the previous operation is still releasing the node).
const retryPause = 2 * time.Millisecond

// counters of retried requests, reported by the benchmarks that retry.
var retries503, retries409 atomic.Int64

// createNode POSTs one fake-hardware node named bench-N and returns it
// (decoded only when decode is set; the create benchmark just reads the body).
func (s *server) createNode(ctx context.Context, decode bool) (node, error) {
	name := fmt.Sprintf("bench-%d", nameSeq.Add(1))
	req := map[string]string{"driver": "fake-hardware", "name": name}
	for {
		status, body, err := s.do(ctx, "POST", "/v1/nodes", req)
		if err != nil {
			return node{}, fmt.Errorf("POST /v1/nodes: %w", err)
		}
		switch status {
		case http.StatusCreated:
			var n node
			if decode {
				if err := json.Unmarshal(body, &n); err != nil || n.UUID == "" {
					return node{}, fmt.Errorf("POST /v1/nodes: bad body (%v): %.300s", err, body)
				}
			}
			return n, nil
		case http.StatusServiceUnavailable:
			retries503.Add(1)
			time.Sleep(retryPause)
			continue
		}
		return node{}, fmt.Errorf("POST /v1/nodes: %d %.500s", status, body)
	}
}

// createMany creates n nodes from conc concurrent clients without decoding
// the answers, as fast as the server takes them.
func (s *server) createMany(n, conc int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := s.createNode(ctx, false); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// loadNodes creates n nodes from conc concurrent clients and returns their
// UUIDs (in no particular order).
func (s *server) loadNodes(tb testing.TB, n, conc int) []string {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	uuids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				nd, err := s.createNode(ctx, true)
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				uuids[i] = nd.UUID
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		tb.Fatalf("loading %d nodes: %v\n%s", n, firstErr, s.logTail())
	}
	return uuids
}

// listAll walks GET /v1/nodes/detail?limit=1000 page by page (following
// "next") and returns how many nodes it saw and how many bytes it read.
func (s *server) listAll(ctx context.Context) (nodes, bytes int, err error) {
	return s.listPages(ctx, "/v1/nodes/detail?limit=1000")
}

// listPages walks a node list from path page by page, following "next".
func (s *server) listPages(ctx context.Context, path string) (nodes, bytes int, err error) {
	for pages := 0; path != ""; pages++ {
		if pages > 10000 {
			return nodes, bytes, errors.New("more than 10,000 pages: pagination loops")
		}
		status, body, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return nodes, bytes, err
		}
		if status != http.StatusOK {
			return nodes, bytes, fmt.Errorf("GET %s: %d %.500s", path, status, body)
		}
		var page nodeList
		if err := json.Unmarshal(body, &page); err != nil {
			return nodes, bytes, fmt.Errorf("GET %s: %w", path, err)
		}
		nodes += len(page.Nodes)
		bytes += len(body)
		if len(page.Nodes) == 0 {
			break
		}
		path = page.Next
	}
	return nodes, bytes, nil
}
