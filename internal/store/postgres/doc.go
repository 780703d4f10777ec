// Package postgres is Anvil's store for PostgreSQL, for many conductors and
// API processes sharing one database: sqlstore on pgx v5 (through
// database/sql), with the schema migrations for PostgreSQL.
//
// Invariants:
//   - the node lock is the same compare-and-set UPDATE as on SQLite; under
//     READ COMMITTED a racing UPDATE re-checks "reservation IS NULL" after the
//     winner commits, so exactly one host wins;
//   - migrations run in one transaction holding a transaction-scoped advisory
//     lock, so processes starting together migrate once;
//   - sortable text columns use the "C" collation: order is byte order, as on
//     SQLite, whatever the database's locale;
//   - Open applies the pending migrations before returning.
package postgres
