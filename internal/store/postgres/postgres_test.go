package postgres_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
	"github.com/anvil-metal/anvil/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := postgres.Open(t.Context(), pg.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openBench(b *testing.B) store.Store {
	s, err := postgres.Open(b.Context(), pg.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func BenchmarkCreateNode(b *testing.B) { storetest.BenchCreateNode(b, openBench(b)) }

func BenchmarkCreateNodeParallel(b *testing.B) {
	storetest.BenchCreateNodeParallel(b, openBench(b))
}

func BenchmarkListNodes1000(b *testing.B) { storetest.BenchListNodes(b, openBench(b), 1000) }

// A pool used by as many clients as it keeps idle connections reuses its
// sessions: 3 rounds of 8 concurrent queries open at most 8 backends
// (database/sql's default of 2 idle opened a new one for most queries).
func TestConnectKeepsItsSessions(t *testing.T) {
	db, err := postgres.Connect(t.Context(), pg.DSN(t), 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var (
		mu   sync.Mutex
		pids = map[int]bool{}
	)
	for range 3 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var pid int
				if err := db.QueryRowContext(t.Context(), "SELECT pg_backend_pid() FROM pg_sleep(0.05)").Scan(&pid); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				pids[pid] = true
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	if len(pids) > 8 {
		t.Fatalf("24 queries of 8 clients opened %d sessions", len(pids))
	}
	if _, err := postgres.Connect(t.Context(), "host=/nonexistent-anvil dbname=x", 1, 1); err == nil || !strings.HasPrefix(err.Error(), "connect: ") {
		t.Fatalf("a database not there: %v", err)
	}
}
