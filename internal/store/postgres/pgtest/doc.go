// Package pgtest gives tests a PostgreSQL database: the one named by
// $ANVIL_TEST_POSTGRES_DSN, or a throwaway server it starts itself from the
// installed binaries (/usr/lib/postgresql/*/bin), as the postgres user when
// running as root, listening only on a unix socket in a temporary directory,
// with durability off for speed.
//
// Invariants:
//   - one Server per test binary, started on first use; every DSN call gets
//     its own fresh schema (search_path), dropped when its test ends, so
//     tests are isolated and may run in parallel;
//   - Stop (from TestMain) stops the server and removes its directory; if the
//     binary dies first, the kernel stops the server (Linux);
//   - without PostgreSQL, tests skip with a hint to install it, unless $CI
//     is set: then they fail, because CI must run both stores.
//
// Usage:
//
//	var pg = pgtest.New()
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		pg.Stop()
//		os.Exit(code)
//	}
package pgtest
