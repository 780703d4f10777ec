// Package workq hands calls from API processes to conductors through
// PostgreSQL, instead of a new RPC system: the caller inserts a row for the
// owning conductor (table conductor_calls) and wakes it with NOTIFY; the
// conductor claims rows with SELECT ... FOR UPDATE SKIP LOCKED, up to 8 at
// once (each in its own transaction; a node's calls one at a time, in the
// order they were queued), runs the call, and writes the answer (an error,
// or the handler's reply: CallReply) into the row with a NOTIFY of its id
// before it commits; the caller, woken by that NOTIFY (and looking every
// 250 ms anyway, every 5 ms while its listener is down; bounded, with a
// deadline), takes the answer, deletes the row and returns it. A call no conductor took before the deadline is
// withdrawn and answered 503; one whose caller died is never run once it is
// two minutes old, and its owner deletes it.
//
// Answers keep a fault's kind and message (the client's error is the one
// the conductor would have given in-process); any other error is reported
// as an internal failure without its text.
package workq
