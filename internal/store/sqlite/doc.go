// Package sqlite is Anvil's embedded store: sqlstore on modernc.org/sqlite
// (pure Go, no cgo), with the schema migrations for SQLite.
//
// Invariants:
//   - the database runs in WAL mode with synchronous=NORMAL, foreign keys on
//     and a 10 s busy timeout;
//   - exactly one connection writes (a pool of one; every write and write
//     transaction goes through it, and its transactions BEGIN IMMEDIATE), so
//     concurrent writers queue in Go and never see "database is locked"; reads
//     go through a separate pool of read-only connections that WAL lets run
//     beside the writer;
//   - Open applies the pending migrations before returning;
//   - the database and its -wal and -shm files are mode 0600 (they hold BMC
//     passwords and agent keys): Open creates the file 0600 before SQLite
//     does, narrows an existing one, and refuses a directory every user may
//     write to (unless sticky).
package sqlite
