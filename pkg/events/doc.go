// Package events is the public Go client of Anvil's watch stream (GET
// /v1/events/stream, server-sent events of node changes) and the stream's
// wire types: Event, NodeState, History, Filter and the SSE encoding.
//
// A client calls Subscribe (or Client.Subscribe for headers, an HTTP client
// or backoff bounds) and reads the channel; the client reconnects with
// Last-Event-ID after any break, so no event is lost while the server still
// keeps it, and otherwise delivers a TypeReset event (re-read the nodes).
// Resting tells when a node has stopped moving, which is what a "wait until
// deployed" loop needs. ExampleSubscribe shows the whole use.
//
// Invariants of the stream a reader can rely on:
//
//   - Event IDs grow strictly, also across server restarts.
//   - For one node, events come in the order its writes were applied.
//   - An event carries the node's new values (and, for updates, the
//     previous ones), so a reader never has to ask the API what changed.
//
// The server side (the broker that numbers and fans out events, and the
// store decorator that publishes every node write) is internal/eventbus.
package events
