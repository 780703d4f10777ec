// Package scale tests several `anvil serve` processes on one database: the
// conductor identity claim, and (on PostgreSQL) the hash ring's division of
// periodic work and the take-over of a killed conductor's nodes.
package scale

import (
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
	"github.com/anvil-metal/anvil/internal/testbin"
)

var (
	anvilBin string
	pg       = pgtest.New()
)

func TestMain(m *testing.M) {
	code := testbin.Main(m, &anvilBin, nil)
	pg.Stop()
	os.Exit(code)
}
