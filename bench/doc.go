// Package bench holds Anvil's speed benchmarks. They build the anvil binary,
// start `anvil serve` as a separate process on a loopback port with a fresh
// SQLite database (or a throwaway PostgreSQL schema, or a prepared SQLite
// file of 100,000 nodes), and drive it through the real Ironic HTTP API, so
// what they measure is what a client sees (HTTP, JSON, database, conductor
// workers).
//
// Run them with `make bench` (go test -run '^$' -bench . -benchmem ./bench/...).
// The figures at 100,000 nodes take minutes and run only with
// ANVIL_BENCH_100K=1 (`make bench-100k`). The figures are compared with
// Ironic 21.4's in docs/benchmarks.md. `go test ./...` without -bench runs no
// benchmark and starts no server.
package bench
