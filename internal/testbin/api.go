package testbin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// Response is one raw HTTP answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return m
}

// Call sends one request to url at microversion version ("" sends no
// version header); body is JSON-encoded unless it is nil.
func Call(t testing.TB, version, method, url string, body any) Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("encode %s %s body: %v", method, url, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if version != "" {
		req.Header.Set("X-OpenStack-Ironic-API-Version", version)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// MustCall is Call at the latest microversion, failing the test unless the
// answer has status want.
func MustCall(t testing.TB, want int, method, url string, body any) Response {
	t.Helper()
	r := Call(t, "latest", method, url, body)
	if r.Status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.Status, want, r.Body)
	}
	return r
}

// GetNode returns GET /v1/nodes/{ident} at the latest microversion.
func GetNode(t testing.TB, base, ident string) map[string]any {
	t.Helper()
	return MustCall(t, http.StatusOK, http.MethodGet, base+"/v1/nodes/"+ident, nil).JSON(t)
}

// The two state lists below are Ironic's (ironic/common/states.py), written
// out here rather than read from internal/fsm, so that a mistake there
// cannot hide from the end-to-end tests.

// StableState reports whether s is one of Ironic's STABLE_STATES: reaching
// one clears the target.
func StableState(s string) bool { return stableStates[s] }

// FailureState reports whether s is where a failed operation leaves a node.
func FailureState(s string) bool { return failureStates[s] }

var stableStates = map[string]bool{
	"enroll": true, "manageable": true, "available": true,
	"active": true, "error": true, "rescue": true,
}

var failureStates = map[string]bool{
	"deploy failed": true, "clean failed": true, "inspect failed": true,
	"rescue failed": true, "unrescue failed": true, "adopt failed": true,
	"service failed": true, "error": true,
}

// WaitState polls the node until its provision_state is state and the
// conductor has released it (reservation null; for a stable state also
// target_provision_state null), and returns the node. It gives up after
// timeout (StateTimeout if zero), or as soon as the node settles in a
// failure state it was not in when the wait began.
func WaitState(t testing.TB, base, node, state string, timeout time.Duration) map[string]any {
	t.Helper()
	if timeout <= 0 {
		timeout = StateTimeout
	}
	deadline := time.Now().Add(timeout)
	first := ""
	for {
		n := GetNode(t, base, node)
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
				node, state, timeout, ps, n["target_provision_state"], n["reservation"], n["last_error"])
		}
		time.Sleep(pollInterval) // polling with a deadline, not synchronisation
	}
}
