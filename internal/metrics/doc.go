// Package metrics exposes Anvil's Prometheus metrics at /metrics:
//
//   - node gauges computed at scrape time from the store (one list query):
//     nodes by provision state, power state, fault, maintenance and lock,
//     and the age of the oldest node in each wait state;
//   - provision transitions by from/to, time spent per state (histogram)
//     and failures by state, fed by the node history entries of the event
//     broker (so every fire of the state machine counts, even two in one save);
//   - API requests and latency by route pattern, method and status
//     (Instrument), stream connections excluded from the latency;
//   - the event stream's counters, the conductor's worker pool (when the
//     conductor reports it: Pool), its power-sync sweeps (AddPowerSync) and
//     node lock attempts and waits.
//
// Label values are bounded: route patterns, not paths; Ironic's state names.
// Nothing here blocks a conductor: observers only touch atomic counters.
package metrics
