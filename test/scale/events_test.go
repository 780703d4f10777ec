package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/pkg/events"
)

// sseEvent is one message of a watch stream as a client reads it.
type sseEvent struct {
	ID   uint64
	Type string
	Node string
	To   string // provision_state of node_state, or history's to_state
}

// watch is an open watch stream read into a channel.
type watch struct {
	events chan sseEvent
	first  chan uint64 // the first position the server reports
	cancel context.CancelFunc
	done   chan struct{}
}

// openWatch connects to base's stream (node and history events), resuming
// after lastID when it is non-zero.
func openWatch(t *testing.T, base string, lastID uint64) *watch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		base+events.StreamPath+"?types=node.created,node.updated,node.deleted,node.history", nil)
	if lastID != 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(lastID, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("stream %s: HTTP %d", base, resp.StatusCode)
	}
	w := &watch{events: make(chan sseEvent, 100000), first: make(chan uint64, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur sseEvent
		var data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && cur.Type == "": // a heartbeat: the reader's position
				select {
				case w.first <- cur.ID:
				default:
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				cur.ID, _ = strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			case strings.HasPrefix(line, "event: "):
				cur.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && cur.Type != "":
				var e events.Event
				_ = json.Unmarshal([]byte(data), &e)
				cur.Node = e.Node
				if e.State != nil {
					cur.To = e.State.ProvisionState
				}
				if e.History != nil {
					cur.To = e.History.ToState
				}
				w.events <- cur
				cur, data = sseEvent{}, ""
			}
		}
	}()
	return w
}

func (w *watch) close() {
	w.cancel()
	<-w.done
}

// next returns the stream's next event, failing the test after timeout.
func (w *watch) next(t *testing.T, timeout time.Duration) sseEvent {
	t.Helper()
	select {
	case e := <-w.events:
		return e
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
		return sseEvent{}
	}
}

// Two API processes and a conductor on one PostgreSQL: a watch client of
// API process A sees the events of verbs sent to API process B (whose work
// runs on the conductor); it disconnects in the middle of the traffic and
// resumes on B with Last-Event-ID, and what it saw across both equals what
// a client of B that never disconnected saw: nothing lost, nothing twice.
// Then `anvil node deploy --wait` against A returns once the conductor has
// deployed the node.
func TestWatchAcrossAPIProcesses(t *testing.T) {
	db := pg.URL(t)
	condURL, cond := testbin.ServeOn(t, anvilBin, db, "worker", append([]string{"--role", "conductor"}, ringFlags...)...)
	apiA, _ := testbin.ServeOn(t, anvilBin, db, "front-a", append([]string{"--role", "api"}, ringFlags...)...)
	apiB, _ := testbin.ServeOn(t, anvilBin, db, "front-b", append([]string{"--role", "api"}, ringFlags...)...)

	ref := openWatch(t, apiB, 0) // never disconnects
	defer ref.close()
	onA := openWatch(t, apiA, 0)
	start := <-onA.first

	const n = 12
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := w; i < n; i += 3 {
				node := testbin.MustCall(t, http.StatusCreated, http.MethodPost, apiB+"/v1/nodes",
					map[string]any{"driver": "fake-hardware", "name": fmt.Sprintf("watched-%02d", i)}).JSON(t)
				id := node["uuid"].(string)
				ids[i] = id
				for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}} {
					testbin.MustCall(t, http.StatusAccepted, http.MethodPut, apiB+"/v1/nodes/"+id+"/states/provision",
						map[string]any{"target": step.verb})
					testbin.WaitState(t, apiB, id, step.state, 20*time.Second)
				}
			}
		})
	}

	// A's client reads a part of the traffic, then drops and resumes on B.
	var seen []sseEvent
	for len(seen) < 40 {
		seen = append(seen, onA.next(t, 20*time.Second))
	}
	onA.close()
	for {
		select {
		case e := <-onA.events: // read before the close
			seen = append(seen, e)
			continue
		default:
		}
		break
	}
	cut := len(seen)
	resumed := openWatch(t, apiB, seen[cut-1].ID)
	defer resumed.close()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Once every lock is released, a sentinel node created on A closes the
	// sequence to compare.
	waitFor(t, "every lock released", 20*time.Second, func() bool {
		for _, id := range ids {
			if testbin.GetNode(t, apiB, id)["reservation"] != nil {
				return false
			}
		}
		return true
	})
	sentinel := testbin.MustCall(t, http.StatusCreated, http.MethodPost, apiA+"/v1/nodes",
		map[string]any{"driver": "fake-hardware", "name": "sentinel"}).JSON(t)["uuid"].(string)
	var want []sseEvent
	for len(want) == 0 || want[len(want)-1].Node != sentinel {
		want = append(want, ref.next(t, 20*time.Second))
	}
	last := want[len(want)-1].ID
	for seen[len(seen)-1].ID < last {
		e := resumed.next(t, 20*time.Second)
		if e.Type == events.TypeReset {
			t.Fatalf("resume on B answered reset after %d", seen[len(seen)-1].ID)
		}
		seen = append(seen, e)
	}
	if len(seen) != len(want) {
		t.Fatalf("A then B delivered %d events, B alone %d (first position %d)", len(seen), len(want), start)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("event %d: A then B %+v, B alone %+v", i, seen[i], want[i])
		}
		if i > 0 && want[i].ID <= want[i-1].ID {
			t.Fatalf("event %d: ID %d after %d", i, want[i].ID, want[i-1].ID)
		}
	}
	t.Logf("%d events: %d read on A, the rest resumed on B after ID %d", len(want), cut, want[cut-1].ID)
	if !strings.Contains(cond.Logs.String(), `msg="provision state changed"`) {
		t.Fatal("the conductor made no transition: the test did not cross processes")
	}

	// Transition metrics: API process A counts the conductor's transitions
	// (it follows the log), as does the conductor itself (its own).
	for _, base := range []string{apiA, apiB, condURL} {
		if got := transitionsTo(t, base, "active"); got != n {
			t.Errorf("%s/metrics counts %v transitions to active, want %d", base, got, n)
		}
	}

	// --wait against A for a deploy the conductor runs (and that takes a
	// while, so that the wait cannot be answered by its first read).
	node := testbin.MustCall(t, http.StatusCreated, http.MethodPost, apiA+"/v1/nodes",
		map[string]any{"driver": "fake-hardware", "name": "waited", "driver_info": map[string]any{"fake_deploy_delay": "2"}}).JSON(t)
	id := node["uuid"].(string)
	for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}} {
		testbin.MustCall(t, http.StatusAccepted, http.MethodPut, apiA+"/v1/nodes/"+id+"/states/provision", map[string]any{"target": step.verb})
		testbin.WaitState(t, apiA, id, step.state, 20*time.Second)
	}
	cmd := exec.Command(anvilBin, "node", "deploy", id, "--wait", "30")
	cmd.Env = []string{"OS_ENDPOINT=" + apiA, "OS_AUTH_TYPE=none", "LC_ALL=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("anvil node deploy --wait against A: %v\n%s", err, out)
	}
	if got := testbin.GetNode(t, apiA, id); got["provision_state"] != "active" {
		t.Fatalf("--wait returned with the node %v: %s", got["provision_state"], out)
	}
}

// transitionsTo sums anvil_provision_transitions_total{to=state} of base's
// /metrics.
func transitionsTo(t *testing.T, base, state string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "anvil_provision_transitions_total{") || !strings.Contains(line, `to="`+state+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}
