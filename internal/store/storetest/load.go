package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testMigrate(t *testing.T, su suite) {
	s := su.fresh(t)
	m, ok := s.(Migrator)
	if !ok {
		t.Skipf("%T does not implement storetest.Migrator", s)
	}
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("before"))
	wantErr(t, "MigrateDown", m.MigrateDown(ctx), nil)
	if _, err := s.Nodes().GetNode(ctx, n.UUID); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetNode after MigrateDown = %v, want a missing-table error", err)
	}
	wantErr(t, "MigrateDown twice", m.MigrateDown(ctx), nil)
	wantErr(t, "MigrateUp", m.MigrateUp(ctx), nil)
	if count, err := s.Nodes().CountNodes(ctx, store.NodeQuery{}); err != nil || count != 0 {
		t.Fatalf("CountNodes after down and up = %d, %v; want an empty store", count, err)
	}
	again := mustCreateNode(t, s, newNode("after"))
	wantErr(t, "MigrateUp twice", m.MigrateUp(ctx), nil)
	mustGetNode(t, s, again.UUID)
	mustCreatePort(t, s, newPort(again.UUID, "52:54:00:00:00:01"))
}

// Load test shape: every worker runs loadOps operations mixing creates,
// updates of shared nodes, reservations, reads and history.
const (
	loadWorkers = 16
	loadOps     = 200
	loadShared  = 8
)

// testLoad hammers one store from 16 goroutines. The only errors allowed are
// the contract's ErrStale and *LockedError; afterwards every shared node's
// version must equal 1 + the updates that succeeded on it.
func testLoad(t *testing.T, su suite) {
	s := su.fresh(t)
	ctx := t.Context()
	shared := make([]string, loadShared)
	for i := range shared {
		shared[i] = mustCreateNode(t, s, newNode(fmt.Sprint("shared-", i))).UUID
	}
	var updates [loadShared]atomic.Int64
	var created atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, loadWorkers)
	for w := range loadWorkers {
		wg.Go(func() {
			<-start
			l := loader{s: s, shared: shared, updates: &updates, created: &created, worker: w}
			for i := range loadOps {
				if err := l.op(ctx, i); err != nil {
					errs <- fmt.Errorf("worker %d op %d: %w", w, i, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := int(created.Load()) + loadShared
	if got, err := s.Nodes().CountNodes(ctx, store.NodeQuery{}); err != nil || got != want {
		t.Errorf("CountNodes = %d, %v; want %d", got, err, want)
	}
	for i, id := range shared {
		n := mustGetNode(t, s, id)
		if n.Version != 1+updates[i].Load() {
			t.Errorf("shared node %d: version %d after %d updates", i, n.Version, updates[i].Load())
		}
	}
}

type loader struct {
	s       store.Store
	shared  []string
	updates *[loadShared]atomic.Int64
	created *atomic.Int64
	worker  int
}

func (l *loader) op(ctx context.Context, i int) error {
	k := (l.worker + i) % len(l.shared)
	switch i % 5 {
	case 0:
		if err := l.s.Nodes().CreateNode(ctx, newNode(fmt.Sprintf("w%d-%d", l.worker, i))); err != nil {
			return err
		}
		l.created.Add(1)
	case 1:
		n, err := l.s.Nodes().GetNode(ctx, l.shared[k])
		if err != nil {
			return err
		}
		n.Extra = model.JSON{"worker": float64(l.worker), "op": float64(i)}
		switch err := l.s.Nodes().UpdateNode(ctx, n); {
		case err == nil:
			l.updates[k].Add(1)
		case !errors.Is(err, store.ErrStale):
			return err
		}
	case 2:
		host := fmt.Sprint("worker-", l.worker)
		_, err := l.s.Nodes().ReserveNode(ctx, l.shared[k], host)
		if errors.Is(err, store.ErrLocked) {
			return nil
		}
		if err != nil {
			return err
		}
		return l.s.Nodes().ReleaseNode(ctx, l.shared[k], host)
	case 3:
		if _, err := l.s.Nodes().ListNodes(ctx, store.NodeQuery{Limit: 20, SortKey: "updated_at"}); err != nil {
			return err
		}
		_, err := l.s.Nodes().CountNodes(ctx, store.NodeQuery{Reserved: ptr(true)})
		return err
	case 4:
		e := &model.HistoryEvent{NodeUUID: l.shared[k], Event: fmt.Sprint("op ", i)}
		return l.s.Nodes().AddHistory(ctx, e, 10)
	}
	return nil
}
