package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

// Concurrent creates share commits, and a create that fails (a duplicate
// name) is undone alone: each name is created twice at once, exactly one of
// each pair wins, the loser gets the duplicate error and nothing else is lost.
func TestGroupCommitCreates(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	const names = 48
	groups0, writes0 := s.(*sqlstore.Store).GroupCommits()
	start := make(chan struct{})
	errs := make([]error, 2*names)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			<-start
			n := &model.Node{Driver: "fake-hardware", Name: fmt.Sprintf("gc-%d", i/2)}
			errs[i] = s.Nodes().CreateNode(t.Context(), n)
		})
	}
	close(start)
	wg.Wait()
	for i := 0; i < len(errs); i += 2 {
		a, b := errs[i], errs[i+1]
		var dup *store.DuplicateError
		ok := (a == nil && errors.As(b, &dup)) || (b == nil && errors.As(a, &dup))
		if !ok || dup.Field != "name" || dup.Value != fmt.Sprintf("gc-%d", i/2) {
			t.Errorf("pair %d: %v, %v; want one nil and one duplicate name", i/2, a, b)
		}
	}
	all, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{})
	if err != nil || len(all) != names {
		t.Fatalf("%d nodes stored (%v), want %d", len(all), err, names)
	}
	groups, writes := s.(*sqlstore.Store).GroupCommits()
	groups, writes = groups-groups0, writes-writes0
	if writes != 2*names || groups >= writes {
		t.Errorf("%d writes in %d commits: want %d writes sharing commits", writes, groups, 2*names)
	}
}

// Updates of one node at one version from many writers at once: the first in
// the group wins, the others see its change and fail stale.
func TestGroupCommitStaleUpdates(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	n := &model.Node{Driver: "fake-hardware", Name: "gc"}
	if err := s.Nodes().CreateNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	const writers = 16
	start := make(chan struct{})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			m := *n
			m.Description = fmt.Sprint("writer ", i)
			<-start
			errs[i] = s.Nodes().UpdateNode(t.Context(), &m)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrStale):
			t.Errorf("writer %d: %v, want stale", i, err)
		}
	}
	got, err := s.Nodes().GetNode(t.Context(), n.UUID)
	if won != 1 || err != nil || got.Version != 2 {
		t.Fatalf("%d writers won, stored version %v (%v); want 1 and 2", won, got.Version, err)
	}
}

// A write whose caller has left before its turn writes nothing.
func TestGroupCommitCancelled(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	n := &model.Node{Driver: "fake-hardware", Name: "gone"}
	if err := s.Nodes().CreateNode(ctx, n); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateNode with a cancelled context: %v", err)
	}
	if _, err := s.Nodes().GetNode(t.Context(), "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the cancelled create was stored: %v", err)
	}
}
