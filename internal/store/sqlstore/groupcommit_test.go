package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// A writer whose context ends while its statement runs in a shared group
// must not take the group down: SQLite's interrupt of a write in an
// explicit transaction rolls the whole transaction back, and every other
// writer of the group got "ROLLBACK TO gc: no such savepoint" (a 500 to
// clients of a loaded API).
func TestGroupSurvivesAWriterCancelledMidStatement(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "gc.db")+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE probe (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	s := New(db, db, Dialect{}, WithGroupCommit())
	insert := func(v int) func(c conn) error {
		return func(c conn) error {
			_, err := c.exec(context.Background(), "INSERT INTO probe VALUES (?)", v)
			return err
		}
	}
	cctx, cancel := context.WithCancel(context.Background())
	long := func(c conn) error {
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := c.exec(cctx, `WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 1000000)
			INSERT INTO probe SELECT -i FROM r`)
		return err
	}
	op := func(ctx context.Context, fn func(c conn) error) *gcOp {
		return &gcOp{ctx: ctx, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	}
	bg := context.Background()
	batch := []*gcOp{op(bg, insert(1)), op(cctx, long), op(bg, insert(3))}
	s.commitGroup(batch)
	for i, o := range []*gcOp{batch[0], batch[2]} {
		if o.err != nil {
			t.Fatalf("writer %d of the group failed with the cancelled one: %v", 2*i+1, o.err)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM probe WHERE x IN (1, 3)").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the group's other writes: %d rows, %v; want both committed", n, err)
	}
}

// Close while writers keep writing: the group under way commits, its
// leader's statement cache is not closed under it (a data race -race
// found in `anvil serve`'s shutdown, when a power sync outlived the
// conductor's stop), and later writes fail instead of running.
func TestCloseWaitsForTheGroupUnderWay(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "gc.db")+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE probe (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	s := New(db, db, Dialect{}, WithGroupCommit())
	var wg sync.WaitGroup
	var wrote atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				// a new query text now and then: the leader prepares it between groups
				q := fmt.Sprintf("INSERT INTO probe VALUES (?) -- %d.%d", w, i)
				err := s.writeOne(context.Background(), func(c conn) error {
					_, err := c.exec(context.Background(), q, i)
					return err
				})
				if err != nil {
					return
				}
				wrote.Add(1)
			}
		}()
	}
	for wrote.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := s.writeOne(context.Background(), func(c conn) error { return nil }); err == nil {
		t.Fatal("a write after Close ran")
	}
}
