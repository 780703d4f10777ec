package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// node classes of the batch test, by index.
func lockedNode(i int) bool  { return i%20 == 5 }  // a slow power action holds its lock
func failingNode(i int) bool { return i%20 == 11 } // verification fails
func managedNode(i int) bool { return i%50 == 17 } // already manageable: manage is refused

// TestBatch500 manages 500 fake nodes in one command while some are locked
// by a slow power action and some fail, and checks every node's result,
// the exit status and that no node is left half-done. The server runs
// with --lock-retries 0, so locks reach the client as 409 and the client
// must retry them.
func TestBatch500(t *testing.T) {
	t.Parallel()
	const total = 500
	base := startServer(t, "--lock-retries", "0")
	names := make([]string, total)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				info := map[string]any{}
				switch {
				case lockedNode(i):
					info["fake_power_delay"] = 5
				case failingNode(i):
					info["fake_fail"] = "verify"
				}
				body := map[string]any{"driver": "fake-hardware", "name": names[i], "driver_info": info}
				if status, data := apiCall(t, base, http.MethodPost, "/v1/nodes", body); status != http.StatusCreated {
					t.Errorf("create %s: HTTP %d: %s", names[i], status, data)
				}
			}
		}()
	}
	for i := range total {
		names[i] = fmt.Sprintf("n%03d", i)
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var managed, locked []string
	for i, n := range names {
		if managedNode(i) {
			managed = append(managed, n)
		}
		if lockedNode(i) {
			locked = append(locked, n)
		}
	}
	anvil(t, base, append([]string{"node", "manage", "--wait", "60", "-f", "value"}, managed...)...)
	anvil(t, base, append([]string{"node", "power", "on", "-f", "value"}, locked...)...)

	r := run(t, base, "", anvilBin, "node", "manage", "--all", "--wait", "120", "--concurrency", "16",
		"--retry-interval", "0.2", "--max-retries", "40", "-f", "json")
	if r.code != 1 {
		t.Fatalf("a batch with failures must exit 1, got %d\nstderr: %s", r.code, r.stderr)
	}
	if want := fmt.Sprintf("manage failed on %d of %d nodes\n", countIf(total, failingNode)+len(managed), total); !strings.HasSuffix(r.stderr, want) {
		t.Errorf("stderr does not end with %q:\n%s", want, tail(r.stderr, 5))
	}
	if lines := strings.Count(r.stderr, "\nmanage n") + 1; lines != total {
		t.Errorf("%d progress lines on stderr, want one per node (%d)", lines, total)
	}
	var rows []struct {
		Node, Result, State, Error string
		Retries                    int
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != total {
		t.Fatalf("result table: %d rows, %v", len(rows), err)
	}
	retried, seen := 0, map[string]bool{}
	for _, row := range rows {
		var i int
		if _, err := fmt.Sscanf(row.Node, "n%03d", &i); err != nil || seen[row.Node] {
			t.Fatalf("unexpected or repeated row %+v", row)
		}
		seen[row.Node] = true
		switch {
		case failingNode(i):
			if row.Result != "failed" || row.State != "enroll" || !strings.Contains(row.Error, "fake verify failure requested by driver_info fake_fail") {
				t.Errorf("failing %s: %+v", row.Node, row)
			}
		case managedNode(i):
			if row.Result != "failed" || !strings.Contains(row.Error, `can not be performed on node`) ||
				!strings.Contains(row.Error, `while it is in state "manageable". (HTTP 400)`) {
				t.Errorf("already managed %s: %+v", row.Node, row)
			}
		default:
			if row.Result != "ok" || row.State != "manageable" || row.Error != "" {
				t.Errorf("%s: %+v", row.Node, row)
			}
		}
		if lockedNode(i) && row.Retries > 0 {
			retried++
		}
	}
	if retried == 0 {
		t.Errorf("no locked node was retried: the lock test proved nothing")
	}
	t.Logf("%d of %d locked nodes went through after 409 retries", retried, len(locked))

	// No node is left half-done: every one is settled, unlocked, in the
	// state its result says.
	for _, n := range listNodes(t, base, "name,provision_state,target_provision_state,reservation,target_power_state,last_error") {
		name, _ := n["name"].(string)
		var i int
		fmt.Sscanf(name, "n%03d", &i)
		want := "manageable"
		if failingNode(i) {
			want = "enroll"
		}
		if n["provision_state"] != want || n["target_provision_state"] != nil || n["reservation"] != nil || n["target_power_state"] != nil {
			t.Errorf("%s left as %v/%v reserved by %v (power target %v), want %s", name,
				n["provision_state"], n["target_provision_state"], n["reservation"], n["target_power_state"], want)
		}
	}
}

func countIf(n int, f func(int) bool) int {
	c := 0
	for i := range n {
		if f(i) {
			c++
		}
	}
	return c
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
