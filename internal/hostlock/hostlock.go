package hostlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/anvil-metal/anvil/internal/store/storeopen"
)

// ErrHeld is returned by Claim when a live process holds the name.
var ErrHeld = errors.New("conductor name is held by a running process")

// Claim is a held conductor name; Release gives it up.
type Claim struct {
	release func() error
	lost    chan struct{} // closed when the claim is lost; nil: never
}

// Release gives the name up (idempotent).
func (c *Claim) Release() error {
	if c == nil || c.release == nil {
		return nil
	}
	f := c.release
	c.release = nil
	return f()
}

// Lost is closed if the claim is lost while held: on PostgreSQL, when the
// connection holding the lock dies (the server restarted, the session was
// terminated). The process must then stop being this conductor, since
// another may claim the name. A file claim is never lost.
func (c *Claim) Lost() <-chan struct{} { return c.lost }

// Acquire claims host on database (a postgres:// URL or a SQLite path, as
// `anvil serve --database` takes it); a PostgreSQL claim's connection is
// checked every check. Errors: ErrHeld (wrapped) when another live process
// holds it.
func Acquire(ctx context.Context, database, host string, check time.Duration) (*Claim, error) {
	if storeopen.IsPostgres(database) {
		return Postgres(ctx, database, host, check)
	}
	return File(database, host)
}

// advisoryClass is the first key of Anvil's two-key advisory locks ("AN").
const advisoryClass = 0x414e

// Postgres claims host on the PostgreSQL database dsn (URL or key=value),
// checking every check (> 0) that the connection holding it is alive.
func Postgres(ctx context.Context, dsn, host string, check time.Duration) (*Claim, error) {
	if check <= 0 {
		return nil, errors.New("hostlock: check interval must be positive")
	}
	if host == "" {
		return nil, errors.New("hostlock: empty host name")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("hostlock: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("hostlock: connect: %w", err)
	}
	var got bool
	err = conn.QueryRowContext(ctx,
		"SELECT pg_try_advisory_lock($1, hashtext(current_schema() || '/' || $2))", advisoryClass, host).Scan(&got)
	if err == nil && !got {
		err = fmt.Errorf("%w: %s", ErrHeld, host)
	}
	if err != nil {
		_ = conn.Close()
		_ = db.Close()
		return nil, fmt.Errorf("hostlock: %w", err)
	}
	lost, stop, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(check)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				cctx, cancel := context.WithTimeout(context.Background(), check)
				err := conn.PingContext(cctx)
				cancel()
				if err != nil {
					close(lost)
					return
				}
			}
		}
	}()
	return &Claim{lost: lost, release: func() error {
		close(stop)
		<-done
		_, err := conn.ExecContext(context.Background(),
			"SELECT pg_advisory_unlock($1, hashtext(current_schema() || '/' || $2))", advisoryClass, host)
		select {
		case <-lost:
			err = nil // the lock went with the connection
		default:
		}
		_ = conn.Close()
		return errors.Join(err, db.Close())
	}}, nil
}

// filePath is the lock file of host beside the SQLite database path, or ""
// for a database that lives in memory.
func filePath(database, host string) string {
	path := strings.TrimPrefix(database, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		if strings.Contains(path[i:], "mode=memory") {
			return ""
		}
		path = path[:i]
	}
	if path == "" || path == ":memory:" {
		return ""
	}
	return path + ".conductor-" + url.PathEscape(host) + ".lock"
}

// File claims host beside the SQLite database path database.
func File(database, host string) (*Claim, error) {
	if host == "" {
		return nil, errors.New("hostlock: empty host name")
	}
	path := filePath(database, host)
	if path == "" {
		return &Claim{}, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("hostlock: %w", err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("hostlock: %w: %s", ErrHeld, host)
		}
		return nil, fmt.Errorf("hostlock: lock %s: %w", path, err)
	}
	// The file stays: removing it while another process waits to open it
	// would let two processes lock two different files of one name.
	return &Claim{release: f.Close}, nil
}
