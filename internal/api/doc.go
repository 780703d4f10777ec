// Package api is Anvil's HTTP API: Ironic's v1 REST API, wire-compatible
// with the baremetal CLI (python-ironicclient) and gophercloud's
// openstack/baremetal/v1.
//
// New builds an http.Handler over a store.Store (reads) and a Conductor
// (every write to a node or port goes through it, under the node's lock).
// The package knows no driver and no SQL.
//
// Invariants:
//
//   - Every request is served at one microversion 1.1 to 1.MaxMinor, taken
//     from "OpenStack-API-Version: baremetal 1.N" or the legacy
//     X-OpenStack-Ironic-API-Version header (none means 1.1, "latest" the
//     maximum); anything else is answered 406 with Ironic's text. Every
//     response carries the minimum/maximum version headers, a request id
//     and Vary; those served at a version also carry the version headers.
//   - Fields, filters, verbs and arguments newer than the request's version
//     are hidden or refused exactly where Ironic hides or refuses them
//     (406 "Request not acceptable." for most).
//   - Exactly one function (classify, errors.go) maps an error to a status:
//     *fault.Error by kind, store sentinels, anything else 500 with a
//     generic text; internal errors are logged with the request id and
//     never echoed. Error bodies are Ironic's: {"error_message": "<JSON
//     text of faultcode, faultstring, debuginfo>"}.
//   - Client input never causes a 500: bodies are size-capped (413),
//     depth-checked before decoding (400), must be JSON (415), and every
//     argument is type-checked with Ironic's wording (400).
//   - Secrets (driver_info passwords, tokens, instance_info configdrive and
//     image_url, ...) are masked as "******" in every response; PATCH works
//     on the real values.
//   - Nodes render from a per-version field plan straight into a byte
//     buffer (jsonw.go), in Ironic's key order, with no per-node maps.
//
// Files: server.go (config, routing, headers), version.go, errors.go,
// decode.go (bodies, arguments, Python-style reprs for messages), paging.go,
// patch.go (RFC 6902 via evanphx/json-patch), jsonw.go and mask.go
// (rendering), and one file per resource: root.go, nodes.go, node_list.go,
// node_body.go, render_node.go, node_states.go, history.go, ports.go,
// port_body.go, drivers.go, conductors.go.
package api
