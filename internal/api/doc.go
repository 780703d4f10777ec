// Package api is Anvil's HTTP API: Ironic's v1 REST API, wire-compatible
// with the baremetal CLI (python-ironicclient) and gophercloud's
// openstack/baremetal/v1.
//
// Besides Ironic's endpoints it serves Anvil's extensions: the watch stream
// (GET /v1/events/stream, events.go: at most MaxStreamsPerClient open per
// principal, or per address under noauth, more answered 429; each writes
// a bounded batch at a time, so a reader that stops reading holds a bounded
// buffer) and the fleet views the dashboard
// reads (GET /v1/fleet/nodes and /v1/fleet/summary, fleet.go), which render
// nodes with the same field plan and masking as GET /v1/nodes, and a node's
// serial console (GET /v1/nodes/{ident}/console/ws, a WebSocket, and
// /console/log, its recorded output: console_ws.go, over internal/console),
// and a failed node's diagnosis (GET /v1/nodes/{ident}/diagnosis,
// diagnosis.go, as the conductor stored it).
//
// New builds an http.Handler over a Store (the reads the API makes, and the
// broker of the store's change stream for GET /v1/events/stream) and a
// Conductor (every write to a node or port goes through it, under the
// node's lock, and so do the agent's lookup, heartbeat and
// continue_inspection). Both are interfaces declared here, holding only
// what the API uses; every endpoint's backing is a method of one of them,
// so a part left unwired is a compile error, never a silent 404. The
// package knows no driver and no SQL.
//
// Invariants:
//
//   - Every request is served at one microversion 1.1 to 1.MaxMinor
//     (1.115, Ironic master's), taken from "OpenStack-API-Version: baremetal 1.N" or the
//     legacy X-OpenStack-Ironic-API-Version header (none means 1.1,
//     "latest" the maximum); anything else is answered 406 with Ironic's
//     text. Every response carries the minimum/maximum version headers, a
//     request id (as Openstack-Request-Id and X-Openstack-Request-Id) and
//     Vary; those served at a version also carry the version headers.
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
//     image_url, "password=..." inside strings, ...) are masked as "******"
//     in every response, last_error and error text, by internal/secret;
//     PATCH works on the real values.
//   - A request whose client left is answered 499 (counted apart from 5xx).
//   - Nodes render from a per-version field plan straight into a byte
//     buffer (jsonw.go), in Ironic's key order, with no per-node maps.
//
// Resources Nova's ironic driver and gophercloud use, by version:
//
//   - 1.23/1.24/1.26: /v1/portgroups (404 below 1.23) with
//     /v1/nodes/{node}/portgroups and /v1/portgroups/{pg}/ports (404 below
//     1.24); mode and properties from 1.26 (406 below, in bodies, PATCH
//     paths and ?fields=). A port's portgroup_uuid must name a group of the
//     same node; a group with ports cannot be deleted or moved.
//   - 1.28/1.67: /v1/nodes/{node}/vifs (404 below 1.28). With the noop
//     network interface attach does nothing and the list is empty; with
//     flat the VIF goes to internal_info.tenant_vif_port_id of a free
//     portgroup (preferred) or port (PXE-enabled first), as Ironic without
//     Neutron; port_uuid/portgroup_uuid choose one (1.67).
//   - 1.37: /v1/nodes/{node}/traits (404 below): CUSTOM_* or os-traits
//     2.9.0 standard names (ostraits.go, generated from Debian's
//     python3-os-traits by scripts/gen-ostraits.sh), at most 50.
//   - 1.29: PUT /v1/nodes/{node}/management/inject_nmi (404 below), 204
//     once the BMC took it.
//   - any version: vendor passthru, /v1/nodes/{node}/vendor_passthru and
//     /v1/drivers/{driver}/vendor_passthru (?method=NAME, any HTTP method,
//     a JSON object body) with .../methods; synchronous methods answer 200
//     with their value, asynchronous ones 202 (vendor.go).
//   - 1.32: volume connectors and targets (volume.go, volume_body.go):
//     /v1/volume/{connectors,targets} listed (node, detail, fields,
//     paging), shown, created, patched and deleted, and listed under
//     /v1/nodes/{node}/volume; Ironic's checks and texts, the node's
//     lock and power state checked by the conductor, target properties
//     masked. The only storage interface is noop: nothing uses them yet.
//   - 1.54: POST /v1/events: Neutron's port events, validated as Ironic
//     does and logged (204).
//   - 1.76: PUT .../states/boot_mode and .../states/secure_boot, in a
//     worker (boot_mode/secure_boot or last_error tell the outcome).
//   - 1.82/1.83: GET /v1/shards (counts, unsharded as "None") and GET
//     /v1/nodes/{node}/children.
//   - any version: GET/PUT .../states/console (fake and no-console).
//   - 1.63: GET .../management/indicators and GET/PUT
//     .../management/indicators/{name}@{component} (fake-hardware's).
//   - 1.52/1.57/1.58/1.60: /v1/allocations and /v1/nodes/{node}/allocation
//     (404 to read, 405 to write below 1.52; PATCH of name and extra from
//     1.57, 405 below; backfill with "node" from 1.58; owner from 1.60,
//     406 below). The conductor allocates in a worker; the node's
//     allocation_uuid is real.
//   - 1.55: /v1/deploy_templates (404 to read, 405 to write below):
//     TEMPLATE_SCHEMA with jsonschema's texts, a trait as name, steps on
//     the deploy interfaces with an integer priority (a digit string is
//     stored as the integer), step args masked as Ironic's step_sanitize.
//     description is accepted and stored but not shown, as in Ironic 21.4
//     (its object has no such field). Templates apply at deploy time
//     (internal/conductor, templates.go).
//
// Microversions 1.90 to 1.110 (Metal3 picks 1.110, 1.109, 1.95, 1.93 or
// 1.89), version by version:
//
//   - 1.90/1.105: OVN VTEP keys of a port's local_link_connection are
//     accepted on create only in 1.90-1.104 (406 otherwise) and hidden ({})
//     outside that range; as in Ironic, PATCH does not check them.
//   - 1.91: before 1.91, asked for with the legacy version header (Ironic
//     reads only that one), a path ending in ".json" is served without it,
//     and GET/PATCH/DELETE of a node and the heartbeat fall back to the
//     name with ".json"; from 1.91 the suffix is part of the name.
//   - 1.92: /v1/runbooks (404 to read, 405 to write below), as Ironic
//     master serves them below 1.112: RUNBOOK_SCHEMA with jsonschema's
//     texts, a trait as name (a PATCH may set any RUNBOOK_NAME_SCHEMA name,
//     as Ironic validates patches with the 1.112 schema), steps on the
//     cleaning interfaces with an integer order, owner and public (a public
//     runbook has no owner; setting public clears it), disable_ramdisk,
//     ?project= (its own and the public ones; Ironic declares it a boolean,
//     a bug: Anvil takes the project as documented), no description or
//     traits (1.112). A provision request naming a runbook is 406 below
//     1.92 (an empty one is ignored); from it the conductor runs the
//     runbook's steps as the clean or service steps (runbooks.go; the
//     project rules are internal/server's).
//   - 1.89: POST /v1/nodes/{node}/vmedia attaches an image (204; a failure
//     shows in last_error), DELETE detaches (?device_types=, or
//     .../vmedia/{device}); 1.93: GET lists the devices. 404 below them.
//   - 1.94: POST /v1/ports takes node_ident (UUID or name).
//   - 1.95: node disable_power_off (create, PATCH, shown); power off and
//     soft power off of such a node are 409 at any version, and the
//     conductor never powers it off itself (power sync, timeouts, the
//     agent's tear down and inspection; cleaning reboots it instead).
//   - 1.96: /v1/inspection_rules (inspection_rules.go), Ironic master's
//     API: create, list (detail, fields, phase, paging), show, PATCH,
//     delete one and all; sensitive rules show null conditions and
//     actions; the conductor runs them after an inspection stores its
//     data (package inspectrule, which also lists what is refused).
//   - 1.97, 1.100, 1.101: port description, vendor, category.
//   - 1.98: PATCH paths may escape "~" and "/" in keys as ~0 and ~1.
//   - 1.99: GET /v1/ports?conductor_groups= (not with node, address or
//     portgroup; ignored with shard, as in Ironic).
//   - 1.102, 1.103, 1.106: portgroup physical_network (shown from 1.102;
//     a new one is given to the group's ports), category (shown from
//     1.103), GET /v1/portgroups?shard= (406 below 1.106).
//   - 1.104: node instance_name (create, PATCH, filter; a PATCH of
//     instance_info fills it from display_name when empty).
//   - 1.107: X-OpenStack-Request-Id mirrors Openstack-Request-Id (on every
//     response, as in Ironic).
//   - 1.108: disable_ramdisk with the service verb.
//   - 1.109: node health, read-only: set by the power sync from the
//     BMC's Status.Health (redfish); null for drivers without health.
//   - 1.110: abort from "wait call-back" (the conductor applies the gate).
//
// Microversions 1.111 to 1.115 (Ironic master, 2026):
//
//   - 1.111: a port's available_for_dynamic_portgroup (create, PATCH,
//     shown; default true) and a portgroup's dynamic_portgroup (shown,
//     false: read-only, and nothing sets it, as in Ironic master); 406 for
//     either in ?fields= (or a port body or PATCH) below 1.111.
//   - 1.112: runbook traits and description. The name may be any
//     RUNBOOK_NAME_SCHEMA string; description is settable on create and
//     PATCH; traits are shown and set only through
//     /v1/runbooks/{runbook}/traits (GET; PUT a list or one trait, 204 with
//     a Location; DELETE all or one, a missing one being no error; 404
//     "The API version does not allow runbook traits" below 1.112; the
//     rules are baremetal:runbook:get and :update). A provision request
//     with a runbook at 1.112 needs a trait in common with the node (a
//     runbook without traits is refused); below, the runbook's name must
//     be a node trait. A runbook created at any version has no traits;
//     those stored before the store's migration 0016 got their name.
//   - 1.113: a history entry's project (detail); null, as Ironic master's
//     conductor records none.
//   - 1.114: a firmware component's vendor, model and serial_number (as
//     the driver reports them); below it, ?fields= naming one is Ironic's
//     400 after the node is found.
//   - 1.115: a history entry's state, target_provision_state and
//     duration_seconds (the node's provision state and target when it was
//     recorded, and the seconds since provision_updated_at then; a
//     transition's is the time it spent in the state it left). Below
//     1.115, Anvil's own duration_seconds (the time in from_state, after
//     trigger) is kept where it was; from_state, to_state and trigger stay
//     Anvil's additions at every version.
//
// Files: server.go (config, routing, headers), version.go, errors.go,
// backend.go (Store, Conductor), decode.go (bodies, arguments; Python
// reprs in messages come from internal/pyrepr), paging.go, records.go
// (the steps every record kind's handlers share: fetch by identifier, the
// marker and sort checks, show, create/update/delete answers, a list
// page, and documents as docField tables in Ironic's key order),
// patch.go (RFC 6902 on the decoded document, linear, at most 1000 operations), jsonw.go and mask.go
// (rendering), and one file per resource: root.go, nodes.go, node_list.go,
// node_body.go, render_node.go, node_states.go, history.go, ports.go,
// port_body.go, portgroups.go, portgroup_body.go, vifs.go, traits.go
// (with ostraits.go), allocations.go, deploy_templates.go, runbooks.go, chassis.go, drivers.go, conductors.go, lookup.go, agent.go,
// continue_inspection.go, inventory.go, vendor.go, volume.go (with volume_body.go), shards.go, console.go, bootmode.go,
// indicators.go, netevents.go (POST /v1/events), events.go (the watch stream) and
// metrics.go (route names for request metrics).
package api
