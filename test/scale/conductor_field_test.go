package scale

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestConductorFieldIsRingOwner: under --role api a node's "conductor" is
// the conductor the hash ring maps it to, the one that runs its verbs, as
// Ironic shows it; never the API process (issue 21, item 6). Two conductor
// processes and one API process on PostgreSQL; every node is shown with
// the conductor whose log records its transition, on the node and in the
// list, and a node of a group nobody serves has none.
func TestConductorFieldIsRingOwner(t *testing.T) {
	db := pg.URL(t)
	var conds []*testbin.Process
	for i := 0; i < 2; i++ {
		_, p := testbin.ServeOn(t, anvilBin, db, fmt.Sprintf("owner-%d", i), append([]string{"--role", "conductor"}, ringFlags...)...)
		conds = append(conds, p)
	}
	api, _ := testbin.ServeOn(t, anvilBin, db, "front", append([]string{"--role", "api"}, ringFlags...)...)
	waitFor(t, "both conductors alive", 30*time.Second, func() bool {
		alive := 0
		for _, c := range testbin.MustCall(t, http.StatusOK, http.MethodGet, api+"/v1/conductors", nil).JSON(t)["conductors"].([]any) {
			c := c.(map[string]any)
			if c["alive"] == true && (c["hostname"] == "owner-0" || c["hostname"] == "owner-1") {
				alive++
			}
		}
		return alive == 2
	})

	const n = 16
	ids := make([]string, n)
	for i := range ids {
		node := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes",
			map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("owned-%02d", i)}).JSON(t)
		ids[i] = node["uuid"].(string)
		testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+ids[i]+"/states/provision", map[string]any{"target": "manage"})
	}
	for _, id := range ids {
		testbin.WaitState(t, api, id, "manageable", 20*time.Second)
	}
	moved := map[string]string{} // node → the conductor that moved it
	for _, p := range conds {
		for _, m := range transition.FindAllStringSubmatch(p.Logs.String(), -1) {
			moved[m[2]] = m[1]
		}
	}
	listed := map[string]any{}
	for _, e := range testbin.MustCall(t, http.StatusOK, http.MethodGet, api+"/v1/nodes?fields=uuid,conductor", nil).JSON(t)["nodes"].([]any) {
		e := e.(map[string]any)
		listed[e["uuid"].(string)] = e["conductor"]
	}
	used := map[any]bool{}
	for _, id := range ids {
		shown := testbin.GetNode(t, api, id)["conductor"]
		if shown != moved[id] || shown == "front" {
			t.Errorf("node %s: conductor %v, but %q moved it", id, shown, moved[id])
		}
		if listed[id] != shown {
			t.Errorf("node %s: listed with conductor %v, shown with %v", id, listed[id], shown)
		}
		used[shown] = true
	}
	if len(used) != 2 {
		t.Errorf("conductors shown: %v; the ring shares 16 nodes between two", used)
	}
	g := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes",
		map[string]any{"driver": "fake-hardware", "conductor_group": "nowhere"}).JSON(t)
	if c := testbin.GetNode(t, api, g["uuid"].(string))["conductor"]; c != nil {
		t.Errorf("node of a group no conductor serves: conductor %v, want null", c)
	}
}
