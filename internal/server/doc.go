// Package server wires Anvil together for `anvil serve`: the store (wrapped
// to publish node changes on the event broker and to count lock attempts),
// the driver registry (the only place that imports driver implementations),
// the conductor, the API with its watch stream, /metrics and the dashboard
// (/dashboard; a browser's GET / is redirected there, an API client's GET /
// is Ironic's root); and runs them until the context ends.
package server
