// Package storeopen opens the store a --database value names: PostgreSQL for
// postgres:// and postgresql:// URLs, SQLite (a file path) otherwise.
package storeopen

import (
	"context"
	"strings"

	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

// Open opens and migrates the database.
func Open(ctx context.Context, database string) (store.Store, error) {
	if strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://") {
		return postgres.Open(ctx, database)
	}
	return sqlite.Open(ctx, database)
}
