// Package bench holds Anvil's speed benchmarks. They build the anvil binary,
// start `anvil serve` as a separate process on a loopback port with a fresh
// SQLite database, and drive it through the real Ironic HTTP API, so what they
// measure is what a client sees (HTTP, JSON, SQLite, conductor workers).
//
// Run them with `make bench` (go test -run '^$' -bench . -benchmem ./bench/...).
// The figures they report are compared with Ironic 21.4's in the README.
// `go test ./...` without -bench runs no benchmark and starts no server.
package bench
