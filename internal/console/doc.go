// Package console is Anvil's console service: for each node whose console
// this process holds (the conductor that owns the node), one connection to
// the BMC's serial console (a Source, opened through the node's console
// interface), its output captured into a bounded per-node log, and any
// number of viewers attached to it (the WebSocket route of internal/api,
// `anvil node console`).
//
// Invariants:
//
//   - A node's log keeps the last Config.PerNode bytes of console output,
//     all logs together at most Config.Total (the least recently written
//     logs of nodes whose console is not held are dropped first); a log
//     outlives its session, so a failed deploy's boot output can be read
//     afterwards.
//   - The first viewer attached is read-write, the others read-only; when
//     the read-write viewer leaves, the longest attached read-only viewer
//     takes its place.
//   - Output never waits for a viewer: each viewer has a bounded queue and
//     one that lets it fill up is cut off.
//   - Stopping a node's console (disabled, or this process no longer owns
//     the node) ends its viewers with the reason and closes the Source.
//   - While a console is held, a broken Source is reopened with backoff.
//
// The Service is the mechanism; which nodes are held is decided by a
// Resolver (Controller), which the conductor answers.
package console
