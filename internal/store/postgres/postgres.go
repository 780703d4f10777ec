package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Pool limits: enough connections for a busy API and conductor, few enough
// that several processes fit in PostgreSQL's default max_connections (100).
// Idle connections are kept up to the usual concurrency (16 clients), not
// closed and reopened under it (Connect).
const (
	maxOpenConns    = 32
	maxIdleConns    = 16
	connMaxIdleTime = 5 * time.Minute
)

// Connect opens a pool of at most open connections to dsn (a postgres://
// URL or a keyword/value string, as pgx accepts) that keeps up to idle of
// them unused, each until connMaxIdleTime, and checks that it connects.
// Every PostgreSQL pool of Anvil is opened here: a pool that keeps fewer
// idle connections than it uses closes and reopens sessions under load, a
// new backend each (with 8 kept, 20,000 creates from 16 clients opened
// 1,871 sessions; database/sql keeps 2 unless told).
func Connect(ctx context.Context, dsn string, open, idle int) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(open)
	db.SetMaxIdleConns(idle)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return db, nil
}

// Listen opens a connection of its own to dsn listening on the NOTIFY
// channel ch (a name Anvil chose, not a client's text).
func Listen(ctx context.Context, dsn, ch string) (*pgx.Conn, error) {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, "LISTEN "+ch); err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	return c, nil
}

// Open connects to the database at dsn, migrates it to the newest schema
// and returns the store. The result is a *sqlstore.Store, which also has
// MigrateUp, MigrateDown and SchemaVersion.
func Open(ctx context.Context, dsn string, opts ...sqlstore.Option) (store.Store, error) {
	db, err := Connect(ctx, dsn, maxOpenConns, maxIdleConns)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := sqlstore.New(db, nil, Dialect(), opts...)
	if err := s.MigrateUp(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}

// Dialect is PostgreSQL's sqlstore.Dialect: $N placeholders, timestamptz,
// constraint errors from SQLSTATE codes and constraint names.
func Dialect() sqlstore.Dialect {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err) // the embedded directory exists at build time
	}
	return sqlstore.Dialect{
		Name:           "postgres",
		NumberedParams: true,
		ZeroTime:       "'-infinity'::timestamptz",
		EncodeTime:     func(t time.Time) any { return t },
		Classify:       classify,
		Migrations:     sub,
		// Any constant will do, as long as it is Anvil's alone.
		MigrationLock: "SELECT pg_advisory_xact_lock(7316720825185369)",
	}
}

// SQLSTATE codes of constraint violations.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

// classify reads PostgreSQL's constraint errors. Unique constraints are
// named <table>_<column>_key (see the migrations).
func classify(err error) sqlstore.Violation {
	var e *pgconn.PgError
	if !errors.As(err, &e) {
		return sqlstore.Violation{}
	}
	switch e.Code {
	case uniqueViolation:
		col := strings.TrimSuffix(strings.TrimPrefix(e.ConstraintName, e.TableName+"_"), "_key")
		return sqlstore.Violation{Kind: sqlstore.UniqueViolation, Column: col}
	case foreignKeyViolation:
		return sqlstore.Violation{Kind: sqlstore.ForeignKeyViolation}
	}
	return sqlstore.Violation{}
}
