// Package emulator_test runs Anvil end to end against the BMC emulator with
// the deploy agent: a real `anvil serve` (built once), the emulator in this
// process with ten machines whose network boots start the agent on their own
// disk files, and an image served on loopback. Every address is on 127.0.0.1.
package emulator_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// startServer runs `anvil serve` on a free loopback port until the test ends
// and returns its URL and its output.
func startServer(t *testing.T) (string, *testbin.Buffer) {
	t.Helper()
	// The emulated machines boot the agent when their boot device is pxe:
	// the fake boot interface, enabled for redfish nodes by naming it.
	base, p := testbin.Serve(t, anvilBin, "emulator-e2e", "--enabled-boot-interfaces", "fake,ipxe,pxe")
	return base, p.Logs
}

// call sends a JSON request to the API at the latest microversion; want is
// the expected status.
func call(t *testing.T, want int, method, url string, body any) map[string]any {
	t.Helper()
	var m map[string]any
	_ = json.Unmarshal(testbin.MustCall(t, want, method, url, body).Body, &m)
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
