// Package eventlog carries node events between the processes that share one
// PostgreSQL database, so that the watch stream, --wait and the transition
// metrics of any API process see the changes every process makes.
//
// Each process's store decorator (internal/events.StoreVia) appends its
// events to a Log: a writer goroutine inserts what has queued into table
// node_events in one transaction (a group commit) and NOTIFYs channel
// anvil_node_events; the decorator's caller waits for that commit before its
// write call returns. Each process serving the API follows the table
// (Follow: LISTEN, then read the rows above its last ID; a poll covers a
// lost notification) and relays the rows, with the table's IDs, into its
// in-process Broker, which fans them out to its streams as before.
//
// Invariants:
//
//   - IDs are global and allocated in commit order: writers take one
//     transaction-level advisory lock before inserting, so a row never
//     becomes visible after a row with a higher ID. A reader that has seen
//     ID N has seen every event below N; a client resuming with
//     Last-Event-ID N on any process (after Broker.Sync, which catches up
//     with the table) gets exactly the events above N.
//   - For one node, events are in the order of its writes, across
//     processes, for writes made under the node's lock: the writer's event
//     is committed before its write call returns, hence before the lock
//     passes on. (A lock release is published just after the release, so a
//     next holder in another process may publish its reservation first.)
//   - The table holds the newest Keep events (20,000 by default; pruned by
//     the writers as they go). A new broker starts with the newest of them
//     in its ring, so a client reconnecting to a process that just started
//     resumes without loss; an ID older than what is kept answers "reset".
//   - The NOTIFY payload is only a wake-up (the newest ID), never an event:
//     PostgreSQL limits payloads to 8,000 bytes and an event may be larger.
//   - Writing never blocks on readers; a failed insert is retried a few
//     times, then the events are dropped with an error in the log (the node
//     writes they describe are already committed).
//
// SQLite serves one process, whose decorator publishes straight to its
// broker: this package is not used there.
package eventlog
