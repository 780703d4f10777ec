package api

import (
	"fmt"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// availableNode is an available, powered node of a resource class.
func (e *env) availableNode(name, rc string, traits ...string) *model.Node {
	e.t.Helper()
	n := nodeFixture(name)
	n.ProvisionState, n.PowerState, n.ResourceClass, n.Traits = "available", "power off", rc, traits
	return e.mustNode(n)
}

// allocate creates an allocation at latest and waits for the worker.
func (e *env) allocate(body string) map[string]any {
	e.t.Helper()
	rec := e.do("POST", "/v1/allocations", body, latest)
	if rec.Code != 201 {
		e.t.Fatalf("create allocation: %d %s", rec.Code, rec.Body.String())
	}
	e.cond.WaitIdle()
	return decode(e.t, rec)
}

func (e *env) allocation(id string) map[string]any {
	e.t.Helper()
	rec := e.do("GET", "/v1/allocations/"+id, "", latest)
	if rec.Code != 200 {
		e.t.Fatalf("get allocation: %d %s", rec.Code, rec.Body.String())
	}
	return decode(e.t, rec)
}

func TestAllocationLifecycle(t *testing.T) {
	e := newEnv(t)
	e.availableNode("plain", "gpu")
	gold := e.availableNode("gold", "gpu", "CUSTOM_GOLD")
	e.availableNode("cpu", "cpu", "CUSTOM_GOLD")
	created := e.allocate(`{"name": "alloc-1", "resource_class": "gpu", "traits": ["CUSTOM_GOLD"]}`)
	if created["state"] != "allocating" || created["node_uuid"] != nil {
		t.Fatalf("created %v", created)
	}
	a := e.allocation("alloc-1")
	if a["state"] != "active" || a["node_uuid"] != gold.UUID || a["last_error"] != nil {
		t.Fatalf("allocation %v, want active on %s", a, gold.UUID)
	}
	id := a["uuid"].(string)
	node := decode(t, e.do("GET", "/v1/nodes/gold", "", latest))
	if node["allocation_uuid"] != id || node["instance_uuid"] != id {
		t.Fatalf("node allocation_uuid %v instance_uuid %v, want %s", node["allocation_uuid"], node["instance_uuid"], id)
	}
	if fmt.Sprint(node["instance_info"].(map[string]any)["traits"]) != "[CUSTOM_GOLD]" {
		t.Fatalf("instance_info %v", node["instance_info"])
	}
	if got := decode(t, e.do("GET", "/v1/nodes/gold/allocation", "", latest)); got["uuid"] != id {
		t.Fatalf("node allocation %v", got)
	}
	list := decode(t, e.do("GET", "/v1/allocations?state=active&resource_class=gpu", "", latest))["allocations"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["uuid"] != id {
		t.Fatalf("list %v", list)
	}
	// 1.57: name and extra change.
	rec := e.do("PATCH", "/v1/allocations/"+id, `[{"op": "add", "path": "/extra/foo", "value": "bar"}, {"op": "replace", "path": "/name", "value": "renamed"}]`, latest)
	if got := decode(t, rec); rec.Code != 200 || got["name"] != "renamed" || fmt.Sprint(got["extra"]) != "map[foo:bar]" {
		t.Fatalf("patch: %d %v", rec.Code, got)
	}
	// An active node keeps its allocation; in maintenance it can go.
	rec = e.do("PUT", "/v1/nodes/gold/states/provision", `{"target": "active"}`, latest)
	if rec.Code != 202 {
		t.Fatalf("deploy: %d %s", rec.Code, rec.Body.String())
	}
	rec = e.do("DELETE", "/v1/allocations/"+id, "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 409 || msg != "Cannot remove allocation "+id+" for node "+gold.UUID+", because the node is active (and maintenance mode is off)" {
		t.Fatalf("delete from active node: %d %q", rec.Code, msg)
	}
	if rec := e.do("PUT", "/v1/nodes/gold/maintenance", `{"reason": "x"}`, latest); rec.Code != 202 {
		t.Fatalf("maintenance: %d", rec.Code)
	}
	if rec := e.do("DELETE", "/v1/nodes/gold/allocation", "", latest); rec.Code != 204 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body.String())
	}
	node = decode(t, e.do("GET", "/v1/nodes/gold", "", latest))
	if node["allocation_uuid"] != nil || node["instance_uuid"] != nil {
		t.Fatalf("node still allocated: %v %v", node["allocation_uuid"], node["instance_uuid"])
	}
	rec = e.do("GET", "/v1/nodes/gold/allocation", "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 404 || msg != "Allocation for node gold was not found" {
		t.Fatalf("node allocation after delete: %d %q", rec.Code, msg)
	}
}

