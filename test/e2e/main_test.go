// Package e2e drives a real `anvil serve` process with the clients operators
// use against OpenStack Ironic — the `baremetal` CLI (python3-ironicclient)
// and gophercloud — and checks every answer against what Ironic returns.
//
// TestMain builds the binary once; each test starts its own server on a free
// port with a throwaway SQLite database, so tests run in parallel.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	// conductorHost is the --host-id every test server runs with; Ironic
	// names it in NodeLocked errors and in the reservation field.
	conductorHost = "e2e-conductor"
	// readyTimeout bounds how long a server may take to start listening.
	readyTimeout = 20 * time.Second
	// stopTimeout bounds how long a server may take to exit after SIGTERM.
	stopTimeout = 10 * time.Second
	// stateTimeout bounds every wait for a node to settle.
	stateTimeout = 10 * time.Second
	// pollInterval is the pause between two polls of a node.
	pollInterval = 20 * time.Millisecond
)

// anvilBin is the binary TestMain builds for the whole package.
var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// syncBuffer collects a process's output safely.
type syncBuffer = testbin.Buffer

var freePort = testbin.FreePort

// httpClient is shared by the raw-HTTP helpers; every request is bounded.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// readyWriter copies the server's stdout into the log and reports the
// address of its "anvil: listening on http://ADDR ..." line once.
type readyWriter struct {
	log   *syncBuffer
	mu    sync.Mutex
	line  []byte
	ready chan string
	seen  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	_, _ = w.log.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		line := string(w.line[:i])
		w.line = w.line[i+1:]
		const marker = "anvil: listening on http://"
		if j := strings.Index(line, marker); j >= 0 && !w.seen {
			w.seen = true
			addr, _, _ := strings.Cut(line[j+len(marker):], " ")
			w.ready <- addr
		}
	}
	return len(p), nil
}

// startServer runs `anvil serve` on a free port with a fresh SQLite database
// and returns its base URL (no trailing slash). The server is stopped with
// SIGTERM when the test ends (SIGKILL after 10 s); its output is logged if
// the test failed.
func startServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logs := &syncBuffer{}
	ready := &readyWriter{log: logs, ready: make(chan string, 1)}
	cmd := exec.Command(anvilBin, "serve",
		"--listen", addr,
		"--database", filepath.Join(dir, "anvil.db"),
		"--host-id", conductorHost,
		"--lock-retries", "0")
	cmd.Stdout = ready
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start anvil serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("anvil serve did not exit cleanly after SIGTERM: %v", err)
				}
			case <-time.After(stopTimeout):
				t.Errorf("anvil serve still running %s after SIGTERM; killing it", stopTimeout)
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		if t.Failed() {
			t.Logf("anvil serve output (%s):\n%s", addr, logs.String())
		}
	})

	base := "http://" + addr
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case got := <-ready.ready:
			if got != addr {
				t.Fatalf("anvil serve says it listens on %q, asked for %q", got, addr)
			}
			return base
		case err := <-exited:
			stopped = true
			t.Fatalf("anvil serve exited before it was ready: %v", err)
		default:
		}
		if resp, err := httpClient.Get(base + "/"); err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("anvil serve not ready on %s after %s", addr, readyTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requireCLI skips the test when the `baremetal` CLI is missing, or fails it
// when running in CI (env CI set), where it must be installed.
func requireCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("baremetal"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the baremetal CLI (python3-ironicclient) is required in CI: %v", err)
		}
		t.Skipf("the baremetal CLI (python3-ironicclient) is not installed: %v", err)
	}
}

// apiResponse is one raw HTTP answer.
type apiResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// fault returns the faultstring of an Ironic error body, which nests a JSON
// document in a string: {"error_message": "{\"faultstring\": ...}"}.
func (r apiResponse) fault(t *testing.T) string {
	t.Helper()
	return faultString(t, r.Body)
}

func faultString(t *testing.T, body []byte) string {
	t.Helper()
	msg, key := errorDoc(t, body)
	if key != "faultstring" {
		t.Fatalf("error body carries %q, want Ironic's faultstring document: %s", key, body)
	}
	return msg
}

