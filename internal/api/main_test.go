package api

import (
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
)

// pg is the PostgreSQL of the benchmarks that run on it, started on first use.
var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}
