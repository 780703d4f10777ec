package workq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// open migrates a fresh schema and opens a queue on it.
func open(t *testing.T) *Queue {
	t.Helper()
	dsn := pg.DSN(t)
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	q, err := Open(context.Background(), dsn, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// serve runs Serve for owner until the test ends.
func serve(t *testing.T, q *Queue, owner string, h Handler, poll time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = q.Serve(ctx, owner, h, poll) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestAnswers(t *testing.T) {
	q := open(t)
	serve(t, q, "c1", func(_ context.Context, kind, node string, body []byte) ([]byte, error) {
		switch kind {
		case "ok":
			if node != "n1" || string(body) != `{"target":"active"}` {
				return nil, fault.New(fault.Invalid, "got %s %s", node, body)
			}
			return nil, nil
		case "reply":
			return []byte(`{"url":"http://` + node + `"}`), nil
		case "fault":
			return []byte("not sent"), fault.New(fault.Conflict, "Node %s is locked by host x.", node)
		}
		return nil, errors.New("secret internals")
	}, time.Hour) // only NOTIFY can wake it
	ctx := context.Background()
	if err := q.Call(ctx, "c1", "ok", "n1", map[string]string{"target": "active"}, 10*time.Second); err != nil {
		t.Fatalf("ok: %v", err)
	}
	if r, err := q.CallReply(ctx, "c1", "reply", "n4", nil, 10*time.Second); err != nil || string(r) != `{"url":"http://n4"}` {
		t.Fatalf("reply: %q %v", r, err)
	}
	if r, err := q.CallReply(ctx, "c1", "fault", "n5", nil, 10*time.Second); err == nil || r != nil {
		t.Fatalf("a fault's reply: %q %v", r, err)
	}
	err := q.Call(ctx, "c1", "fault", "n2", nil, 10*time.Second)
	if f, ok := fault.As(err); !ok || f.Kind != fault.Conflict || f.Msg != "Node n2 is locked by host x." {
		t.Fatalf("fault: %#v", err)
	}
	err = q.Call(ctx, "c1", "boom", "n3", nil, 10*time.Second)
	if _, ok := fault.As(err); err == nil || ok || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("internal error: %v", err)
	}
	assertEmpty(t, q)
}

func assertEmpty(t *testing.T, q *Queue) {
	t.Helper()
	var n int
	if err := q.db.QueryRow("SELECT count(*) FROM conductor_calls").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d calls left in the table (%v)", n, err)
	}
}

// Nobody serves the owner: the call is withdrawn and answered 503.
func TestUntakenCallWithdrawn(t *testing.T) {
	q := open(t)
	serve(t, q, "someone-else", func(context.Context, string, string, []byte) ([]byte, error) {
		t.Error("another owner's call was run")
		return nil, nil
	}, 10*time.Millisecond)
	err := q.Call(context.Background(), "gone", "ok", "n1", nil, 200*time.Millisecond)
	if fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("err = %v, want Unavailable", err)
	}
	assertEmpty(t, q)
}

// Two consumers of one owner run each of many concurrent calls once.
func TestEachCallRunsOnce(t *testing.T) {
	q := open(t)
	var mu sync.Mutex
	runs := map[string]int{}
	h := func(_ context.Context, _, node string, _ []byte) ([]byte, error) {
		mu.Lock()
		runs[node]++
		mu.Unlock()
		return nil, nil
	}
	serve(t, q, "c1", h, 20*time.Millisecond)
	serve(t, q, "c1", h, 20*time.Millisecond)
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := q.Call(context.Background(), "c1", "ok", fmt.Sprintf("n%d", i), nil, 20*time.Second); err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 60; i++ {
		if n := runs[fmt.Sprintf("n%d", i)]; n != 1 {
			t.Fatalf("call n%d ran %d times", i, n)
		}
	}
	assertEmpty(t, q)
}

