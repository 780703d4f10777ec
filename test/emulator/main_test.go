// Package emulator_test runs Anvil end to end against the BMC emulator with
// the deploy agent: a real `anvil serve` (built once), the emulator in this
// process with ten machines whose network boots start the agent on their own
// disk files, and an image served on loopback. Every address is on 127.0.0.1.
package emulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// syncBuffer collects a process's output safely.
type syncBuffer = testbin.Buffer

var freeAddr = testbin.FreeAddr

var httpClient = &http.Client{Timeout: 30 * time.Second}

// startServer runs `anvil serve` on a free loopback port until the test ends
// and returns its URL and its output.
func startServer(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	addr := freeAddr(t)
	logs := &syncBuffer{}
	cmd := exec.Command(anvilBin, "serve", "--listen", addr, "--database", filepath.Join(t.TempDir(), "anvil.db"),
		"--host-id", "emulator-e2e",
		// The emulated machines boot the agent when their boot device is pxe:
		// the fake boot interface, enabled for redfish nodes by naming it.
		"--enabled-boot-interfaces", "fake,ipxe,pxe")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start anvil serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("anvil serve still running 15 s after SIGTERM; killing it")
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("anvil serve output:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := httpClient.Get(base + "/"); err == nil {
			resp.Body.Close()
			return base, logs
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("anvil serve not ready on %s\n%s", addr, logs.String())
	return "", nil
}

// call sends a JSON request to the API; want is the expected status.
func call(t *testing.T, want int, method, url string, body any) map[string]any {
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
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	req.Header.Set("Content-Type", "application/json")
	r, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.StatusCode, want, b)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// failed states end a wait early.
var failed = map[string]bool{"deploy failed": true, "clean failed": true, "error": true, "inspect failed": true}

// waitAll polls every node until each is in provision state want with no
// target, failing on a failed state or after timeout.
func waitAll(t *testing.T, api string, nodes []string, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pending := append([]string(nil), nodes...)
	for len(pending) > 0 {
		var still []string
		for _, n := range pending {
			node := call(t, 200, "GET", api+"/v1/nodes/"+n, nil)
			st, _ := node["provision_state"].(string)
			if st == want && node["target_provision_state"] == nil && node["reservation"] == nil {
				continue
			}
			if failed[st] {
				t.Fatalf("node %s: provision_state %q (last_error %v), want %q", n, st, node["last_error"], want)
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: provision_state %q (target %v, last_error %v) after %v, want %q", n, st,
					node["target_provision_state"], node["last_error"], timeout, want)
			}
			still = append(still, n)
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}
