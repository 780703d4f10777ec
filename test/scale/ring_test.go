package scale

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// ringFlags make periodic work and death detection fast: timeouts are
// configuration, so the test runs in seconds (the timeout leaves room for
// a loaded machine: a conductor that misses it is taken for dead).
var ringFlags = []string{"--log-level", "debug", "--lock-retries", "0", "--automated-clean=false",
	"--sync-power-state-interval", "0.5", "--check-provision-state-interval", "1",
	"--heartbeat-interval", "0.5", "--heartbeat-timeout", "5"}

// powerRead matches the conductor's debug line for one power state read.
var powerRead = regexp.MustCompile(`msg="power state read" conductor=(\S+) node=(\S+)`)

// reads counts, from offset on in logs, the power reads of each node.
func reads(logs string, offset int) map[string]int {
	out := map[string]int{}
	for _, m := range powerRead.FindAllStringSubmatch(logs[offset:], -1) {
		out[m[2]]++
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
}

// Two conductors on one PostgreSQL database: a joining conductor leaves the
// running deploys of the first alone, each node's power sync runs on
// exactly one of them, and when one is killed the other takes over its
// interrupted work and its share of the nodes after the heartbeat timeout.
func TestRingDividesAndTakesOver(t *testing.T) {
	db := pg.URL(t)
	a, procA := testbin.ServeOn(t, anvilBin, db, "cond-a", ringFlags...)

	// Work running on A before B joins.
	var early []string
	for i := 0; i < 3; i++ {
		early = append(early, startDeploy(t, a, fmt.Sprintf("early-%d", i), "4"))
	}
	b, procB := testbin.ServeOn(t, anvilBin, db, "cond-b", ringFlags...)
	markA := len(procA.Logs.String())

	const n = 200
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				node := testbin.MustCall(t, http.StatusCreated, http.MethodPost, a+"/v1/nodes",
					map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("rack-%03d", i)}).JSON(t)
				ids[i] = node["uuid"].(string)
			}
		}()
	}
	wg.Wait()

	for _, id := range early {
		if got := testbin.WaitState(t, a, id, "active", 20*time.Second); got["last_error"] != nil {
			t.Fatalf("deploy running when B joined: last_error %v", got["last_error"])
		}
	}

	// Each node read at least twice in all; never by both.
	var ra, rb map[string]int
	waitFor(t, "every node power-synced twice", 30*time.Second, func() bool {
		ra, rb = reads(procA.Logs.String(), markA), reads(procB.Logs.String(), 0)
		for _, id := range ids {
			if ra[id]+rb[id] < 2 {
				return false
			}
		}
		return true
	})
	ownedB := []string{}
	for _, id := range ids {
		if ra[id] > 0 && rb[id] > 0 {
			t.Fatalf("node %s power-synced by both conductors (%d, %d)", id, ra[id], rb[id])
		}
		if rb[id] > 0 {
			ownedB = append(ownedB, id)
		}
	}
	if len(ownedB) < n/5 || len(ownedB) > n*4/5 {
		t.Fatalf("B synced %d of %d nodes; the ring should share them", len(ownedB), n)
	}
	t.Logf("power sync: A %d nodes, B %d nodes", n-len(ownedB), len(ownedB))

	// Work interrupted on B: deploys B runs (sent to B's API), then kill -9.
	var onB []string
	for i := 0; i < 4; i++ {
		onB = append(onB, startDeploy(t, b, fmt.Sprintf("late-%d", i), "60"))
	}
	for _, id := range onB {
		if r := testbin.GetNode(t, a, id)["reservation"]; r != "cond-b" {
			t.Fatalf("node %s reservation %v, want cond-b", id, r)
		}
	}
	procB.Kill()
	markA = len(procA.Logs.String())

	for _, id := range onB {
		node := testbin.WaitState(t, a, id, "deploy failed", 20*time.Second)
		if le := fmt.Sprint(node["last_error"]); !strings.Contains(le, "conductor take over") || !strings.Contains(le, "cond-b") {
			t.Fatalf("node %s: last_error %q", id, le)
		}
		h := testbin.MustCall(t, http.StatusOK, http.MethodGet, a+"/v1/nodes/"+id+"/history?detail=True", nil)
		if !strings.Contains(string(h.Body), "Lock held by dead conductor cond-b broken by cond-a") {
			t.Fatalf("history of %s does not show the take-over: %s", id, h.Body)
		}
	}
	waitFor(t, "A power-syncs B's former nodes", 30*time.Second, func() bool {
		got := reads(procA.Logs.String(), markA)
		for _, id := range ownedB {
			if got[id] == 0 {
				return false
			}
		}
		return true
	})
	c := testbin.MustCall(t, http.StatusOK, http.MethodGet, a+"/v1/conductors/cond-b", nil).JSON(t)
	if c["alive"] != false {
		t.Fatalf("cond-b alive = %v after kill -9 and the heartbeat timeout", c["alive"])
	}
}
