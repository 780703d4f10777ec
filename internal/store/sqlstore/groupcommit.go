package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit, for engines with one writer (SQLite): the writes that queue
// while a commit runs go into the next transaction together, one commit for
// all of them. A commit's cost is mostly the pages it writes to the log (the
// node table and each of its indexes), and concurrent writes share most of
// those pages, so one commit for sixteen creates costs little more than one
// for a single create. Every write still returns only after the commit that
// holds it: a caller that got nil has its row on disk as durably as with a
// transaction of its own.
//
// Each write runs inside a savepoint, so a write that fails (a duplicate
// name, a stale version) is undone alone and the others of its group
// commit. There is no goroutine of its own: the first writer to find no
// group running leads, runs the groups queued meanwhile, and when its own
// write is done hands the lead to the oldest waiting writer.
type groupCommit struct {
	mu      sync.Mutex
	queue   []*gcOp
	leading bool
	closed  bool       // the store closes: no new write is queued
	idle    *sync.Cond // on mu: signalled when the lead ends

	stmts *writerStmts // the writer's prepared statements

	// upkeep, when set, runs on the writer every upkeepEvery groups,
	// between groups (see WithGroupUpkeep).
	upkeep      func(ctx context.Context, w *sql.DB)
	upkeepEvery int64

	groups, writes atomic.Int64 // transactions run, writes they held
}

// gcOp is one queued write.
type gcOp struct {
	ctx  context.Context
	fn   func(c conn) error
	err  error
	done chan struct{} // closed when the op committed or failed
	lead chan struct{} // closed when the lead is handed to this op's writer
}

// WithGroupCommit makes the store group concurrent writes into shared
// transactions (see groupCommit). For engines with a single writer
// connection; an engine with concurrent writers gains nothing.
func WithGroupCommit() Option {
	return func(s *Store) {
		g := &groupCommit{stmts: &writerStmts{db: s.w, byQ: map[string]*sql.Stmt{}, fail: map[string]bool{}}}
		g.idle = sync.NewCond(&g.mu)
		s.gc = g
	}
}

// WithGroupUpkeep makes the group-commit writer run fn every `every`
// groups, after the group's writers were answered and before the next group
// begins: housekeeping that needs the writer's connection to itself (SQLite's
// log restart). Give it after WithGroupCommit.
func WithGroupUpkeep(every int, fn func(ctx context.Context, w *sql.DB)) Option {
	return func(s *Store) {
		if s.gc != nil {
			s.gc.upkeep, s.gc.upkeepEvery = fn, int64(max(every, 1))
		}
	}
}

// writeOne runs fn, one write of one or a few statements, atomically: in a
// shared transaction under group commit, else on the write pool as it is
// (each statement its own transaction: fn must be a single statement then,
// or statements that are correct one by one).
func (s *Store) writeOne(ctx context.Context, fn func(c conn) error) error {
	if s.gc == nil {
		return fn(s.writer())
	}
	return s.grouped(ctx, fn)
}

// grouped queues fn for the next group and waits for its outcome, leading
// the groups when no one else does.
func (s *Store) grouped(ctx context.Context, fn func(c conn) error) error {
	g := s.gc
	op := &gcOp{ctx: ctx, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errClosed
	}
	g.queue = append(g.queue, op)
	waiting := g.leading
	g.leading = true
	g.mu.Unlock()
	if waiting {
		select {
		case <-op.done: // a leader ran it
			return op.err
		case <-op.lead: // the lead came to us, our op still queued
		}
	}
	// This writer leads: run groups until its own write is done, then hand
	// the lead to the oldest waiting writer (or end it when nobody waits).
	for {
		g.mu.Lock()
		batch := g.queue
		g.queue = nil
		g.mu.Unlock()
		s.commitGroup(batch)
		select {
		case <-op.done:
		default:
			continue
		}
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leading = false
			g.idle.Broadcast()
		} else {
			close(g.queue[0].lead)
		}
		g.mu.Unlock()
		return op.err
	}
}

// errClosed answers a write queued after the store began to close.
var errClosed = errors.New("sql: database is closed")

// close refuses new writes, waits for the groups queued to commit, and
// closes the writer's statements: the last leader may be preparing
// statements into the cache between groups until then.
func (g *groupCommit) close() {
	g.mu.Lock()
	g.closed = true
	for g.leading {
		g.idle.Wait()
	}
	g.mu.Unlock()
	g.stmts.close()
}

// commitGroup runs the ops of one group in one transaction and closes their
// done channels. An op whose context ended before its turn fails with the
// context's error and writes nothing; when the transaction fails, every op
// fails with its error.
func (s *Store) commitGroup(batch []*gcOp) {
	// After the done channels closed (the writers go on meanwhile), before
	// the next group: prepare the statements met, keep up.
	n := s.gc.groups.Add(1)
	defer func() {
		s.gc.stmts.prepareMet()
		if s.gc.upkeep != nil && n%s.gc.upkeepEvery == 0 {
			s.gc.upkeep(context.Background(), s.w)
		}
	}()
	s.gc.writes.Add(int64(len(batch)))
	failAll := func(err error) {
		for _, op := range batch {
			op.err = err
		}
	}
	defer func() {
		for _, op := range batch {
			close(op.done)
		}
	}()
	// The transaction outlives any one writer's context: a writer that leaves
	// must not roll back the others' writes.
	bg := context.Background()
	tx, err := s.w.BeginTx(bg, nil)
	if err != nil {
		failAll(fmt.Errorf("begin: %w", err))
		return
	}
	c := conn{d: &s.d, q: tx, st: &txStmts{tx: tx, w: s.gc.stmts, byQ: map[string]*sql.Stmt{}}}
	if len(batch) == 1 { // alone: its own transaction, no savepoint needed
		op := batch[0]
		if op.err = op.ctx.Err(); op.err == nil {
			op.err = op.fn(c)
		}
		if op.err != nil {
			_ = tx.Rollback()
		} else if err := tx.Commit(); err != nil {
			op.err = fmt.Errorf("commit: %w", err)
		}
		return
	}
	c.shared = true
	for _, op := range batch {
		if op.err = op.ctx.Err(); op.err != nil {
			continue
		}
		if _, err := c.exec(bg, "SAVEPOINT gc"); err != nil {
			_ = tx.Rollback()
			failAll(fmt.Errorf("savepoint: %w", err))
			return
		}
		op.err = op.fn(c)
		undo := []string{"RELEASE gc"}
		if op.err != nil {
			undo = []string{"ROLLBACK TO gc", "RELEASE gc"}
		}
		for _, q := range undo {
			if _, err := c.exec(bg, q); err != nil {
				// The transaction is in an unknown state: none of it commits.
				_ = tx.Rollback()
				failAll(fmt.Errorf("%s: %w", q, err))
				return
			}
		}
	}
	if err := tx.Commit(); err != nil {
		failAll(fmt.Errorf("commit: %w", err))
	}
}

// GroupCommits reports how many transactions group commit ran and how many
// writes they held (both 0 without group commit).
func (s *Store) GroupCommits() (groups, writes int64) {
	if s.gc == nil {
		return 0, 0
	}
	return s.gc.groups.Load(), s.gc.writes.Load()
}
