package scale

import (
	"database/sql"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// transition matches the conductor's log line for a provision transition.
var transition = regexp.MustCompile(`msg="provision state changed" conductor=(\S+) node=(\S+)`)

// An API-only process hands verbs to the owning conductor through the
// database: 40 nodes go enroll → active and through a power change with
// every verb sent to the API process; every transition is made by a
// conductor process, each node's by one conductor only, none by the API.
func TestAPIProcessHandsVerbsToOwner(t *testing.T) {
	db := pg.URL(t)
	var conds []*testbin.Process
	for i := 0; i < 2; i++ {
		_, p := testbin.ServeOn(t, anvilBin, db, fmt.Sprintf("worker-%d", i), append([]string{"--role", "conductor"}, ringFlags...)...)
		conds = append(conds, p)
	}
	api, apiProc := testbin.ServeOn(t, anvilBin, db, "front", append([]string{"--role", "api"}, ringFlags...)...)

	const n = 40
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				node := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes",
					map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("handed-%02d", i)}).JSON(t)
				id := node["uuid"].(string)
				ids[i] = id
				for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}} {
					testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+id+"/states/provision",
						map[string]any{"target": step.verb})
					testbin.WaitState(t, api, id, step.state, 20*time.Second)
				}
				testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+id+"/states/power",
					map[string]any{"target": "power off"})
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	waitFor(t, "power off everywhere", 20*time.Second, func() bool {
		for _, id := range ids {
			if node := testbin.GetNode(t, api, id); node["power_state"] != "power off" || node["target_power_state"] != nil {
				return false
			}
		}
		return true
	})

	if m := transition.FindString(apiProc.Logs.String()); m != "" {
		t.Fatalf("the API process moved a node itself: %s", m)
	}
	by := map[string]map[string]bool{} // node → conductors that moved it
	for _, p := range conds {
		for _, m := range transition.FindAllStringSubmatch(p.Logs.String(), -1) {
			if by[m[2]] == nil {
				by[m[2]] = map[string]bool{}
			}
			by[m[2]][m[1]] = true
		}
	}
	used := map[string]bool{}
	for _, id := range ids {
		if len(by[id]) != 1 {
			t.Fatalf("node %s moved by %v, want exactly one conductor", id, by[id])
		}
		for c := range by[id] {
			used[c] = true
		}
	}
	if len(used) != 2 {
		t.Fatalf("conductors used: %v; the ring should share 40 nodes between two", used)
	}

	// A node of a group no conductor serves: Ironic's "no valid host".
	g := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes",
		map[string]any{"driver": "fake-hardware", "conductor_group": "nowhere"}).JSON(t)
	r := testbin.Call(t, "latest", http.MethodPut, api+"/v1/nodes/"+g["uuid"].(string)+"/states/provision", map[string]any{"target": "manage"})
	if r.Status != http.StatusBadRequest || !regexp.MustCompile(`No valid host was found`).Match(r.Body) {
		t.Fatalf("verb for a group without conductors: HTTP %d %s", r.Status, r.Body)
	}
}

