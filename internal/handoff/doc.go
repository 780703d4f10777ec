// Package handoff connects the API of an API-only process (serve --role
// api) to the conductors through internal/workq: the verbs that start work
// on a node — provision verbs, power changes and agent heartbeats — are
// handed to the node's owner on the hash ring of live conductors, and the
// API answers with the owner's answer (202 once state and target are saved,
// or the owner's error). Everything else the API asks runs in the API
// process under the node lock, as in a single process.
//
// Handler is the conductor side: it runs handed-over calls.
package handoff
