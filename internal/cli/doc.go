// Package cli is Anvil's operator command line: `anvil node ...`,
// `anvil port ...`, `anvil volume connector|target ...`, `anvil driver
// ...`, `anvil conductor ...` and
// `anvil fleet report`, in python-ironicclient's grammar so a script
// written for `openstack baremetal` runs with `anvil` in its place.
//
// Roles of the files:
//
//   - client.go: the HTTP client (endpoint, microversion header, Ironic's
//     error body turned into "<faultstring> (HTTP <code>)", 409-locked and
//     503 retries with backoff, list paging).
//   - format.go, yaml.go, output.go: the output formatters of cliff (table,
//     json, value, yaml, csv, shell) and the -c column selection, printing
//     values the way Python prints them (None, True, {'k': 'v'}).
//   - fields.go: field names and display labels, as python-ironicclient.
//   - root.go: global options (--os-endpoint, OS_ENDPOINT, ANVIL_URL, ...),
//     error reporting and exit codes.
//   - node*.go, port.go, volume.go, driver.go: the resource commands.
//   - actions.go, batch.go, progress.go: provision, power and maintenance
//     verbs, on one node or on many (selectors, bounded concurrency,
//     per-node results).
//   - wait.go: the Waiter seam behind --wait and `anvil node wait`;
//     poll.go is its polling implementation, the only file that polls.
//   - fleet.go: `anvil fleet report`.
//
// Invariants: commands write only to the writers they are given and never
// call os.Exit themselves (the Exit hook of Env does); every request has
// a context and a bounded timeout; a node may be named by UUID or by name
// everywhere.
package cli