func TestAllocationFailures(t *testing.T) {
	e := newEnv(t)
	n := e.availableNode("only", "gpu")
	busy := e.availableNode("busy", "gpu")
	_ = busy
	cases := []struct{ body, want string }{
		{`{"resource_class": "nothing"}`, "no available nodes match the resource class nothing"},
		{`{"resource_class": "gpu", "traits": ["CUSTOM_SILVER"]}`, "no suitable nodes have the requested traits CUSTOM_SILVER"},
		{`{"resource_class": "cpu", "candidate_nodes": ["only"]}`, "none of the requested nodes are available and match the resource class cpu"},
	}
	for _, c := range cases {
		created := e.allocate(c.body)
		a := e.allocation(created["uuid"].(string))
		want := "Failed to process allocation " + a["uuid"].(string) + ": " + c.want + "."
		if a["state"] != "error" || a["last_error"] != want || a["node_uuid"] != nil {
			t.Errorf("%s: %v, want error %q", c.body, a, want)
		}
	}
	// Candidates narrow the choice.
	a := e.allocation(e.allocate(`{"resource_class": "gpu", "candidate_nodes": ["` + n.UUID + `"]}`)["uuid"].(string))
	if a["state"] != "active" || a["node_uuid"] != n.UUID || fmt.Sprint(a["candidate_nodes"]) != "["+n.UUID+"]" {
		t.Fatalf("candidate allocation %v", a)
	}
	bad := []struct {
		body   string
		minor  int
		status int
		msg    string
	}{
		{`{}`, MaxMinor, 400, "The resource_class field is mandatory when not backfilling"},
		{`{"resource_class": "gpu", "traits": ["gold"]}`, MaxMinor, 400,
			"Schema error for allocation: 'gold' is not valid under any of the given schemas. Possible root cause: 'gold' does not match '^CUSTOM_[A-Z0-9_]+$'"},
		{`{"resource_class": "gpu", "candidate_nodes": ["ghost"]}`, MaxMinor, 400, "Nodes cannot be found: ghost"},
		{`{"resource_class": "gpu", "name": "a b"}`, MaxMinor, 400, "Cannot create allocation with invalid name 'a b'"},
		{`{"resource_class": "gpu", "node_uuid": "x"}`, MaxMinor, 400, "Schema error for allocation: Additional properties are not allowed ('node_uuid' was unexpected)"},
		{`{"resource_class": "gpu", "owner": "p"}`, 59, 406, "Request not acceptable."},
		{`{"resource_class": "gpu", "node": "only"}`, 57, 400, "Cannot set node when creating an allocation in this API version"},
		{`{"resource_class": "gpu"}`, 51, 405, "The API version does not allow allocations"},
	}
	for _, c := range bad {
		rec := e.do("POST", "/v1/allocations", c.body, at(c.minor))
		if _, msg := faultOf(t, rec); rec.Code != c.status || msg != c.msg {
			t.Errorf("%s at 1.%d: %d %q, want %d %q", c.body, c.minor, rec.Code, msg, c.status, c.msg)
		}
	}
	if rec := e.do("GET", "/v1/allocations", "", at(51)); rec.Code != 404 {
		t.Errorf("list at 1.51: %d", rec.Code)
	}
	if rec := e.do("GET", "/v1/nodes/only/allocation", "", at(51)); rec.Code != 404 {
		t.Errorf("node allocation at 1.51: %d", rec.Code)
	}
	if rec := e.do("PATCH", "/v1/allocations/"+a["uuid"].(string), `[]`, at(56)); rec.Code != 405 {
		t.Errorf("patch at 1.56: %d", rec.Code)
	}
	// Removing the instance of an allocated available node drops the allocation.
	if rec := e.do("PATCH", "/v1/nodes/only", `[{"op": "remove", "path": "/instance_uuid"}]`, latest); rec.Code != 200 {
		t.Fatalf("remove instance_uuid: %d %s", rec.Code, rec.Body.String())
	}
	if rec := e.do("GET", "/v1/allocations/"+a["uuid"].(string), "", latest); rec.Code != 404 {
		t.Errorf("allocation after instance_uuid removal: %d", rec.Code)
	}
	if got := decode(t, e.do("GET", "/v1/nodes/only", "", latest))["allocation_uuid"]; got != nil {
		t.Errorf("node allocation_uuid %v", got)
	}
}

func TestAllocationBackfill(t *testing.T) {
	e := newEnv(t)
	n := nodeFixture("deployed")
	n.ProvisionState, n.PowerState, n.ResourceClass = "active", "power on", "gpu"
	n.InstanceUUID = "9a4a6c88-2d1c-4e38-9d6f-1c5a3c1f4f10"
	e.mustNode(n)
	rec := e.do("POST", "/v1/allocations", `{"node": "deployed"}`, latest)
	if rec.Code != 201 {
		t.Fatalf("backfill: %d %s", rec.Code, rec.Body.String())
	}
	a := decode(t, rec)
	if a["uuid"] != n.InstanceUUID || a["state"] != "active" || a["node_uuid"] != n.UUID || a["resource_class"] != "gpu" {
		t.Fatalf("backfilled %v", a)
	}
	if got := decode(t, e.do("GET", "/v1/nodes/deployed", "", latest))["allocation_uuid"]; got != n.InstanceUUID {
		t.Fatalf("node allocation_uuid %v", got)
	}
	avail := e.availableNode("idle", "gpu")
	rec = e.do("POST", "/v1/allocations", `{"node": "idle", "name": "bf"}`, latest)
	wantMsg := ": Cannot backfill an allocation for node " + avail.UUID + ": Node must be in the \"active\" state, but the current state is \"available\"."
	if code, msg := faultOf(t, rec); rec.Code != 400 || len(msg) < len(wantMsg) || msg[len(msg)-len(wantMsg):] != wantMsg {
		t.Fatalf("backfill of available node: %d %s %q", rec.Code, code, msg)
	}
	if got := e.allocation("bf"); got["state"] != "error" || got["node_uuid"] != nil {
		t.Fatalf("failed backfill allocation %v", got)
	}
}
