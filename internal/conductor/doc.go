// Package conductor applies every change to a node, as Ironic's conductor
// does: it takes the node's lock (the reservation column, by compare-and-set),
// checks the request against the locked node, moves the node through the
// state machine, saves the new provision state and target before answering,
// and runs the long work on a bounded worker pool. The work fires done, fail,
// wait or hold, records last_error and history, and releases the lock. No
// other package moves a node through the state machine.
//
// Each decision has one place:
//
//   - internal/fsm decides where an event leads and which target the node
//     then heads for (manual clean included); task.fire applies, records and
//     logs it, and is the only code that writes provision_state and
//     target_provision_state;
//   - a provision verb's legality is checked once, under the lock
//     (checkProvision); the verb's microversion gate is the API's;
//   - events a flow raises on its own node go through task.advance: the
//     machine accepts them by construction, and a refusal (a conductor bug)
//     is logged, recorded as last_error and fails the node rather than
//     leaving it in a transient state.
//
// An operation that booted the agent ramdisk and fails, times out or is
// aborted has it torn down by its interface (driver.RamdiskCleaner,
// teardown.go), powering the node off where Ironic's error handlers and
// aborts do; an abort that needs this takes a worker.
//
// Requests outside the state machine follow Ironic's pattern too: power
// (SetPower) and virtual media attach/detach (AttachVirtualMedia,
// DetachVirtualMedia, vmedia.go) lock the node, validate, clear last_error
// and run in a worker that records a failure in last_error and history;
// boot device, GetVirtualMedia and InjectNMI answer synchronously. Vendor
// passthru (vendor.go) takes the lock when the method asks for it and runs
// synchronous methods while the caller waits, asynchronous ones in a
// worker. The power sync also records the BMC's health when the power
// interface reports it (driver.HealthReader).
//
// The conductor takes a [Store], the part of the storage contract it uses.
//
// [Conductor] is the lifecycle core: the lock (task.go), the worker pool,
// the provision and power verbs (Provision, SetPower) and their checks,
// the transitions (task.fire), flows (flows.go), steps (steps.go), the
// callbacks that resume and continue work and time it out (callbacks.go,
// with operations.go's table), the take-over of dead conductors' locks
// (periodic.go), the hash ring ownership (ownership.go), the diagnosis of
// a saved failure (diagnosis.go), Start and Shutdown. Work on a locked node
// that needs no more than the task is written as methods of the task.
// Everything else is a service: a type holding the core, taken with the
// core's method of the same name (services.go), each one of the API's
// interfaces (internal/api backend.go) or another package's:
//
//   - Nodes: a node's creation, update, deletion, maintenance,
//     validation, traits, target RAID configuration (nodes.go, traits.go,
//     raid.go); with the core's verbs and Allocations, the API's Lifecycle;
//   - Allocations: allocations (allocations.go);
//   - NodeRecords: ports, portgroups, VIFs, volume connectors and targets,
//     ports an inspection found (ports.go, portgroups.go, vifs.go,
//     volumes.go);
//   - Management: boot device, virtual media, console, boot mode and
//     secure boot, indicators, NMI (power.go, vmedia.go, console.go,
//     bootmode.go, indicators.go, vendor.go);
//   - Hardware: the hardware types, vendor passthru, RAID properties
//     (conductor.go, vendor.go, raid.go);
//   - Agents: the agent's lookup, heartbeat and inspection data (agent.go,
//     callbacks.go);
//   - Consoles: which nodes' consoles this conductor holds
//     (internal/console's Resolver, console.go);
//   - PowerSync: the periodic power sync and its counters (periodic.go,
//     powersync.go).
//
// Invariants: a lock is always released (even on cancellation: release uses
// its own context); a worker slot is taken before a transition that needs one
// is saved, so "no free worker" (503) changes nothing; on start a conductor
// fails the transient work it left behind and releases its own locks.
//
// Beside nodes it owns what changes under a node's lock: ports,
// portgroups (ports.go, portgroups.go), traits (traits.go), VIFs (vifs.go,
// Ironic's noop and flat network semantics) and allocations
// (allocations.go: a worker picks and locks a matching node; unfinished
// allocations resume on start and are taken over from dead conductors),
// volume connectors and targets (volumes.go: created without a lock, as
// Ironic's API does; changed under the lock of a powered-off node, deleted
// under it when the node is powered off or in DELETE_ALLOWED_STATES).
// Deploy templates (templates.go) change without a lock; a deploy adds the
// steps of those named by instance_info.traits (which must be node traits)
// to its plan in Ironic's merged priority order, user deploy_steps
// overriding them; known steps are validated when the deploy is asked for
// (a 400), steps the driver does not offer fail the deploy when planned,
// but for an interface that learns its steps from its agent
// (driver.StepLearner, custom-agent's in-band steps), whose steps are
// planned as asked and checked when they run.
// Runbooks (runbooks.go) change without a lock too (records.go has the
// version-checked retry both use); a clean or service request naming one
// reads it under the node's lock after the state check and runs its steps,
// in its order, as the manual clean or service steps when the node's
// traits name it (Ironic's _handle_runbook before 1.112).
// Inspection rules (inspection_rules.go) change without a lock too; an
// inspection that stored a new inventory (the agent's continue_inspection,
// an out-of-band inspection returning done) runs the main-phase rules on
// it under the node's lock before it finishes (package inspectrule); a
// rule's error fails the inspection.
//
// BIOS settings and firmware components that a bios or firmware interface
// reads (driver.Task.BIOS and Firmware, or driver.Cacher) are saved after
// each step, after verifying, when cleaning or servicing starts and after an
// inspection (stepargs.go);
// user steps' arguments are checked against the steps' argsinfo before a
// clean, deploy or service runs, as Ironic's _validate_user_step.
//
// Periodic work (power sync, wait-state timeouts, take-over of dead
// conductors' locks) runs only for the nodes this conductor owns on the hash
// ring of live conductors (ownership.go, internal/ring), so several
// conductors on one database divide it; a lock of a live conductor is never
// broken.
//
// Flows are tested as transcripts (testdata/*.txt, regenerated with
// `go test ./internal/conductor -run Transcript -rewrite`).
package conductor
