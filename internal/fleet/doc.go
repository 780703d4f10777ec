// Package fleet holds the rules a fleet report applies to every node, so
// that `anvil fleet report` (internal/cli) and the dashboard's summary
// (GET /v1/fleet/summary, internal/api) count the same nodes as failed,
// in power error or stuck. It is pure: callers pass the clock's reading.
package fleet
