package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
	"github.com/anvil-metal/anvil/internal/store/storetest"
)

func openTemp(t testing.TB) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anvil.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	n := &model.Node{Name: "kept", Driver: "fake-hardware"}
	if err := s.Nodes().CreateNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Nodes().GetNode(t.Context(), "kept"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

func TestWALMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anvil.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
}

// TestTwoHandlesOneFile has two stores (as two processes would) write the
// same file at once: busy_timeout and BEGIN IMMEDIATE must keep "database is
// locked" from reaching either.
func TestTwoHandlesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anvil.db")
	var stores [2]store.Store
	for i := range stores {
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			s := stores[w%2]
			for i := range 50 {
				n := &model.Node{Name: fmt.Sprintf("w%d-%d", w, i), Driver: "fake-hardware"}
				if err := s.Nodes().CreateNode(t.Context(), n); err != nil {
					t.Error(err)
					return
				}
				e := &model.HistoryEvent{NodeUUID: n.UUID, Event: "created"}
				if err := s.Nodes().AddHistory(t.Context(), e, 5); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n, err := stores[0].Nodes().CountNodes(t.Context(), store.NodeQuery{}); err != nil || n != 400 {
		t.Fatalf("CountNodes = %d, %v; want 400", n, err)
	}
}

func TestClock(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.UTC)
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "anvil.db"),
		sqlstore.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := now.Truncate(time.Microsecond)
	n := &model.Node{Name: "n", Driver: "fake-hardware"}
	if err := s.Nodes().CreateNode(t.Context(), n); err != nil || n.CreatedAt != want {
		t.Fatalf("CreateNode: created_at %v, %v; want %v", n.CreatedAt, err, want)
	}
	now = now.Add(time.Hour)
	if err := s.Nodes().UpdateNode(t.Context(), n); err != nil || n.UpdatedAt != now.Truncate(time.Microsecond) {
		t.Fatalf("UpdateNode: updated_at %v, %v; want %v", n.UpdatedAt, err, now)
	}
	c := &model.Conductor{Hostname: "c1"}
	if err := s.Conductors().RegisterConductor(t.Context(), c); err != nil || c.CreatedAt != now.Truncate(time.Microsecond) {
		t.Fatalf("RegisterConductor: created_at %v, %v; want %v", c.CreatedAt, err, now)
	}
}

func BenchmarkCreateNode(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	storetest.BenchCreateNode(b, s)
}

func BenchmarkCreateNodeParallel(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	storetest.BenchCreateNodeParallel(b, s)
	g, w := s.(*sqlstore.Store).GroupCommits()
	b.ReportMetric(float64(w)/float64(max(g, 1)), "writes/commit")
}

func BenchmarkListNodes1000(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	storetest.BenchListNodes(b, s, 1000)
}

func BenchmarkListNodes1000NoCache(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "anvil.db"), sqlstore.WithNodeCache(0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchListNodes(b, s, 1000)
}
