// Package storetest is the conformance suite of store.Store: one set of
// table-driven scenarios that every implementation (sqlite, postgres) must
// pass, so both behave the same for every method and every error the
// contract names — including the reservation compare-and-set under
// concurrency, optimistic concurrency, keyset pagination over every sort key,
// history pruning, cascading deletes, the JSON and time round trips, and
// migrate up → down → up for stores that implement Migrator.
//
// Usage, from an implementation's test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
//	}
package storetest
