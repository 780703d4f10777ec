package api

import (
	"context"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

func TestNodePatch(t *testing.T) {
	allowed := strings.Join(nodePatchAllowed, ", ")
	tests := []struct {
		name    string
		node    func(n *model.Node)
		patch   string
		query   string
		version string
		status  int
		msg     string
		check   func(t *testing.T, n *model.Node)
	}{
		{name: "replace name", patch: `[{"op":"replace","path":"/name","value":"new-name"}]`, status: 200,
			check: func(t *testing.T, n *model.Node) { want(t, n.Name, "new-name") }},
		{name: "add extra key", patch: `[{"op":"add","path":"/extra/foo","value":{"a":[1,2]}}]`, status: 200,
			check: func(t *testing.T, n *model.Node) { want(t, len(n.Extra), 1) }},
		{name: "remove extra", patch: `[{"op":"add","path":"/extra/a","value":1},{"op":"remove","path":"/extra"}]`, status: 200,
			check: func(t *testing.T, n *model.Node) { want(t, len(n.Extra), 0) }},
		{name: "boolean words", patch: `[{"op":"replace","path":"/maintenance","value":"yes"}]`, status: 200,
			check: func(t *testing.T, n *model.Node) { want(t, n.Maintenance, true) }},
		{name: "conductor group lower-cased", patch: `[{"op":"replace","path":"/conductor_group","value":"GRP"}]`, status: 200,
			check: func(t *testing.T, n *model.Node) { want(t, n.ConductorGroup, "grp") }},
		{name: "remove name", patch: `[{"op":"remove","path":"/name"}]`, status: 200,
			check: func(t *testing.T, n *model.Node) { want(t, n.Name, "") }},
		{name: "read-only field", patch: `[{"op":"replace","path":"/provision_state","value":"active"}]`, status: 400,
			msg: "Cannot patch /provision_state. Only the following can be updated: " + allowed},
		{name: "unknown root", patch: `[{"op":"add","path":"/foo","value":1}]`, status: 400,
			msg: "Cannot patch /foo. Only the following can be updated: " + allowed},
		{name: "remove driver", patch: `[{"op":"remove","path":"/driver"}]`, status: 400,
			msg: "Schema error for patch: 'driver' is a required property"},
		{name: "driver wrong type", patch: `[{"op":"replace","path":"/driver","value":5}]`, status: 400,
			msg: "Schema error for patch: 5 is not of type 'string'"},
		{name: "extra wrong type", patch: `[{"op":"replace","path":"/extra","value":"str"}]`, status: 400,
			msg: "Schema error for patch: 'str' is not of type 'object', 'null'"},
		{name: "remove missing key", patch: `[{"op":"remove","path":"/extra/nokey"}]`, status: 400,
			msg: "Couldn't apply patch '{'op': 'remove', 'path': '/extra/nokey'}'. Reason: can't remove a non-existent object 'nokey'"},
		{name: "replace missing key", patch: `[{"op":"replace","path":"/extra/x","value":1}]`, status: 400,
			msg: "Couldn't apply patch '{'op': 'replace', 'path': '/extra/x', 'value': 1}'. Reason: can't replace a non-existent object 'x'"},
		{name: "add below missing key", patch: `[{"op":"add","path":"/extra/a/b","value":1}]`, status: 400,
			msg: "Couldn't apply patch '{'op': 'add', 'path': '/extra/a/b', 'value': 1}'. Reason: member 'a' not found in {}"},
		{name: "missing value", patch: `[{"op":"replace","path":"/name"}]`, status: 400,
			msg: "Couldn't apply patch '{'op': 'replace', 'path': '/name'}'. Reason: The operation does not contain a 'value' member"},
		{name: "move op", patch: `[{"op":"move","path":"/extra","from":"/properties"}]`, status: 400,
			msg: "Schema error for patch: Additional properties are not allowed ('from' was unexpected)"},
		{name: "test op", patch: `[{"op":"test","path":"/extra","value":{}}]`, status: 400,
			msg: "Schema error for patch: 'test' is not one of ['add', 'replace', 'remove']"},
		{name: "not a list", patch: `{"op":"replace"}`, status: 400,
			msg: "Schema error for patch: {'op': 'replace'} is not of type 'array'"},
		{name: "bad path", patch: `[{"op":"add","path":"/extra/a.b","value":1}]`, version: at(97), status: 400,
			msg: `Schema error for patch: '/extra/a.b' does not match '^(/[\\w-]+)+$'`},
		{name: "bad path from 1.98", patch: `[{"op":"add","path":"/extra/a.b","value":1}]`, status: 400,
			msg: `Schema error for patch: '/extra/a.b' does not match '^(/([\\w-]|~[01])+)+$'`},
		{name: "invalid name", patch: `[{"op":"replace","path":"/name","value":"bad name"}]`, status: 400,
			msg: "Node pn: Cannot change name to invalid name 'bad name'"},
		{name: "null name", patch: `[{"op":"replace","path":"/name","value":null}]`, status: 400,
			msg: "Node pn: Cannot change name to invalid name 'None'"},
		{name: "name at 1.4", patch: `[{"op":"replace","path":"/name","value":"x"}]`, version: at(4), status: 404},
		{name: "field newer than version", patch: `[{"op":"replace","path":"/owner","value":"x"}]`, version: at(49), status: 406},
		{name: "bad uuid", patch: `[{"op":"replace","path":"/instance_uuid","value":"notuuid"}]`, status: 400,
			msg: "Expected UUID for instance_uuid: notuuid"},
		{name: "bad boolean", patch: `[{"op":"replace","path":"/maintenance","value":"maybe"}]`, status: 400,
			msg: "Invalid maintenance: Unrecognized value 'maybe'"},
		{name: "unknown driver", patch: `[{"op":"replace","path":"/driver","value":"nodriver"}]`, status: 400,
			msg: "No valid host was found."},
		{name: "reset without driver", patch: `[{"op":"replace","path":"/name","value":"x"}]`, query: "?reset_interfaces=true", status: 400,
			msg: "The reset_interfaces parameter can only be used when changing the node's driver."},
		{name: "reset before 1.45", patch: `[]`, query: "?reset_interfaces=true", version: at(44), status: 406},
		{name: "reset interfaces", patch: `[{"op":"replace","path":"/driver","value":"fake-hardware"},{"op":"replace","path":"/power_interface","value":"fake"}]`,
			node:  func(n *model.Node) { n.Interfaces.Network = "flat" },
			query: "?reset_interfaces=True", status: 200, check: func(t *testing.T, n *model.Node) {
				want(t, n.Interfaces.Power, "fake")
				want(t, n.Interfaces.Deploy, "fake")
				want(t, n.Interfaces.Network, "noop") // the default again
			}},
		{name: "description too long", patch: `[{"op":"replace","path":"/description","value":"` + strings.Repeat("d", 4097) + `"}]`, status: 400,
			msg: "Cannot update node with description exceeding 4096 characters"},
		{name: "transition in progress", node: func(n *model.Node) { n.ProvisionState, n.TargetProvisionState = "deploying", "active" },
			patch: `[{"op":"replace","path":"/name","value":"x"}]`, status: 409, msg: "Node pn can not be updated while a state transition is in progress."},
		{name: "update allowed in deploy failed", node: func(n *model.Node) { n.ProvisionState, n.TargetProvisionState = "deploy failed", "active" },
			patch: `[{"op":"replace","path":"/name","value":"x"}]`, status: 200},
		{name: "inspecting", node: func(n *model.Node) { n.ProvisionState = "inspecting" },
			patch: `[{"op":"replace","path":"/extra","value":{}}]`, status: 409},
		{name: "locked", node: func(n *model.Node) { n.Reservation = "other" },
			patch: `[{"op":"replace","path":"/extra","value":{}}]`, status: 409, msg: "is locked by host other"},
		{name: "missing parent", patch: `[{"op":"replace","path":"/parent_node","value":"ghost"}]`, status: 400,
			msg: "Unable to apply the requested parent_node 'ghost'. Requested value was invalid."},
		{name: "empty body", patch: ``, status: 400, msg: "Schema error for patch: {} is not of type 'array'"},
		{name: "empty list is a no-op", patch: `[]`, status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			n := nodeFixture("pn")
			n.Extra = model.JSON{}
			if tc.node != nil {
				tc.node(n)
			}
			e.mustNode(n)
			if n.Reservation != "" {
				if _, err := e.st.Nodes().ReserveNode(context.Background(), n.UUID, n.Reservation); err != nil {
					t.Fatal(err)
				}
			}
			version := tc.version
			if version == "" {
				version = latest
			}
			rec := e.do("PATCH", "/v1/nodes/pn"+tc.query, tc.patch, version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code != 200 {
				if _, msg := faultOf(t, rec); !strings.Contains(msg, tc.msg) {
					t.Errorf("message %q\nwant     %q", msg, tc.msg)
				}
				return
			}
			if strings.Contains(rec.Body.String(), "s3cret-pw") {
				t.Error("secret in PATCH response")
			}
			got, _ := e.st.Nodes().GetNode(context.Background(), n.UUID)
			if got.DriverInfo["ipmi_password"] != "s3cret-pw" {
				t.Error("PATCH lost the real secret")
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func want[T comparable](t *testing.T, got, w T) {
	t.Helper()
	if got != w {
		t.Errorf("got %v, want %v", got, w)
	}
}
