// Package workq hands calls from API processes to conductors through
// PostgreSQL, instead of a new RPC system: the caller inserts a row for the
// owning conductor (table conductor_calls) and wakes it with NOTIFY; the
// conductor claims its rows one at a time with SELECT ... FOR UPDATE SKIP
// LOCKED, runs the call, and writes the answer (an error, or the handler's
// reply: CallReply) into the row before it commits; the caller polls its row (bounded, with a deadline), deletes it
// and returns the answer. A call no conductor took before the deadline is
// withdrawn and answered 503; one whose caller died is never run once it is
// two minutes old, and its owner deletes it.
//
// Answers keep a fault's kind and message (the client's error is the one
// the conductor would have given in-process); any other error is reported
// as an internal failure without its text.
package workq
