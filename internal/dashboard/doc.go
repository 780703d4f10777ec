// Package dashboard is the operator's web page that `anvil serve` serves at
// /dashboard: the provision state machine drawn from internal/fsm with each
// state's node count, the fleet table, a node page with its allowed
// actions, stuck nodes, the fleet report and the conductors, all kept live
// by the watch stream (GET /v1/events/stream).
//
// The page is written with the platform only (JS modules, SVG, CSS,
// EventSource; no framework, no build step) and embedded with go:embed.
// The handler holds no node data and performs no writes: the page reads and
// acts through the API (GET /v1/fleet/nodes and /v1/fleet/summary for the
// fleet, the Ironic endpoints for a node) with the browser's credentials,
// so the API's authentication, authorization and secret masking apply to
// everything it shows. Under http_basic or jwt the page logs in at
// SessionPath (internal/auth's sessions: an HttpOnly session cookie, a CSRF
// token for writes) and keeps neither password nor token; the page and its
// assets are public, as they hold no data. The diagram (lifecycle.svg) and the machine's
// description (machine.json: each state's class and the provision targets
// the machine allows there) are computed from internal/fsm when the
// handler is built, so they cannot drift from the machine.
//
// The node page's console tab is a terminal emulator (xterm.js, vendored
// from npm as built: assets/xterm.PROVENANCE.md) attached to the node's
// console WebSocket (internal/api's console_ws.go) with the browser's
// session: the machine's output as it comes (the last 64 KiB replayed
// first), keystrokes sent while this viewer holds the keyboard, and a
// read-only mark while another viewer does.
package dashboard
