package conductor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// errWriteTimeout stands for a database write that timed out under load
// (SQLite's busy timeout, a group commit that waited past its context).
var errWriteTimeout = errors.New("injected: database write timed out")

// failingStore fails chosen writes of one node before passing them on: the
// lock's release, the save of a node in a given state, history entries.
type failingStore struct {
	conductor.Store
	mu       sync.Mutex
	node     string
	releases int    // releases of node still to fail
	saves    int    // saves of node in saveState still to fail (-1: all)
	state    string // the state whose saves fail
	history  int    // history entries of node still to fail
}

func (s *failingStore) fail(uuid string, left *int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if uuid != s.node || *left == 0 {
		return false
	}
	if *left > 0 {
		*left--
	}
	return true
}

func (s *failingStore) Nodes() store.NodeStore { return failingNodes{s.Store.Nodes(), s} }

// failingNodes is the node store that fails the writes s chose.
type failingNodes struct {
	store.NodeStore
	s *failingStore
}

func (f failingNodes) ReleaseNode(ctx context.Context, uuid, host string) error {
	if s := f.s; s.fail(uuid, &s.releases) {
		return errWriteTimeout
	}
	return f.NodeStore.ReleaseNode(ctx, uuid, host)
}

func (f failingNodes) UpdateNode(ctx context.Context, n *model.Node) error {
	if s := f.s; n.ProvisionState == s.stateOf() && s.fail(n.UUID, &s.saves) {
		return errWriteTimeout
	}
	return f.NodeStore.UpdateNode(ctx, n)
}

func (f failingNodes) AddHistory(ctx context.Context, e *model.HistoryEvent, keep int) error {
	if s := f.s; s.fail(e.NodeUUID, &s.history) {
		return errWriteTimeout
	}
	return f.NodeStore.AddHistory(ctx, e, keep)
}

func (s *failingStore) stateOf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *failingStore) arm(f func(*failingStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// TestFailedWritesStrandNoNode: the writes that timed out at 10,000 nodes
// (a lock's release, a worker's final save, history entries) must never
// leave a node where nothing moves it. A release or save that fails a few
// times is retried until it lands; a save that keeps failing leaves the
// node in its working state, unlocked, and CheckOrphans fails it with a
// last_error that says why, from where it can be deployed again.
func TestFailedWritesStrandNoNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*failingStore)
	}{
		{"release fails 3 times", func(s *failingStore) { s.releases = 3 }},
		{"outcome save fails 3 times", func(s *failingStore) { s.saves, s.state = 3, fsm.Active }},
		{"history fails 3 times", func(s *failingStore) { s.history = 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fs, id := availableOnFailingStore(t)
			before := len(history(t, e, id))
			fs.arm(func(s *failingStore) { s.node = id; tc.arm(s) })
			e.must(id, "active", fsm.Active) // checks the lock is free too
			// available → deploying → active: two transitions
			if got := len(history(t, e, id)) - before; got != 2 {
				t.Fatalf("%d history entries written by the deploy, want 2", got)
			}
		})
	}

	t.Run("outcome save keeps failing", func(t *testing.T) {
		e, fs, id := availableOnFailingStore(t)
		fs.arm(func(s *failingStore) { s.node, s.saves, s.state = id, -1, fsm.Active })
		if err := e.do(id, "active"); err != nil {
			t.Fatal(err)
		}
		n := e.get(id)
		if n.ProvisionState != fsm.Deploying || n.Reservation != "" {
			t.Fatalf("after the failed saves: %q, reservation %q; want deploying and unlocked", n.ProvisionState, n.Reservation)
		}
		fs.arm(func(s *failingStore) { s.saves = 0 })
		if err := e.c.CheckOrphans(e.ctx); err != nil {
			t.Fatal(err)
		}
		n = e.get(id)
		if n.ProvisionState != fsm.DeployFailed || n.Reservation != "" ||
			!strings.Contains(n.LastError, `left in state "deploying" with no conductor working on it`) {
			t.Fatalf("after CheckOrphans: %q, reservation %q, last_error %q; want deploy failed saying why", n.ProvisionState, n.Reservation, n.LastError)
		}
		e.must(id, "active", fsm.Active) // deployable again
	})

	t.Run("waiting and locked nodes are no orphans", func(t *testing.T) {
		e := newEnv(t, nil)
		id := e.create(model.JSON{"fake_wait": "deploy"}).UUID
		e.must(id, "manage", fsm.Manageable)
		e.must(id, "provide", fsm.Available)
		e.must(id, "active", fsm.DeployWait)
		if err := e.c.CheckOrphans(e.ctx); err != nil {
			t.Fatal(err)
		}
		if n := e.get(id); n.ProvisionState != fsm.DeployWait || n.LastError != "" {
			t.Fatalf("a waiting node was touched: %q, %q", n.ProvisionState, n.LastError)
		}
	})
}

// availableOnFailingStore is a conductor on a store whose failures a test
// arms, with one node made available.
func availableOnFailingStore(t *testing.T) (*env, *failingStore, string) {
	fs := &failingStore{}
	e := newEnv(t, func(cfg *conductor.Config) {
		fs.Store, cfg.Store = cfg.Store, fs
		cfg.WriteRetryInterval = time.Millisecond
	})
	id := e.create(model.JSON{}).UUID
	e.must(id, "manage", fsm.Manageable)
	e.must(id, "provide", fsm.Available)
	return e, fs, id
}

func history(t *testing.T, e *env, id string) []*model.HistoryEvent {
	t.Helper()
	h, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
