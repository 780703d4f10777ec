package agent_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var timeZero time.Time

// TestHeartbeatToken: with no agent process, the test plays the agent. A
// heartbeat without the token or with a wrong one is refused and changes
// nothing; the token is handed out once and never shown by the API; the
// right token resumes the deploy; a changed callback_url is refused; the
// failed deploy forgets the agent.
func TestHeartbeatToken(t *testing.T) {
	api, srv := startServerProc(t)
	const mac = "52:54:00:aa:bb:02"
	node := createNode(t, api, "token-node", mac)
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, []map[string]any{{"op": "add", "path": "/automated_clean", "value": false}})
	setImage(t, api, node, "http://127.0.0.1:1/none.img", strings.Repeat("a", 64))
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")
	provision(t, api, node, "active")
	waitState(t, api, node, "wait call-back")

	// Before any lookup the token is already required.
	hb := func(body map[string]any) resp { return call(t, "POST", api+"/v1/heartbeat/"+node, body) }
	if r := hb(map[string]any{"callback_url": "http://127.0.0.1:1"}); r.Status != http.StatusUnauthorized {
		t.Fatalf("heartbeat without a token before lookup: HTTP %d: %s", r.Status, r.Body)
	}

	lk := mustCall(t, 200, "GET", api+"/v1/lookup?addresses="+strings.ToUpper(mac), nil).JSON(t)
	cfg := lk["config"].(map[string]any)
	token, _ := cfg["agent_token"].(string)
	if len(token) < 32 || token == "******" || cfg["agent_token_required"] != true || cfg["heartbeat_timeout"] != float64(300) {
		t.Fatalf("first lookup config = %v", cfg)
	}
	if lk["node"].(map[string]any)["uuid"] != node {
		t.Fatalf("lookup found %v", lk["node"])
	}
	again := mustCall(t, 200, "GET", api+"/v1/lookup?node_uuid="+node, nil).JSON(t)
	if got := again["config"].(map[string]any)["agent_token"]; got != "******" {
		t.Fatalf("second lookup handed out the token again: %v", got)
	}

	// The agent answers busy (409: another command runs), so the deploy
	// waits for the next heartbeat; closed, it is unreachable.
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"type": "CommandExecutionError", "code": 409, "message": "busy", "details": "busy"}`))
	}))
	defer busy.Close()
	agentURL := busy.URL
	for name, body := range map[string]map[string]any{
		"no token":    {"callback_url": agentURL},
		"wrong token": {"callback_url": agentURL, "agent_token": token + "x"},
		"empty token": {"callback_url": agentURL, "agent_token": ""},
	} {
		r := hb(body)
		if r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), "Invalid or missing agent token") {
			t.Fatalf("heartbeat with %s: HTTP %d: %s", name, r.Status, r.Body)
		}
		n := getNode(t, api, node)
		if n["provision_state"] != "wait call-back" {
			t.Fatalf("heartbeat with %s moved the node to %v", name, n["provision_state"])
		}
		if _, ok := n["driver_internal_info"].(map[string]any)["agent_url"]; ok {
			t.Fatalf("heartbeat with %s recorded agent_url", name)
		}
	}

	// The API never shows the token or its hashes.
	raw := string(mustCall(t, 200, "GET", api+"/v1/nodes/"+node, nil).Body)
	dii := getNode(t, api, node)["driver_internal_info"].(map[string]any)
	for _, k := range []string{"agent_secret_token"} {
		if dii[k] != "******" {
			t.Errorf("driver_internal_info.%s = %v, want ******", k, dii[k])
		}
	}
	if strings.Contains(raw, token) || strings.Contains(raw, "sha256:") {
		t.Fatalf("node document leaks the token or its hash: %s", raw)
	}

	// The right token resumes (agent_url recorded); the busy agent sends
	// the node back to wait call-back.
	mustCall(t, 202, "POST", api+"/v1/heartbeat/"+node, map[string]any{"callback_url": agentURL, "agent_token": token})
	n := waitState(t, api, node, "wait call-back")
	if got := n["driver_internal_info"].(map[string]any)["agent_url"]; got != agentURL {
		t.Fatalf("agent_url = %v", got)
	}
	// A different callback_url is refused.
	r := hb(map[string]any{"callback_url": "http://127.0.0.1:2", "agent_token": token})
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "callback_url") {
		t.Fatalf("heartbeat with a changed callback_url: HTTP %d: %s", r.Status, r.Body)
	}

	// The agent gone, the next heartbeat fails the deploy saying it is
	// unreachable.
	busy.Close()
	mustCall(t, 202, "POST", api+"/v1/heartbeat/"+node, map[string]any{"callback_url": agentURL, "agent_token": token})
	n = waitState(t, api, node, "deploy failed")
	if le, _ := n["last_error"].(string); !strings.Contains(le, "unreachable") {
		t.Fatalf("last_error = %q", le)
	}
	// The failure (the conductor sent the token to the agent in the query
	// string, as IPA reads it) shows the agent's address, never the token.
	if le, _ := n["last_error"].(string); strings.Contains(le, token) || strings.Contains(le, "agent_token") {
		t.Fatalf("last_error carries the token: %q", le)
	}
	if strings.Contains(srv.Logs.String(), token) {
		t.Fatal("the server's log carries the agent token")
	}
	// The failed deploy forgot the agent (Ironic's wipe_deploy_internal_info:
	// its token and URL go with its ramdisk).
	dii = n["driver_internal_info"].(map[string]any)
	if dii["agent_url"] != nil || dii["agent_secret_token"] != nil {
		t.Errorf("after the failed deploy driver_internal_info keeps the agent: %v", dii)
	}
}
