package api

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// TestHeartbeatNoExistenceOracle: the public heartbeat answers an unknown
// node exactly as it answers a known node with a wrong, empty or missing
// token, whatever state the node is in and however it is named (issue 21,
// item 10); the node's own token is still accepted.
func TestHeartbeatNoExistenceOracle(t *testing.T) {
	e := newEnv(t)
	tokenless := e.mustNode(nodeFixture("hb-tokenless")) // enroll, no token issued
	issued := nodeFixture("hb-issued")
	issued.ProvisionState = "active"
	issued.DriverInternalInfo = model.JSON{"agent_secret_token": "tok-issued-1", "agent_url": "http://127.0.0.1:9999"}
	e.mustNode(issued)
	waiting := nodeFixture("hb-waiting")
	waiting.ProvisionState = "wait call-back"
	waiting.DriverInternalInfo = model.JSON{"agent_token_required": true}
	e.mustNode(waiting)

	ref := e.do("POST", "/v1/heartbeat/00000000-0000-0000-0000-00000000dead", `{"callback_url":"http://127.0.0.1:1","agent_token":"guess"}`, latest)
	if ref.Code != 401 {
		t.Fatalf("unknown node: %d %s, want 401", ref.Code, ref.Body.String())
	}
	cases := []struct{ name, ident, body string }{
		{"unknown name", "no-such-node", `{"callback_url":"http://127.0.0.1:1","agent_token":"guess"}`},
		{"unknown, no token", "no-such-node", `{"callback_url":"http://127.0.0.1:1"}`},
		{"tokenless node by uuid, wrong token", tokenless.UUID, `{"callback_url":"http://127.0.0.1:1","agent_token":"guess"}`},
		{"tokenless node by name, wrong token", "hb-tokenless", `{"callback_url":"http://127.0.0.1:1","agent_token":"guess"}`},
		{"tokenless node, no token", "hb-tokenless", `{"callback_url":"http://127.0.0.1:1"}`},
		{"tokenless node, empty token", "hb-tokenless", `{"callback_url":"http://127.0.0.1:1","agent_token":""}`},
		{"issued node, wrong token", "hb-issued", `{"callback_url":"http://127.0.0.1:1","agent_token":"guess"}`},
		{"issued node, wrong token and callback", "hb-issued", `{"callback_url":"http://127.0.0.1:2","agent_token":"guess"}`},
		{"waiting node, wrong token", "hb-waiting", `{"callback_url":"http://127.0.0.1:1","agent_token":"guess"}`},
		{"waiting node, no token", "hb-waiting", `{"callback_url":"http://127.0.0.1:1"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := e.do("POST", "/v1/heartbeat/"+c.ident, c.body, latest)
			if rec.Code != ref.Code || rec.Body.String() != ref.Body.String() {
				t.Errorf("answered %d %s\nan unknown node gets %d %s", rec.Code, rec.Body.String(), ref.Code, ref.Body.String())
			}
		})
	}
	// The node's own token: accepted.
	if rec := e.do("POST", "/v1/heartbeat/hb-issued", `{"callback_url":"http://127.0.0.1:9999","agent_token":"tok-issued-1"}`, latest); rec.Code != 202 {
		t.Errorf("the node's own token: %d %s, want 202", rec.Code, rec.Body.String())
	}
}
