package storeopen

import (
	"context"
	"strings"

	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

// Open opens and migrates the store database names: a postgres:// or
// postgresql:// URL selects PostgreSQL, anything else is a SQLite file path.
func Open(ctx context.Context, database string) (store.Store, error) {
	if IsPostgres(database) {
		return postgres.Open(ctx, database)
	}
	return sqlite.Open(ctx, database)
}

// IsPostgres reports whether database names a PostgreSQL database.
func IsPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}
