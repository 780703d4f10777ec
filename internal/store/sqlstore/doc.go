// Package sqlstore implements store.Store once, on database/sql, for every SQL
// engine Anvil supports. The engine packages (sqlite, postgres) open the
// connections and hand over a Dialect: placeholder style, time encoding,
// constraint-violation classification and the embedded migrations. Store
// holds the pools, dialect, cache and group commit; each role store of
// store.Store (roles.go) is a one-pointer type over it, with its methods in
// the file of its table.
//
// Invariants:
//   - every write is a single statement or a single transaction, so it happens
//     whole or not at all;
//   - writes go through the write *sql.DB, reads through the read *sql.DB (the
//     same pool on PostgreSQL; on SQLite one writer connection and a read pool,
//     so writers queue in Go instead of meeting "database is locked");
//   - a node's data column is the JSON encoding of model.Node; the other columns
//     are copies of the fields queries filter and sort on, written from the same
//     struct in the same statement, plus id, version and reservation, which
//     exist only as columns;
//   - ports, portgroups, allocations, chassis, deploy templates, runbooks,
//     inspection rules, volume connectors and targets are stored the same way,
//     each table described by a jsonTable (rows.go), whose create, get, list,
//     version-checked update and delete are the same code for all of them;
//   - the generic record table (records.go) is one jsonTable for every record
//     kind, scoped to its kind column: every statement of a kind's call
//     (the list marker's subquery included) matches only that kind's rows,
//     and its head is read back from the columns, its data never decoded;
//   - times are stored in UTC with microsecond precision; the store normalises
//     the caller's struct the same way so what it holds equals what a read returns;
//   - version changes only on the Update methods; reservation only on
//     ReserveNode/ReleaseNode/ReleaseHost;
//   - decoded nodes are cached by row id and reused only while the hash of
//     the data column is unchanged, and every caller gets a deep copy, so the
//     cache is invisible except in speed (listing 1000 nodes: a deep copy
//     each instead of a JSON decode);
//   - on error the caller's struct keeps its ID and Version; CreateNode may
//     have filled in UUID and CreatedAt, and times are normalised.
package sqlstore
