package hostlock

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// exclusive checks that host on database can be held once at a time, that
// another host is independent, and that a released name can be claimed again.
func exclusive(t *testing.T, acquire func(ctx context.Context, database, host string, check time.Duration) (*Claim, error), database, other string) {
	t.Helper()
	ctx := context.Background()
	a, err := acquire(ctx, database, "c1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(ctx, database, "c1", time.Second); !errors.Is(err, ErrHeld) {
		t.Fatalf("second claim of c1: err = %v, want ErrHeld", err)
	}
	b, err := acquire(ctx, database, "c2", time.Second)
	if err != nil {
		t.Fatalf("c2 beside c1: %v", err)
	}
	defer b.Release()
	if other != "" {
		o, err := acquire(ctx, other, "c1", time.Second)
		if err != nil {
			t.Fatalf("c1 on another database: %v", err)
		}
		defer o.Release()
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	again, err := acquire(ctx, database, "c1", time.Second)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	defer again.Release()
}

func TestSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	exclusive(t, Acquire, filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"))
}

func TestPostgres(t *testing.T) {
	exclusive(t, Postgres, pg.DSN(t), pg.DSN(t))
}

func TestFilePath(t *testing.T) {
	for db, want := range map[string]string{
		"/d/anvil.db":                 "/d/anvil.db.conductor-h%2F1.lock",
		"file:/d/a.db?_pragma=x":      "/d/a.db.conductor-h%2F1.lock",
		":memory:":                    "",
		"file:x?mode=memory&cache=sh": "",
	} {
		if got := filePath(db, "h/1"); got != want {
			t.Errorf("filePath(%q) = %q, want %q", db, got, want)
		}
	}
}

// A claim whose connection is killed reports itself lost, and the name is
// free for another process.
func TestPostgresLost(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DSN(t)
	c, err := Postgres(ctx, dsn, "fragile", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var killed bool
	if err := admin.QueryRowContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1 AND objid::int = hashtext(current_schema() || '/fragile')`,
		advisoryClass).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the claim's session: %v %v", killed, err)
	}
	select {
	case <-c.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("claim not reported lost 10 s after its session was terminated")
	}
	again, err := Postgres(ctx, dsn, "fragile", time.Second)
	if err != nil {
		t.Fatalf("claim after the holder's session died: %v", err)
	}
	_ = again.Release()
	if err := c.Release(); err != nil {
		t.Fatalf("release of a lost claim: %v", err)
	}
}
