package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// proc is an `anvil serve` the test starts, kills and restarts itself.
type proc struct {
	*testbin.Process
	base string
}

// launch starts `anvil serve` on db with extra flags and waits until it answers.
func launch(t *testing.T, db, host string, extra ...string) *proc {
	t.Helper()
	base, p := testbin.ServeOn(t, anvilBin, db, host, append([]string{"--lock-retries", "0"}, extra...)...)
	return &proc{Process: p, base: base}
}

// listAll returns every node with full detail.
func listAll(t *testing.T, base string) []map[string]any {
	t.Helper()
	r := api(t, base, "1.89", http.MethodGet, "/v1/nodes/detail?limit=1000", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("list: HTTP %d %s", r.Status, r.Body)
	}
	var body struct{ Nodes []map[string]any }
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Nodes
}

// parallel runs fn for 0..n-1 on 16 goroutines.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// deploySlowly creates n nodes with a port each, brings them to available and
// starts slow deploys; it returns the node UUIDs once all are deploying.
func deploySlowly(t *testing.T, base string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	parallel(n, func(i int) {
		r := api(t, base, "1.89", http.MethodPost, "/v1/nodes", map[string]any{
			"driver": "fake-hardware", "name": fmt.Sprintf("crash-%03d", i),
			"driver_info": map[string]any{"fake_deploy_delay": "60"}})
		if r.Status != http.StatusCreated {
			t.Errorf("create: HTTP %d %s", r.Status, r.Body)
			return
		}
		var node struct{ UUID string }
		_ = json.Unmarshal(r.Body, &node)
		ids[i] = node.UUID
		if r := api(t, base, "1.89", http.MethodPost, "/v1/ports", map[string]any{
			"node_uuid": node.UUID, "address": fmt.Sprintf("52:54:00:00:%02x:%02x", i/256, i%256)}); r.Status != http.StatusCreated {
			t.Errorf("port: HTTP %d %s", r.Status, r.Body)
		}
		for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "deploying"}} {
			if r := api(t, base, "1.89", http.MethodPut, "/v1/nodes/"+node.UUID+"/states/provision", map[string]any{"target": step.verb}); r.Status != http.StatusAccepted {
				t.Errorf("%s: HTTP %d %s", step.verb, r.Status, r.Body)
				return
			}
			if step.state != "deploying" {
				waitState(t, base, node.UUID, step.state)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, n := range listAll(t, base) {
		if n["provision_state"] != "deploying" || n["reservation"] == nil {
			t.Fatalf("node %v not deploying under a lock: %v / %v", n["uuid"], n["provision_state"], n["reservation"])
		}
	}
	return ids
}

// checkRecovered asserts every node is settled, unlocked, with its port, and
// that history tells what happened.
func checkRecovered(t *testing.T, base string, ids []string, why string) {
	t.Helper()
	nodes := listAll(t, base)
	if len(nodes) != len(ids) {
		t.Fatalf("%d nodes after the crash, want %d", len(nodes), len(ids))
	}
	for _, n := range nodes {
		ps, _ := n["provision_state"].(string)
		if n["reservation"] != nil || !(testbin.StableState(ps) || testbin.FailureState(ps)) {
			t.Fatalf("node %v: state %q reservation %v", n["uuid"], ps, n["reservation"])
		}
		if ps != "deploy failed" || !strings.Contains(fmt.Sprint(n["last_error"]), why) {
			t.Fatalf("node %v: state %q last_error %v, want deploy failed mentioning %q", n["uuid"], ps, n["last_error"], why)
		}
	}
	r := api(t, base, "1.89", http.MethodGet, "/v1/ports?limit=1000", nil)
	var ports struct{ Ports []any }
	_ = json.Unmarshal(r.Body, &ports)
	if len(ports.Ports) != len(ids) {
		t.Fatalf("%d ports after the crash, want %d", len(ports.Ports), len(ids))
	}
	h := api(t, base, "1.89", http.MethodGet, "/v1/nodes/"+ids[0]+"/history?detail=True", nil)
	if h.Status != http.StatusOK || !strings.Contains(string(h.Body), why) || !strings.Contains(string(h.Body), "deploy failed") {
		t.Fatalf("history does not tell what happened: HTTP %d %s", h.Status, h.Body)
	}
	// A later deploy works: the nodes are usable again.
	if r := api(t, base, "1.89", http.MethodPatch, "/v1/nodes/"+ids[0], []map[string]any{{"op": "remove", "path": "/driver_info/fake_deploy_delay"}}); r.Status != http.StatusOK {
		t.Fatalf("patch: HTTP %d %s", r.Status, r.Body)
	}
	if r := api(t, base, "1.89", http.MethodPut, "/v1/nodes/"+ids[0]+"/states/provision", map[string]any{"target": "active"}); r.Status != http.StatusAccepted {
		t.Fatalf("redeploy: HTTP %d %s", r.Status, r.Body)
	}
	waitState(t, base, ids[0], "active")
}

// kill -9 mid-deploy, restart under the same name: the restarted conductor
// fails what it was doing and frees its locks before it serves.
func TestCrashRecoverySameHost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "anvil.db")
	p := launch(t, db, "crashy")
	ids := deploySlowly(t, p.base, 100)
	p.Kill()
	q := launch(t, db, "crashy", "--check-provision-state-interval", "1")
	checkRecovered(t, q.base, ids, "conductor crashy restarted")
}

// kill -9 and a different conductor takes over: the dead one's locks are
// broken by the survivor's periodic task once its heartbeat is stale.
func TestCrashRecoveryTakeOver(t *testing.T) {
	db := filepath.Join(t.TempDir(), "anvil.db")
	p := launch(t, db, "doomed")
	ids := deploySlowly(t, p.base, 20)
	p.Kill()
	q := launch(t, db, "survivor", "--heartbeat-timeout", "1")
	deadline := time.Now().Add(15 * time.Second)
	for {
		locked := 0
		for _, n := range listAll(t, q.base) {
			if n["reservation"] != nil {
				locked++
			}
		}
		if locked == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d locks of the dead conductor still held", locked)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkRecovered(t, q.base, ids, "conductor take over")
}

// SIGTERM during work: the process exits within the grace deadline, records
// the interrupted work and leaves no lock.
func TestSIGTERMDuringWork(t *testing.T) {
	db := filepath.Join(t.TempDir(), "anvil.db")
	p := launch(t, db, "graceful", "--shutdown-timeout", "1")
	ids := deploySlowly(t, p.base, 5)
	start := time.Now()
	if err := p.Stop(t); err != nil { // fails the test after testbin.StopTimeout
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	t.Logf("exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	q := launch(t, db, "graceful")
	checkRecovered(t, q.base, ids, "conductor graceful shut down")
}
