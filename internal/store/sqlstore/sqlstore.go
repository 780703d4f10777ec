package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/store"
)

// Store implements store.Store on database/sql: it keeps the pools, the
// dialect, the node cache and the group commit, and its accessors hand out
// the role stores (roles.go), small types over it.
type Store struct {
	w, r  *sql.DB // writes, reads; the same pool when the engine has no writer limit
	d     Dialect
	now   func() time.Time
	cache *nodeCache   // nil: no cache
	gc    *groupCommit // nil: each write its own transaction
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

// Close closes the connection pools, after the group commits under way
// (writes that come later fail).
func (s *Store) Close() error {
	if s.gc != nil {
		s.gc.close()
	}
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
	d  *Dialect
	q  querier
	st *txStmts // nil: each query prepared anew
	// shared: the transaction holds other writers' writes (a group
	// commit), so no one writer's context may interrupt a statement —
	// SQLite rolls back the whole transaction of an interrupted write.
	shared bool
}

// ctx is the context a statement runs on: ctx, or in a shared transaction
// ctx without its cancellation and deadline (the statement, once started,
// runs to its end; the group's writers were checked before their turn).
func (c conn) ctx(ctx context.Context) context.Context {
	if c.shared {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (c conn) on(query string) (querier, string) {
	query = c.d.rebind(query)
	if c.st != nil {
		return c.st.prepared(query)
	}
	return c.q, query
}

func (c conn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q, query := c.on(query)
	return q.ExecContext(c.ctx(ctx), query, args...)
}

func (c conn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q, query := c.on(query)
	return q.QueryContext(c.ctx(ctx), query, args...)
}

func (c conn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	q, query := c.on(query)
	return q.QueryRowContext(c.ctx(ctx), query, args...)
}

// writerStmts holds the statements of group commits, each prepared once on
// the writer's connection and reused by every later group (a create's INSERT
// touches 25 columns and 23 indexes: parsing and planning it cost more than
// a tenth of the create). Only the group-commit writer uses it, one group
// at a time, so it needs no lock.
type writerStmts struct {
	db      *sql.DB
	byQ     map[string]*sql.Stmt
	fail    map[string]bool // queries the driver would not prepare: run as they are
	pending []string        // met in the running group: prepare after it
}

// maxWriterStmts bounds the cache; the store's write queries are constant
// strings, so it is never reached in practice.
const maxWriterStmts = 512

// prepareMet prepares the queries the last group met for the first time.
// It runs between groups: the pool's one connection is the transaction's
// while a group runs.
func (w *writerStmts) prepareMet() {
	for _, q := range w.pending {
		if _, ok := w.byQ[q]; ok || len(w.byQ) >= maxWriterStmts {
			continue
		}
		if st, err := w.db.PrepareContext(context.Background(), q); err == nil {
			w.byQ[q] = st
		} else {
			w.fail[q] = true
		}
	}
	w.pending = w.pending[:0]
}

// close closes the cached statements.
func (w *writerStmts) close() {
	for _, st := range w.byQ {
		_ = st.Close()
	}
}

// txStmts runs a group's queries on its transaction, each prepared once:
// through the writer's cached statement when there is one, else prepared on
// the transaction (and cached after the group).
type txStmts struct {
	tx  *sql.Tx
	w   *writerStmts
	byQ map[string]*sql.Stmt // this transaction's statements
}

// prepared gives what runs query on the transaction: its prepared statement,
// or the transaction itself for a query that could not be prepared.
func (t *txStmts) prepared(query string) (querier, string) {
	if st, ok := t.byQ[query]; ok {
		return stmtQuerier{st}, ""
	}
	w := t.w
	if st, ok := w.byQ[query]; ok {
		// The pool has one connection, the transaction's, on which st was
		// prepared: the handle reuses it.
		txst := t.tx.StmtContext(context.Background(), st)
		t.byQ[query] = txst
		return stmtQuerier{txst}, ""
	}
	if !w.fail[query] && !strings.Contains(strings.TrimRight(query, "; \n\t"), ";") { // one statement only
		st, err := t.tx.PrepareContext(context.Background(), query)
		if err == nil {
			t.byQ[query] = st
			w.pending = append(w.pending, query)
			return stmtQuerier{st}, ""
		}
		w.fail[query] = true
	}
	return t.tx, query
}

// stmtQuerier runs a prepared statement behind the querier interface (the
// query text is the statement's own and ignored).
type stmtQuerier struct{ st *sql.Stmt }

func (s stmtQuerier) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return s.st.ExecContext(ctx, args...)
}

func (s stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return s.st.QueryContext(ctx, args...)
}

func (s stmtQuerier) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return s.st.QueryRowContext(ctx, args...)
}

// write runs fn in a transaction on the write pool (under group commit, in
// a savepoint of a shared one).
func (s *Store) write(ctx context.Context, fn func(c conn) error) error {
	if s.gc != nil {
		return s.grouped(ctx, fn)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(conn{d: &s.d, q: tx}); err != nil {
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
func (s *Store) reader() conn { return conn{d: &s.d, q: s.r} }
func (s *Store) writer() conn { return conn{d: &s.d, q: s.w} }

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
