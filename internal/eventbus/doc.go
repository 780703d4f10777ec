// Package events is the server side of Anvil's watch stream: a Broker that
// numbers node changes, keeps the most recent ones for resumption and fans
// them out to bounded subscriptions, and a store decorator (Store) that
// publishes every successful node write, so the conductor needs no hook.
// The wire types, the SSE encoding and the Go client are public in
// pkg/events; the stream is served by internal/api at GET /v1/events/stream.
//
// Invariants:
//
//   - Publish never blocks on a subscriber: each subscription has a bounded
//     queue, and a subscriber that lets it fill up is cut off with a final
//     "overflow" event (it reconnects with its last event ID and loses nothing
//     while that ID is still in the ring).
//   - A resume's backlog is never copied: the subscription replays it from
//     the ring as its reader takes it (TakeUpTo bounds a batch), so a
//     thousand readers resuming from far back cost no more memory than one;
//     a reader the ring overtakes mid-replay gets an overflow event at its
//     position, and resuming from there is answered reset.
//   - Event IDs grow strictly. They start at the broker's start time in
//     microseconds, so an ID from a previous run is older than the ring and
//     a resume from it answers "reset" (re-read the nodes) instead of
//     silently skipping the changes made while the server was down.
//     Events numbered elsewhere (the log processes share on PostgreSQL,
//     internal/eventlog) are relayed with their IDs (Relay): increasing,
//     not necessarily consecutive; a resume is served from the ring when
//     the reader's ID is at or above the last ID evicted from it. The store
//     decorator then sends to that log (StoreVia) rather than to the broker.
//   - For one node, events come in the order its writes were applied: the
//     decorator publishes before the write call returns, and a stale
//     publication (an older version than one already published) is dropped
//     because the newer event already carries its changes.
//   - An event carries the node's new values (and, for updates, the previous
//     ones), so a reader never has to ask the API what changed.
//   - Every event is JSON-encoded once, when published (Event.Encode).
package eventbus
