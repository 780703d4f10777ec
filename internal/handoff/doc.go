// Package handoff connects the API of an API-only process (serve --role
// api) to the conductors through internal/workq: the calls that start work
// on a node — provision verbs, power changes, agent heartbeats and agents'
// inspection data (continue_inspection, its node found by UUID or MAC in
// the API process) — are handed to the node's owner on the hash ring of
// live conductors, and the API answers with the owner's answer (202 once
// state and target are saved, or the owner's error). New allocations are
// handed over too: a backfill to its node's owner, others to the owner of
// the allocation's UUID, so that a conductor's worker runs them and a
// conductor takes them over if it dies. Everything else the API asks runs
// in the API process under the node lock, as in a single process: node,
// port and portgroup changes, VIFs, traits, boot device, allocation updates
// and deletions, and agent lookups (the token is issued under the node lock
// and answered to the agent at once, which a hand-off could not return).
//
// Conductor writes each method of the API's Lifecycle and Agents (it
// embeds no conductor), so a verb the API gains does not compile until it
// is routed here, to the owner or to the local conductor.
//
// Handler is the conductor side: it runs handed-over calls.
package handoff
