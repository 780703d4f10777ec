package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
)

// The write-ahead log restarts from its start only after a checkpoint that
// copied every frame while no reader still used one: SQLite's automatic
// checkpoint (every 1,000 pages, inside a commit) does that on a quiet
// database, but under steady reads it may copy a little less each time and
// the log grows on (89–169 MiB seen after 4,000 creates with readers on a
// loaded machine; 3.6 GiB after 100,000 before group commit). So the writer
// looks at the log's size every walCheckEvery groups, and past walLimit
// checkpoints it in full and truncates it, waiting for readers at most
// walWait: a reader in a long read keeps the log for the next try rather
// than stalling every write behind it.
const (
	walCheckEvery = 32       // groups between looks at the log's size
	walLimit      = 16 << 20 // bytes: four automatic checkpoints' worth
	walWait       = "200"    // milliseconds the truncation waits for readers
)

// restartLog returns the group-commit upkeep that truncates the log at
// walPath when it passed walLimit.
func restartLog(walPath string) func(ctx context.Context, w *sql.DB) {
	return func(ctx context.Context, w *sql.DB) {
		st, err := os.Stat(walPath)
		if err != nil || st.Size() < walLimit {
			return
		}
		// The writer pool has one connection: the three statements share it.
		c, err := w.Conn(ctx)
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = "+walWait); err != nil {
			return
		}
		defer c.ExecContext(ctx, "PRAGMA busy_timeout = "+busyTimeout)
		var busy, logFrames, copied int
		err = c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &copied)
		if err != nil || busy != 0 {
			slog.Debug("sqlite: write-ahead log not truncated yet: readers still use it",
				"log_bytes", st.Size(), "err", err)
		}
	}
}
