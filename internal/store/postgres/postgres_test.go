package postgres_test

import (
	"os"
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
