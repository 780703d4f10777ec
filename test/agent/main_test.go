// Package agent_test runs the deploy agent end to end: a real `anvil serve`,
// a real `anvil agent` writing to a temporary disk file, and an image served
// by a loopback HTTP server. Every address is on 127.0.0.1.
package agent_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// stateTimeout bounds a wait for a node: a deploy writes a whole image.
const stateTimeout = 30 * time.Second

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// process is a started anvil subcommand, stopped with SIGTERM at cleanup.
type process = testbin.Process

// start runs the anvil binary with args; name labels it in messages.
func start(t *testing.T, name string, args ...string) *process {
	t.Helper()
	return testbin.Start(t, name, anvilBin, args...)
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
	return testbin.Serve(t, anvilBin, "agent-e2e", extra...)
}

// startAgent runs `anvil agent` against api, writing to disk.
func startAgent(t *testing.T, api, mac, disk string) *process {
	t.Helper()
	return start(t, "anvil agent", "agent", "--api-url", api, "--mac", mac, "--disk", disk,
		"--listen", testbin.FreeAddr(t), "--heartbeat-interval", "100ms", "--log-level", "debug")
}

// resp is one raw HTTP answer.
type resp = testbin.Response

// call sends one request at microversion 1.81 (the agent's).
func call(t *testing.T, method, url string, body any) resp {
	t.Helper()
	return testbin.Call(t, "1.81", method, url, body)
}

func mustCall(t *testing.T, want int, method, url string, body any) resp {
	t.Helper()
	r := call(t, method, url, body)
	if r.Status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.Status, want, r.Body)
	}
	return r
}

func getNode(t *testing.T, api, node string) map[string]any {
	t.Helper()
	return mustCall(t, 200, "GET", api+"/v1/nodes/"+node, nil).JSON(t)
}

// waitState waits until the node rests in want; see testbin.WaitState.
func waitState(t *testing.T, api, node, want string) map[string]any {
	t.Helper()
	return testbin.WaitState(t, api, node, want, stateTimeout)
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
		"deploy_interface": "direct"}).JSON(t)
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
