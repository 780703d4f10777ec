package scale

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// Three processes on one PostgreSQL database, every verb sent to a random
// one: every node reaches active, unlocked and without error, and each
// node's power sync runs on exactly one conductor.
func TestThreeProcessesRandomVerbs(t *testing.T) {
	db := pg.URL(t)
	var bases []string
	var procs []*testbin.Process
	for i := 0; i < 3; i++ {
		base, p := testbin.ServeOn(t, anvilBin, db, fmt.Sprintf("fleet-%d", i), ringFlags...)
		bases, procs = append(bases, base), append(procs, p)
	}
	pick := func() string { return bases[rand.IntN(len(bases))] }

	const n = 150
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 6 {
				node := testbin.MustCall(t, http.StatusCreated, http.MethodPost, pick()+"/v1/nodes",
					map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("fleet-%03d", i)}).JSON(t)
				id := node["uuid"].(string)
				ids[i] = id
				for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}} {
					testbin.MustCall(t, http.StatusAccepted, http.MethodPut, pick()+"/v1/nodes/"+id+"/states/provision",
						map[string]any{"target": step.verb})
					testbin.WaitState(t, pick(), id, step.state, 20*time.Second)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, id := range ids {
		node := testbin.GetNode(t, pick(), id)
		if node["provision_state"] != "active" || node["reservation"] != nil || node["last_error"] != nil {
			t.Fatalf("node %s: %v / %v / %v", id, node["provision_state"], node["reservation"], node["last_error"])
		}
	}

	var got []map[string]int
	waitFor(t, "every node power-synced twice", 30*time.Second, func() bool {
		got = got[:0]
		for _, p := range procs {
			got = append(got, reads(p.Logs.String(), 0))
		}
		for _, id := range ids {
			if got[0][id]+got[1][id]+got[2][id] < 2 {
				return false
			}
		}
		return true
	})
	share := make([]int, len(procs))
	for _, id := range ids {
		by := 0
		for i := range procs {
			if got[i][id] > 0 {
				by++
				share[i]++
			}
		}
		if by != 1 {
			t.Fatalf("node %s power-synced by %d conductors", id, by)
		}
	}
	for i, s := range share {
		if s == 0 {
			t.Fatalf("conductor %d synced no node: %v", i, share)
		}
	}
	t.Logf("power sync shares: %v", share)
}
