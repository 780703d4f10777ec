package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/storetest"
)

// TestMigration16 runs storetest.Migration16 on PostgreSQL.
func TestMigration16(t *testing.T) {
	cfg, err := pgx.ParseConfig(pg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	storetest.Migration16(t, postgres.Dialect(), db, nil, `UPDATE runbooks SET data = data - 'traits' - 'description'`)
}