// errorDoc decodes Ironic's nested error body and returns the message and
// the key that carried it. Ironic has two inner shapes: errors raised by its
// controllers are {"faultcode", "faultstring", "debuginfo"}; webob errors
// raised while routing or negotiating the microversion are {"code",
// "title", "description"}.
func errorDoc(t *testing.T, body []byte) (msg, key string) {
	t.Helper()
	var outer struct {
		ErrorMessage *string `json:"error_message"`
	}
	if err := json.Unmarshal(body, &outer); err != nil || outer.ErrorMessage == nil {
		t.Fatalf("error body is not Ironic's {\"error_message\": \"<json>\"}: %v: %s", err, body)
	}
	var inner map[string]any
	if err := json.Unmarshal([]byte(*outer.ErrorMessage), &inner); err != nil {
		t.Fatalf("error_message is not a JSON-encoded document: %v: %q", err, *outer.ErrorMessage)
	}
	for _, k := range []string{"faultstring", "description"} {
		if m, ok := inner[k].(string); ok {
			return m, k
		}
	}
	t.Fatalf("error_message has neither faultstring nor description: %q", *outer.ErrorMessage)
	return "", ""
}

// api sends one request at microversion version ("" sends no header) and
// returns the answer. body is JSON-encoded unless it is nil.
func api(t *testing.T, base, version, method, path string, body any) apiResponse {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("encode %s %s body: %v", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if version != "" {
		req.Header.Set("X-OpenStack-Ironic-API-Version", version)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return apiResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// getNode returns GET /v1/nodes/{ident} at the latest microversion.
func getNode(t *testing.T, base, ident string) map[string]any {
	t.Helper()
	r := api(t, base, "latest", http.MethodGet, "/v1/nodes/"+ident, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/nodes/%s: HTTP %d: %s", ident, r.Status, r.Body)
	}
	var n map[string]any
	if err := json.Unmarshal(r.Body, &n); err != nil {
		t.Fatalf("GET /v1/nodes/%s: %v: %s", ident, err, r.Body)
	}
	return n
}

// stableStates are Ironic's STABLE_STATES: reaching one clears the target.
var stableStates = map[string]bool{
	"enroll": true, "manageable": true, "available": true,
	"active": true, "error": true, "rescue": true,
}

// failureStates are where a failed operation leaves a node.
var failureStates = map[string]bool{
	"deploy failed": true, "clean failed": true, "inspect failed": true,
	"rescue failed": true, "unrescue failed": true, "adopt failed": true,
	"service failed": true, "error": true,
}

// waitState polls the node until its provision_state is state and the
// conductor has released it (reservation null; for a stable state also
// target_provision_state null), and returns the node. It gives up after
// 10 s, or as soon as the node settles in a failure state it was not in.
func waitState(t *testing.T, base, node, state string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(stateTimeout)
	first := ""
	for {
		n := getNode(t, base, node)
		ps, _ := n["provision_state"].(string)
		if first == "" {
			first = ps
		}
		settled := n["reservation"] == nil
		if ps == state && settled && (!stableStates[state] || n["target_provision_state"] == nil) {
			return n
		}
		if ps != state && ps != first && settled && failureStates[ps] {
			t.Fatalf("node %s went to %q (target %v, last_error %v) while waiting for %q",
				node, ps, n["target_provision_state"], n["last_error"], state)
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not in %q after %s: provision_state %q, target %v, reservation %v, last_error %v",
				node, state, stateTimeout, ps, n["target_provision_state"], n["reservation"], n["last_error"])
		}
		time.Sleep(pollInterval)
	}
}

// waitPower polls the node until power_state is state, no power change is
// pending and the lock is released, and returns the node.
func waitPower(t *testing.T, base, node, state string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(stateTimeout)
	for {
		n := getNode(t, base, node)
		if n["power_state"] == state && n["target_power_state"] == nil && n["reservation"] == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not in power state %q after %s: power_state %v, target_power_state %v, reservation %v, last_error %v",
				node, state, stateTimeout, n["power_state"], n["target_power_state"], n["reservation"], n["last_error"])
		}
		time.Sleep(pollInterval)
	}
}

// invalidState is Ironic's InvalidStateRequested text.
func invalidState(action, uuid, state string) string {
	return fmt.Sprintf("The requested action %q can not be performed on node %q while it is in state %q.", action, uuid, state)
}

// nodeLocked is Ironic's NodeLocked text for the test conductor.
func nodeLocked(uuid string) string {
	return fmt.Sprintf("Node %s is locked by host %s, please retry after the current operation is completed.", uuid, conductorHost)
}

// cannotDeleteActive is Ironic's 409 text for deleting an active node.
func cannotDeleteActive(uuid string) string {
	return fmt.Sprintf("Can not delete node %q while it is in provision state \"active\". "+
		"Valid provision states to perform deletion are: \"('manageable', 'enroll', 'adopt failed', 'available')\", "+
		"or set the node into maintenance mode", uuid)
}

// mustJSON decodes s into a value of type T or fails the test.
func mustJSON[T any](t *testing.T, what, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: not the expected JSON: %v\n%s", what, err, s)
	}
	return v
}

// errorsAs is errors.As with a value target, for readability in tests.
func errorsAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}