// An API-only process hands an agent's inventory (POST
// /v1/continue_inspection, found by MAC) to the node's owner: the
// inspection's transitions are the conductor's, none the API process's, and
// the node comes back manageable with the inventory applied. A post for a
// node that is not inspecting gets the owner's 404.
func TestAPIProcessHandsInspection(t *testing.T) {
	db := pg.URL(t)
	_, cond := testbin.ServeOn(t, anvilBin, db, "worker", append([]string{"--role", "conductor"}, ringFlags...)...)
	api, apiProc := testbin.ServeOn(t, anvilBin, db, "front", append([]string{"--role", "api"}, ringFlags...)...)

	const mac = "52:54:00:ee:10:01"
	id := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes", map[string]any{
		"driver": "fake-hardware", "name": "pushed", "inspect_interface": "agent"}).JSON(t)["uuid"].(string)
	testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/ports", map[string]any{"node_uuid": id, "address": mac})
	data := map[string]any{"inventory": map[string]any{
		"cpu":        map[string]any{"count": 2, "architecture": "x86_64"},
		"memory":     map[string]any{"physical_mb": 4096},
		"interfaces": []any{map[string]any{"name": "eth0", "mac_address": mac}},
	}}
	for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"inspect", "inspect wait"}} {
		testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+id+"/states/provision", map[string]any{"target": step.verb})
		testbin.WaitState(t, api, id, step.state, 20*time.Second)
	}
	if r := testbin.Call(t, "1.84", http.MethodPost, api+"/v1/continue_inspection", data); r.Status != http.StatusAccepted {
		t.Fatalf("continue_inspection through the API process: HTTP %d %s", r.Status, r.Body)
	}
	got := testbin.WaitState(t, api, id, "manageable", 20*time.Second)
	if props := got["properties"].(map[string]any); props["cpus"] != float64(2) || props["memory_mb"] != float64(4096) {
		t.Fatalf("properties after the handed-over inspection: %v", props)
	}
	if r := testbin.Call(t, "1.84", http.MethodPost, api+"/v1/continue_inspection", data); r.Status != http.StatusNotFound {
		t.Fatalf("continue_inspection for a manageable node: HTTP %d %s, want 404", r.Status, r.Body)
	}
	if m := transition.FindString(apiProc.Logs.String()); m != "" {
		t.Fatalf("the API process moved the node itself: %s", m)
	}
	if n := len(transition.FindAllString(cond.Logs.String(), -1)); n < 4 {
		t.Fatalf("the conductor logged %d transitions, want the whole inspection", n)
	}
}

// An API-only process hands a new allocation to a conductor: the
// allocation is processed there (its conductor_affinity is the conductor,
// not the API process) and gets the available node of its resource class.
func TestAPIProcessHandsAllocation(t *testing.T) {
	db := pg.URL(t)
	testbin.ServeOn(t, anvilBin, db, "worker", append([]string{"--role", "conductor"}, ringFlags...)...)
	api, _ := testbin.ServeOn(t, anvilBin, db, "front", append([]string{"--role", "api"}, ringFlags...)...)

	id := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes", map[string]any{
		"driver": "fake-hardware", "resource_class": "handed"}).JSON(t)["uuid"].(string)
	for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}} {
		testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+id+"/states/provision", map[string]any{"target": step.verb})
		testbin.WaitState(t, api, id, step.state, 20*time.Second)
	}
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+id+"/states/power", map[string]any{"target": "power off"})
	// Powered off and unlocked: the power task saves the state, then
	// releases the lock, and these processes do not wait for a lock.
	waitFor(t, "the node's power state", 20*time.Second, func() bool {
		n := testbin.GetNode(t, api, id)
		return n["power_state"] == "power off" && n["reservation"] == nil
	})
	r := testbin.Call(t, "1.52", http.MethodPost, api+"/v1/allocations", map[string]any{"resource_class": "handed"})
	if r.Status != http.StatusCreated {
		t.Fatalf("allocation through the API process: HTTP %d %s", r.Status, r.Body)
	}
	alloc := r.JSON(t)["uuid"].(string)
	var got map[string]any
	waitFor(t, "the allocation", 20*time.Second, func() bool {
		got = testbin.Call(t, "1.52", http.MethodGet, api+"/v1/allocations/"+alloc, nil).JSON(t)
		return got["state"] != "allocating"
	})
	if got["state"] != "active" || got["node_uuid"] != id {
		t.Fatalf("allocation: %v", got)
	}
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var affinity string
	if err := conn.QueryRow("SELECT data->>'conductor_affinity' FROM allocations WHERE uuid = $1", alloc).Scan(&affinity); err != nil {
		t.Fatal(err)
	}
	if affinity != "worker" {
		t.Fatalf("allocation processed by %q, want the conductor", affinity)
	}
}
