package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// fake_wait parks a deploy in "wait call-back": a heartbeat resumes it, and
// without one the callback timeout fails it with Ironic's message.
func TestWaitCallbackHeartbeatAndTimeout(t *testing.T) {
	p := launch(t, filepath.Join(t.TempDir(), "anvil.db"), "waiter",
		"--deploy-callback-timeout", "2", "--check-provision-state-interval", "0.5")
	park := func(name string) string {
		r := api(t, p.base, "1.89", http.MethodPost, "/v1/nodes", map[string]any{
			"driver": "fake-hardware", "name": name, "driver_info": map[string]any{"fake_wait": "deploy"}})
		if r.Status != http.StatusCreated {
			t.Fatalf("create: HTTP %d %s", r.Status, r.Body)
		}
		var n struct{ UUID string }
		_ = json.Unmarshal(r.Body, &n)
		for _, s := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "wait call-back"}} {
			if r := api(t, p.base, "1.89", http.MethodPut, "/v1/nodes/"+n.UUID+"/states/provision", map[string]any{"target": s.verb}); r.Status != http.StatusAccepted {
				t.Fatalf("%s: HTTP %d %s", s.verb, r.Status, r.Body)
			}
			waitState(t, p.base, n.UUID, s.state)
		}
		return n.UUID
	}
	resumed, abandoned := park("resumed"), park("abandoned")

	if r := api(t, p.base, "1.89", http.MethodPost, "/v1/heartbeat/"+resumed, map[string]any{
		"callback_url": "http://127.0.0.1:9999", "agent_version": "anvil"}); r.Status != http.StatusAccepted {
		t.Fatalf("heartbeat: HTTP %d %s", r.Status, r.Body)
	}
	waitState(t, p.base, resumed, "active")
	if r := api(t, p.base, "1.1", http.MethodPost, "/v1/heartbeat/"+resumed, map[string]any{"callback_url": "x"}); r.Status != http.StatusNotFound {
		t.Fatalf("heartbeat below 1.22: HTTP %d", r.Status)
	}

	n := waitState(t, p.base, abandoned, "deploy failed")
	want := fmt.Sprintf("Timeout reached while waiting for callback for node %s", abandoned)
	if n["last_error"] != want || n["power_state"] != "power off" {
		t.Fatalf("timed out: last_error %v power %v, want %q and power off", n["last_error"], n["power_state"], want)
	}

	// History tells the story, with the time spent in each state.
	h := api(t, p.base, "1.89", http.MethodGet, "/v1/nodes/"+abandoned+"/history?detail=True", nil)
	var hist struct {
		History []struct {
			From     *string  `json:"from_state"`
			To       *string  `json:"to_state"`
			Trigger  *string  `json:"trigger"`
			Duration *float64 `json:"duration_seconds"`
			Event    string
			Severity string
		}
	}
	if err := json.Unmarshal(h.Body, &hist); err != nil || h.Status != http.StatusOK {
		t.Fatalf("history: HTTP %d %v %s", h.Status, err, h.Body)
	}
	var path []string
	waited := -1.0
	for _, e := range hist.History {
		if e.From == nil {
			continue
		}
		path = append(path, *e.From+">"+*e.To)
		if *e.From == "wait call-back" && e.Duration != nil {
			waited = *e.Duration
		}
	}
	wantPath := "enroll>verifying verifying>manageable manageable>cleaning cleaning>available available>deploying deploying>wait call-back wait call-back>deploy failed"
	if strings.Join(path, " ") != wantPath {
		t.Fatalf("history path\n got %s\nwant %s", strings.Join(path, " "), wantPath)
	}
	if waited < 2 {
		t.Fatalf("history says the node waited %v s in wait call-back, want >= the 2 s timeout", waited)
	}
}