// A call its caller abandoned long ago (a crashed API process) is never run,
// and the owner deletes it.
func TestStaleCallNotRun(t *testing.T) {
	q := open(t)
	if _, err := q.db.Exec(`INSERT INTO conductor_calls (owner, kind, node_uuid, body, created_at)
		VALUES ('c1', 'ok', 'old', '{}', now() - interval '10 minutes')`); err != nil {
		t.Fatal(err)
	}
	serve(t, q, "c1", func(_ context.Context, _, node string, _ []byte) ([]byte, error) {
		if node == "old" {
			t.Error("a stale call was run")
		}
		return nil, nil
	}, 10*time.Millisecond)
	// A fresh call is answered: by then the owner has passed over the old one.
	if err := q.Call(context.Background(), "c1", "ok", "new", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNone(t, q, "", "calls left; the stale one should be deleted")
}

// Calls for different nodes run at once; calls for one node run one at a
// time, in the order they were queued.
func TestCallsRunConcurrentlyButInOrderPerNode(t *testing.T) {
	q := open(t)
	for i := 1; i <= 5; i++ {
		for _, n := range []string{"n1", "n2", "n3"} {
			if _, err := q.db.Exec(`INSERT INTO conductor_calls (owner, kind, node_uuid, body) VALUES ('c1', 'ok', $1, $2)`,
				n, strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var (
		mu            sync.Mutex
		order         = map[string][]string{}
		running       = map[string]int{}
		inAll, maxAll int
		maxNode       int
	)
	serve(t, q, "c1", func(_ context.Context, _, node string, body []byte) ([]byte, error) {
		mu.Lock()
		running[node]++
		inAll++
		maxAll, maxNode = max(maxAll, inAll), max(maxNode, running[node])
		order[node] = append(order[node], string(body))
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // long enough for calls of other nodes to overlap
		mu.Lock()
		running[node]--
		inAll--
		mu.Unlock()
		return nil, nil
	}, 20*time.Millisecond)
	waitNone(t, q, " WHERE NOT done", "calls not run")
	mu.Lock()
	defer mu.Unlock()
	for _, n := range []string{"n1", "n2", "n3"} {
		if got := strings.Join(order[n], ","); got != "1,2,3,4,5" {
			t.Errorf("%s's calls ran in the order %s", n, got)
		}
	}
	if maxNode != 1 {
		t.Errorf("%d calls of one node ran at once", maxNode)
	}
	if maxAll < 2 {
		t.Errorf("calls of 3 nodes never ran at once (at most %d)", maxAll)
	}
}

// A caller is told of its answer: it does not poll for it every few
// milliseconds while the owner works (a second's call is looked for a
// handful of times, not ~200), and it still gets its answer when the
// connection that tells it is cut.
func TestAnswerNotified(t *testing.T) {
	q := open(t)
	serve(t, q, "c1", func(_ context.Context, kind, _ string, _ []byte) ([]byte, error) {
		if kind == "slow" {
			time.Sleep(time.Second)
		}
		return []byte(kind), nil
	}, time.Hour)
	ctx := context.Background()
	if _, err := q.CallReply(ctx, "c1", "warm", "n1", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	before := q.checks.Load()
	if r, err := q.CallReply(ctx, "c1", "slow", "n1", nil, 10*time.Second); err != nil || string(r) != "slow" {
		t.Fatalf("slow call: %q %v", r, err)
	}
	if n := q.checks.Load() - before; n > 8 {
		t.Errorf("the caller looked for its answer %d times during a 1 s call", n)
	}
	// Cut the answer listener's connection: the call is answered anyway.
	if _, err := q.db.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN ` + answered + `'`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if r, err := q.CallReply(ctx, "c1", "after", fmt.Sprintf("n%d", i), nil, 10*time.Second); err != nil || string(r) != "after" {
			t.Fatalf("after the listener was cut: %q %v", r, err)
		}
	}
	assertEmpty(t, q)
}

// waitNone waits (20 s at most) until no row of conductor_calls matches
// where, and fails with what when some still do.
func waitNone(t *testing.T, q *Queue, where, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := q.db.QueryRow("SELECT count(*) FROM conductor_calls" + where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s", n, what)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}
