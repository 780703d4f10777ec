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
// PostgreSQL serves); roles other than all need PostgreSQL. On PostgreSQL
// node events go to the log processes share (internal/eventlog), which
// every process serving the API follows into its broker; on SQLite the
// broker is fed in process.
//
// It also guards the listener (guard.go, hosts.go, http.go, audit.go):
// outermost the Host check against DNS rebinding, then authentication
// (internal/auth; boot files and Ironic's public routes stay open), then
// the audit record of each write (with the node the API resolved); what a
// principal may do is decided by the API on its own route table
// (internal/api authz.go, internal/policy), /metrics by
// anvil:metrics:get here; the http.Server has read, write and idle timeouts,
// long answers (event stream, boot files) get the write timeout per write,
// and a listener cap bounds open connections, those of one client address
// too (http.go); a request body must keep arriving at a minimum rate after
// a grace or is answered 408, and at the cap such a body's connection is
// evicted for a new client (pace.go); TLS when a certificate is
// configured. Every log line goes through secret.Handler.
package server
