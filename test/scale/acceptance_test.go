package scale

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestAcceptanceFullSize is issue 15's acceptance at full size on one
// PostgreSQL: 2 API processes (--role api) and 3 conductors (--role
// conductor); 1,000 nodes enrolled and moved with every verb sent to a
// random API process; 700 reach active, each power-synced by exactly one
// conductor. Then 300 deploys (each 20 s long) are sent at once and one
// conductor is killed with -9 while they run: every node settles (active,
// or deploy failed with a last_error naming the dead conductor and a
// history entry of the take-over), none is left locked, none is lost.
func TestAcceptanceFullSize(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size acceptance: not in -short")
	}
	db := pg.URL(t)
	// 300 deploys at once: above Ironic's default max_concurrent_deploy
	// (250, counted over the whole database), as an operator would set it.
	flags := append([]string{"--max-concurrent-deploy", "400"}, ringFlags...)
	var conds []string
	var procs []*testbin.Process
	for i := 0; i < 3; i++ {
		host := fmt.Sprintf("cond-%d", i)
		// 200 workers each: the ring does not divide 300 deploys exactly
		// by three, and a conductor out of workers answers 503 (Ironic's
		// NoFreeConductorWorker).
		_, p := testbin.ServeOn(t, anvilBin, db, host, append([]string{"--role", "conductor", "--workers", "200"}, flags...)...)
		conds, procs = append(conds, host), append(procs, p)
	}
	var apis []string
	for i := 0; i < 2; i++ {
		base, _ := testbin.ServeOn(t, anvilBin, db, fmt.Sprintf("api-%d", i), append([]string{"--role", "api"}, flags...)...)
		apis = append(apis, base)
	}
	pick := func() string { return apis[rand.IntN(len(apis))] }
	verb := func(id, target string) {
		testbin.MustCall(t, http.StatusAccepted, http.MethodPut, pick()+"/v1/nodes/"+id+"/states/provision", map[string]any{"target": target})
	}

	const total, inFlight = 1000, 300
	ids := make([]string, total)
	var wg sync.WaitGroup
	const workers = 16
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := w; i < total && !t.Failed(); i += workers {
				body := map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("full-%04d", i)}
				if i >= total-inFlight {
					body["driver_info"] = map[string]any{"fake_deploy_delay": "20"}
				}
				id := testbin.MustCall(t, http.StatusCreated, http.MethodPost, pick()+"/v1/nodes", body).JSON(t)["uuid"].(string)
				ids[i] = id
				steps := []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}}
				if i >= total-inFlight {
					steps = steps[:2]
				}
				for _, s := range steps {
					verb(id, s.verb)
					testbin.WaitState(t, pick(), id, s.state, 60*time.Second)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Each node's power sync ran on exactly one conductor.
	var got []map[string]int
	waitFor(t, "every node power-synced", 60*time.Second, func() bool {
		got = got[:0]
		for _, p := range procs {
			got = append(got, reads(p.Logs.String(), 0))
		}
		for _, id := range ids {
			if got[0][id]+got[1][id]+got[2][id] == 0 {
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
	t.Logf("power sync shares of %d nodes: %v", total, share)

	// 300 deploys in flight, then kill -9 one conductor.
	deploying := ids[total-inFlight:]
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := w; i < len(deploying); i += workers {
				verb(deploying[i], "active")
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The deploys the victim holds, read in one list just before the kill
	// (each verb took its node's lock before it was answered 202, so no
	// deploy starts on the victim after this list).
	victim := conds[2]
	held := map[string]bool{}
	inList := map[string]bool{}
	for _, id := range deploying {
		inList[id] = true
	}
	for _, n := range testbin.FleetNodes(t, pick()) {
		if id := n["uuid"].(string); inList[id] && n["reservation"] == victim {
			held[id] = true
		}
	}
	if len(held) == 0 {
		t.Fatalf("%s runs none of the %d deploys: nothing to take over", victim, inFlight)
	}
	procs[2].Kill()
	killedAt := time.Now()

	// Everything settles: the survivors finish their deploys and fail the
	// dead one's after the heartbeat timeout (5 s here) and a margin. A
	// deploy of the victim's that finished between the list and the kill
	// is active, reached before the kill.
	failed := 0
	for _, id := range deploying {
		var node map[string]any
		waitFor(t, "node "+id+" settles", 90*time.Second, func() bool {
			node = testbin.GetNode(t, pick(), id)
			s := node["provision_state"]
			return (s == "active" || s == "deploy failed") && node["reservation"] == nil
		})
		switch {
		case node["provision_state"] == "deploy failed":
			failed++
			if !held[id] {
				t.Errorf("node %s: deploy failed, but %s did not hold it: %v", id, victim, node["last_error"])
			}
			if le := fmt.Sprint(node["last_error"]); !strings.Contains(le, victim) {
				t.Errorf("node %s: last_error %q does not say why", id, le)
			}
			h := testbin.MustCall(t, http.StatusOK, http.MethodGet, pick()+"/v1/nodes/"+id+"/history?detail=True", nil)
			if !strings.Contains(string(h.Body), "Lock held by dead conductor "+victim) {
				t.Errorf("history of %s does not show the take-over", id)
			}
		case held[id]:
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(node["provision_updated_at"]))
			if err != nil || at.After(killedAt) {
				t.Errorf("node %s, held by %s at its kill, went active at %v (killed at %s): not taken over",
					id, victim, node["provision_updated_at"], killedAt.UTC().Format(time.RFC3339Nano))
			}
		}
	}
	t.Logf("kill -9 of %s with %d of %d deploys: %d failed with the take-over, %d active; all settled %s after the kill",
		victim, len(held), inFlight, failed, inFlight-failed, time.Since(killedAt).Round(time.Second))
	if failed == 0 {
		t.Errorf("every deploy %s held finished before its kill: the test tests no take-over", victim)
	}
	// None lost, none locked.
	list := testbin.MustCall(t, http.StatusOK, http.MethodGet, pick()+"/v1/nodes?fields=uuid,reservation&limit=1000", nil).JSON(t)
	nodes, _ := list["nodes"].([]any)
	if len(nodes) != total {
		t.Fatalf("%d nodes listed, want %d", len(nodes), total)
	}
	for _, n := range nodes {
		if r := n.(map[string]any)["reservation"]; r != nil {
			t.Fatalf("node left locked: %v", n)
		}
	}
}
