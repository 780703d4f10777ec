// Package server wires Anvil together for `anvil serve`: the store (wrapped
// to publish node changes on the event broker and to count lock attempts),
// the driver registry (the only place that imports driver implementations),
// the conductor, the API with its watch stream, /metrics and the dashboard
// (/dashboard; a browser's GET / is redirected there, an API client's GET /
// is Ironic's root); and runs them until the context ends. Before the
// conductor starts it claims the conductor name for the life of the process
// (internal/hostlock) and refuses a name a live process holds. --role
// conductor runs the conductor without the Ironic API (the listener serves
// /metrics); --role api runs the API and hands verbs to the owning conductor
// (internal/handoff over internal/workq, which every conductor on
// PostgreSQL serves); roles other than all need PostgreSQL.
package server
