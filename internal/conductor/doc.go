// Package conductor applies every change to a node, as Ironic's conductor
// does: it takes the node's lock (the reservation column, by compare-and-set),
// checks the transition against internal/fsm, saves the new provision state and
// target before answering, and runs the long work on a bounded worker pool
// that fires done/fail/wait, records last_error and history, and releases the
// lock. No other package moves a node through the state machine.
//
// Invariants: a lock is always released (even on cancellation: release uses
// its own context); a worker slot is taken before a transition that needs one
// is saved, so "no free worker" (503) changes nothing; on start a conductor
// fails the transient work it left behind and releases its own locks.
package conductor
