// Package e2e drives a real `anvil serve` process with the clients operators
// use against OpenStack Ironic — the `baremetal` CLI (python3-ironicclient)
// and gophercloud — and checks every answer against what Ironic returns.
//
// TestMain builds the binary once; each test starts its own server on a free
// port with a throwaway SQLite database, so tests run in parallel.
package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	// conductorHost is the --host-id every test server runs with; Ironic
	// names it in NodeLocked errors and in the reservation field.
	conductorHost = "e2e-conductor"
	// stateTimeout bounds every wait for a node to settle.
	stateTimeout = 10 * time.Second
	// pollInterval is the pause between two polls of a node.
	pollInterval = 20 * time.Millisecond
)

// anvilBin is the binary TestMain builds for the whole package.
var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// startServer runs `anvil serve` on a free port with a fresh SQLite database
// and returns its base URL (no trailing slash); see testbin.Serve.
func startServer(t *testing.T) string {
	t.Helper()
	base, _ := testbin.Serve(t, anvilBin, conductorHost, "--lock-retries", "0")
	return base
}

// requireCLI skips the test when the `baremetal` CLI is missing, or fails it
// when running in CI (env CI set), where it must be installed.
func requireCLI(t *testing.T) {
	t.Helper()
	testbin.Need(t, "baremetal", "python3-ironicclient")
}

// apiResponse is one raw HTTP answer.
type apiResponse = testbin.Response

// faultString returns the faultstring of an Ironic error body, which nests
// a JSON document in a string: {"error_message": "{\"faultstring\": ...}"}.
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
	return testbin.Call(t, version, method, base+path, body)
}

// getNode returns GET /v1/nodes/{ident} at the latest microversion.
func getNode(t *testing.T, base, ident string) map[string]any {
	t.Helper()
	return testbin.GetNode(t, base, ident)
}

// waitState waits until the node rests in state; see testbin.WaitState.
func waitState(t *testing.T, base, node, state string) map[string]any {
	t.Helper()
	return testbin.WaitState(t, base, node, state, stateTimeout)
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
