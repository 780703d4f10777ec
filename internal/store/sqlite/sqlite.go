package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open opens (creating if needed) the SQLite database file at path, migrates
// it to the newest schema and returns the store. The result is a
// *sqlstore.Store, which also has MigrateUp, MigrateDown and SchemaVersion.
func Open(ctx context.Context, path string, opts ...sqlstore.Option) (store.Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if err := secure(path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	w, err := openPool(ctx, dsn(path, writerParams), 1)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r, err := openPool(ctx, dsn(path, readerParams), max(4, runtime.GOMAXPROCS(0)))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One writer connection: concurrent writes share commits (group commit).
	own := []sqlstore.Option{sqlstore.WithGroupCommit()}
	if p := filePath(path); p != "" {
		own = append(own, sqlstore.WithGroupUpkeep(walCheckEvery, restartLog(p+"-wal")))
	}
	s := sqlstore.New(w, r, Dialect(), append(own, opts...)...)
	if err := s.MigrateUp(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return s, nil
}

// Connection parameters (modernc.org/sqlite DSN keys). The writer sets the
// persistent WAL mode and keeps its statement journals in memory (group
// commit runs each write in a savepoint: on disk, each would cost writes);
// readers refuse to write.
const (
	busyTimeout  = "10000" // milliseconds a connection waits for a lock
	common       = "_pragma=busy_timeout(" + busyTimeout + ")&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	writerParams = common + "&_pragma=journal_mode(WAL)&_pragma=temp_store(MEMORY)&_txlock=immediate"
	readerParams = common + "&_pragma=query_only(1)"
)

func dsn(path, params string) string {
	if strings.Contains(path, "?") {
		return path + "&" + params
	}
	return path + "?" + params
}

// openPool opens a pool of at most n connections, kept open, and checks that
// one works.
func openPool(ctx context.Context, dsn string, n int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// Dialect is SQLite's sqlstore.Dialect: ? placeholders, times as fixed-width
// UTC text, constraint errors from SQLite's extended result codes.
func Dialect() sqlstore.Dialect {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err) // the embedded directory exists at build time
	}
	return sqlstore.Dialect{
		Name:       "sqlite",
		ZeroTime:   "''",
		EncodeTime: sqlstore.EncodeTimeText,
		Classify:   classify,
		Migrations: sub,
	}
}

// classify reads SQLite's constraint errors; a unique violation's message is
// "UNIQUE constraint failed: table.column".
func classify(err error) sqlstore.Violation {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return sqlstore.Violation{}
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.Violation{Kind: sqlstore.UniqueViolation, Column: uniqueColumn(e.Error())}
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.Violation{Kind: sqlstore.ForeignKeyViolation}
	}
	return sqlstore.Violation{}
}

func uniqueColumn(msg string) string {
	_, cols, ok := strings.Cut(msg, "UNIQUE constraint failed: ")
	if !ok {
		return ""
	}
	col, _, _ := strings.Cut(cols, ",")
	_, col, _ = strings.Cut(col, ".")
	col, _, _ = strings.Cut(col, " ")
	return col
}
