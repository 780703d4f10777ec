package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/store"
)

// Store implements store.Store on database/sql.
type Store struct {
	w, r  *sql.DB // writes, reads; the same pool when the engine has no writer limit
	d     Dialect
	now   func() time.Time
	cache *nodeCache // nil: no cache
}

var _ store.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithClock makes the store read the time from now (CreatedAt, UpdatedAt and
// conductor heartbeats) instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// New returns a Store writing through w and reading through r (r may be nil:
// reads then use w). It does not migrate; call MigrateUp. The Store owns both
// pools and closes them in Close.
func New(w, r *sql.DB, d Dialect, opts ...Option) *Store {
	if r == nil {
		r = w
	}
	s := &Store{w: w, r: r, d: d, now: time.Now, cache: newNodeCache(DefaultNodeCacheSize)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close closes the connection pools.
func (s *Store) Close() error {
	var errs []error
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	return errors.Join(errs...)
}

// clock returns the current time as the store stores it.
func (s *Store) clock() time.Time { return norm(s.now()) }

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn runs queries written with ? placeholders on a pool or transaction.
type conn struct {
	d *Dialect
	q querier
}

func (c conn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.q.ExecContext(ctx, c.d.rebind(query), args...)
}

func (c conn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.q.QueryContext(ctx, c.d.rebind(query), args...)
}

func (c conn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return c.q.QueryRowContext(ctx, c.d.rebind(query), args...)
}

// write runs fn in a transaction on the write pool.
func (s *Store) write(ctx context.Context, fn func(c conn) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(conn{&s.d, tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// reader returns a querier on the read pool; writer one on the write pool
// outside any transaction (for single-statement writes).
func (s *Store) reader() conn { return conn{&s.d, s.r} }
func (s *Store) writer() conn { return conn{&s.d, s.w} }

// writeErr turns a driver error into the contract's errors: a unique
// violation becomes *store.DuplicateError with the value value(column), a
// foreign-key violation (a port or event naming a missing node) ErrNotFound.
func (s *Store) writeErr(err error, value func(column string) string) error {
	if err == nil {
		return nil
	}
	v := s.d.Classify(err)
	switch v.Kind {
	case UniqueViolation:
		return &store.DuplicateError{Field: v.Column, Value: value(v.Column)}
	case ForeignKeyViolation:
		return fmt.Errorf("node %w", store.ErrNotFound)
	}
	return err
}

// notFound wraps store.ErrNotFound with what was missing.
func notFound(what, ident string) error {
	return fmt.Errorf("%s %s: %w", what, ident, store.ErrNotFound)
}

// sortDesc parses a sort direction.
func sortDesc(dir string) (bool, error) {
	switch dir {
	case "", "asc":
		return false, nil
	case "desc":
		return true, nil
	}
	return false, fmt.Errorf("invalid sort direction %q", dir)
}
