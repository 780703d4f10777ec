// Package agent_test runs the deploy agent end to end: a real `anvil serve`,
// a real `anvil agent` writing to a temporary disk file, and an image served
// by a loopback HTTP server. Every address is on 127.0.0.1.
package agent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	readyTimeout = 20 * time.Second
	stateTimeout = 30 * time.Second
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// syncBuffer collects a process's output safely.
type syncBuffer = testbin.Buffer

var freeAddr = testbin.FreeAddr

var httpClient = &http.Client{Timeout: 30 * time.Second}

// process is a started anvil subcommand, stopped with SIGTERM at cleanup.
type process struct {
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan error
	done   bool
}

func start(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{logs: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(anvilBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.logs.String())
		}
	})
	return p
}

func (p *process) stop(t *testing.T) {
	if p.done {
		return
	}
	p.done = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("process still running 10s after SIGTERM; killing it")
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *process) kill() {
	p.done = true
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// startServer runs `anvil serve` on a free loopback port and returns its URL.
func startServer(t *testing.T, extra ...string) string {
	t.Helper()
	base, _ := startServerProc(t, extra...)
	return base
}

// startServerProc is startServer also returning the process (for its logs).
func startServerProc(t *testing.T, extra ...string) (string, *process) {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "--listen", addr, "--database", filepath.Join(t.TempDir(), "anvil.db"),
		"--host-id", "agent-e2e"}, extra...)
	p := start(t, "anvil serve", args...)
	base := "http://" + addr
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if resp, err := httpClient.Get(base + "/"); err == nil {
			resp.Body.Close()
			return base, p
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("anvil serve not ready on %s", addr)
	return "", nil
}

// startAgent runs `anvil agent` against api, writing to disk.
func startAgent(t *testing.T, api, mac, disk string) *process {
	t.Helper()
	return start(t, "anvil agent", "agent", "--api-url", api, "--mac", mac, "--disk", disk,
		"--listen", freeAddr(t), "--heartbeat-interval", "100ms", "--log-level", "debug")
}

type resp struct {
	status int
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

func call(t *testing.T, method, url string, body any) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.81")
	req.Header.Set("Content-Type", "application/json")
	r, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{r.StatusCode, b}
}

func mustCall(t *testing.T, want int, method, url string, body any) resp {
	t.Helper()
	r := call(t, method, url, body)
	if r.status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.status, want, r.body)
	}
	return r
}

func getNode(t *testing.T, api, node string) map[string]any {
	t.Helper()
	return mustCall(t, 200, "GET", api+"/v1/nodes/"+node, nil).json(t)
}

// waitState polls the node until its provision state is want (and it is
// unlocked), failing on a different stable state.
func waitState(t *testing.T, api, node, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(stateTimeout)
	var n map[string]any
	for time.Now().Before(deadline) {
		n = getNode(t, api, node)
		if n["provision_state"] == want && n["reservation"] == nil {
			return n
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("node %s: provision_state %v (last_error %v), want %q", node, n["provision_state"], n["last_error"], want)
	return nil
}

func provision(t *testing.T, api, node, target string) {
	t.Helper()
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": target})
}

// createNode enrolls a fake-hardware node with the direct deploy interface
// and a port with mac.
func createNode(t *testing.T, api, name, mac string) string {
	t.Helper()
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": name, "driver": "fake-hardware",
		"deploy_interface": "direct"}).json(t)
	uuid := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": uuid, "address": mac})
	return uuid
}

func setImage(t *testing.T, api, node, source, checksum string) {
	t.Helper()
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, []map[string]any{
		{"op": "add", "path": "/instance_info/image_source", "value": source},
		{"op": "add", "path": "/instance_info/image_checksum", "value": checksum},
	})
}

func tempDisk(t *testing.T, size int64, fill byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(p, bytes.Repeat([]byte{fill}, int(size)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func contains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("%s = %q; want it to contain %q", what, got, want)
	}
}
