package api

import (
	"context"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// The API reads through three small readers (each a few of store.Store's
// role stores; the API only reads through them) and writes through six
// services of the conductor side (Lifecycle in three parts), each an
// interface the API owns (the server wires one store, and one conductor's
// core and services, into all of them). Readers'
// errors are those of store.Store (store.ErrNotFound, ...); the services
// answer *fault.Error for anything the client caused (mapped to Ironic's
// status codes), plain errors otherwise (500).

// NodeReader reads nodes and the records that travel with them (ports,
// portgroups, allocations), with the broker of the node change stream.
// eventbus.Store's publisher satisfies it: the API needs the broker for GET
// /v1/events/stream, so a store that does not publish its changes cannot be
// wired in by mistake.
type NodeReader interface {
	// Nodes reads nodes (GetNode, ListNodes, CountNodes, CountNodeGroups).
	Nodes() store.NodeStore
	// Ports reads ports and portgroups.
	Ports() store.PortStore
	// Allocations reads allocations.
	Allocations() store.AllocationStore
	// Broker is the stream the store publishes its node changes on; never nil.
	Broker() *eventbus.Broker
}

// NodeDetailReader reads what a node accumulates: history (through Nodes),
// its diagnosis, BIOS settings, firmware components, volume connectors and
// targets.
type NodeDetailReader interface {
	Nodes() store.NodeStore
	Diagnoses() store.DiagnosisStore
	Settings() store.SettingsStore
	Volumes() store.VolumeStore
}

// RecordReader reads the records with no node: conductors, chassis, deploy
// templates, runbooks, inspection rules.
type RecordReader interface {
	Conductors() store.ConductorStore
	Chassis() store.ChassisStore
	DeployTemplates() store.DeployTemplateStore
	Runbooks() store.RunbookStore
	InspectionRules() store.InspectionRuleStore
	// Records keeps the record kinds on the generic record table
	// (record_kinds.go), read and written by the API itself.
	Records() store.RecordStore
}

// Lifecycle the node verbs: creation, updates and deletion under the node's
// lock, provision and power verbs, maintenance, validation, traits, the
// target RAID configuration, and allocations (which pick and change nodes).
// It is three parts, each one service of a conductor (its core's Verbs,
// its Nodes, its Allocations); an API-only process's handoff is a whole
// Lifecycle, written to route each verb (Wire takes it whole).
type Lifecycle interface {
	Verbs
	Nodes
	Allocations
}

// Verbs the verbs that move a node through the state machine or change
// its power, and the name of the conductor that answers them.
type Verbs interface {
	// Host is this conductor's name (shown as a node's "conductor").
	Host() string
	// Provision applies a provision verb (PUT /states/provision).
	Provision(ctx context.Context, ident string, req conductor.ProvisionRequest) error
	// SetPower applies a power target (PUT /states/power).
	SetPower(ctx context.Context, ident string, req conductor.PowerRequest) error
}

// Nodes the changes of a node itself under its lock.
type Nodes interface {
	// CreateNode validates the driver and interfaces, fills defaults and the
	// initial state (enroll, or available when initialAvailable) and stores n.
	CreateNode(ctx context.Context, n *model.Node, initialAvailable bool) error
	// UpdateNode loads the node under its lock, calls apply on a copy, checks
	// Ironic's rules on what may change in which state, and saves it.
	UpdateNode(ctx context.Context, ident string, apply func(n *model.Node) error) (*model.Node, error)
	// DeleteNode deletes a node in a delete-allowed state or in maintenance.
	DeleteNode(ctx context.Context, ident string) error
	// SetMaintenance sets (on) or clears maintenance with a reason.
	SetMaintenance(ctx context.Context, ident string, on bool, reason string) error
	// Validate runs every interface's validation without touching hardware.
	Validate(ctx context.Context, ident string) (map[string]conductor.ValidateResult, error)
	// SetTraits replaces a node's traits with change(current) under its
	// lock, in any state. Errors: fault NotFound, Conflict (locked), Invalid
	// (more than 50 traits), and change's own.
	SetTraits(ctx context.Context, ident string, change func(cur []string) ([]string, error)) (*model.Node, error)
	// SetTargetRAIDConfig validates (unless empty) and stores a node's
	// target RAID configuration. Errors: fault NotFound (node; a raid
	// interface without RAID support), Conflict, Invalid (schema).
	SetTargetRAIDConfig(ctx context.Context, ident string, cfg model.JSON) error
}

// Allocations (1.52) the allocations, which pick and change nodes.
type Allocations interface {
	// CreateAllocation stores an allocation and allocates a node in a
	// worker, or backfills the given node at once.
	CreateAllocation(ctx context.Context, a *model.Allocation, backfill string) error
	UpdateAllocation(ctx context.Context, ident string, apply func(a *model.Allocation) error) (*model.Allocation, error)
	DeleteAllocation(ctx context.Context, ident string) error
}

// Management a node's management calls that reach its BMC: boot device,
// virtual media, console, boot mode and secure boot, indicators, NMI.
type Management interface {
	GetBootDevice(ctx context.Context, ident string) (conductor.BootDevice, error)
	SetBootDevice(ctx context.Context, ident string, dev conductor.BootDevice) error
	SupportedBootDevices(ctx context.Context, ident string) ([]string, error)
	// GetVirtualMedia lists the node's virtual media devices; Attach and
	// Detach start a worker (failures show in last_error). A management
	// interface without virtual media answers fault Invalid
	// (UnsupportedDriverExtension).
	GetVirtualMedia(ctx context.Context, ident string) ([]driver.VirtualMedia, error)
	AttachVirtualMedia(ctx context.Context, ident string, req conductor.VirtualMediaAttach) error
	DetachVirtualMedia(ctx context.Context, ident, user string, deviceTypes []string) error
	// Console reads whether the console is enabled and its connection
	// information; SetConsole enables or disables it. A node without a
	// console interface answers fault Invalid (UnsupportedDriverExtension).
	Console(ctx context.Context, ident string) (enabled bool, info map[string]any, err error)
	SetConsole(ctx context.Context, ident, user string, enabled bool) error
	// ChangeBootMode and ChangeSecureBoot start a boot mode or secure boot
	// change (1.76) in a worker. Errors: fault Invalid (bad mode, no
	// management), Conflict (locked, or a transient state).
	ChangeBootMode(ctx context.Context, ident, user, mode string) error
	ChangeSecureBoot(ctx context.Context, ident, user string, on bool) error
	// Indicators (1.63): the components' indicators, one's state, and a
	// change of it. Errors: fault Invalid (unsupported, unknown component
	// or indicator).
	Indicators(ctx context.Context, ident string) ([]driver.Component, error)
	IndicatorState(ctx context.Context, ident, component, indicator string) (string, error)
	SetIndicatorState(ctx context.Context, ident, user, component, indicator, state string) error
	// InjectNMI injects a non-maskable interrupt, synchronously.
	InjectNMI(ctx context.Context, ident, user string) error
}

// NodeRecords the records under a node, changed under its lock: ports,
// portgroups, VIFs, volume connectors and targets.
type NodeRecords interface {
	// Ports change under their node's lock.
	CreatePort(ctx context.Context, p *model.Port) error
	UpdatePort(ctx context.Context, ident string, apply func(p *model.Port) error) (*model.Port, error)
	DeletePort(ctx context.Context, ident string) error
	// Portgroups change under their node's lock (created without it).
	CreatePortgroup(ctx context.Context, pg *model.Portgroup) error
	UpdatePortgroup(ctx context.Context, ident string, apply func(pg *model.Portgroup) error) (*model.Portgroup, error)
	DeletePortgroup(ctx context.Context, ident string) error
	// VIFs (1.28) follow the node's network interface: noop keeps none,
	// flat records them on a free portgroup or port.
	ListVIFs(ctx context.Context, ident string) ([]string, error)
	AttachVIF(ctx context.Context, ident string, req conductor.VIFRequest) error
	DetachVIF(ctx context.Context, ident, vif string) error
	// Volume connectors and targets (1.32): created without a lock; an
	// update locks the node the changed record names and needs it powered
	// off, a deletion locks its node and needs it powered off or in a
	// delete-allowed state (fault Invalid otherwise). Errors: fault
	// NotFound, Conflict (locked node, duplicate), and apply's own.
	CreateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error
	UpdateVolumeConnector(ctx context.Context, id string, apply func(c *model.VolumeConnector) error) (*model.VolumeConnector, error)
	DeleteVolumeConnector(ctx context.Context, id string) error
	CreateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error
	UpdateVolumeTarget(ctx context.Context, id string, apply func(t *model.VolumeTarget) error) (*model.VolumeTarget, error)
	DeleteVolumeTarget(ctx context.Context, id string) error
}

// Records the records with no node lock: chassis, deploy templates,
// runbooks, inspection rules.
type Records interface {
	// Chassis change without a node lock; DeleteChassis refuses a chassis
	// nodes name (fault Invalid). Errors: fault NotFound, Conflict.
	CreateChassis(ctx context.Context, c *model.Chassis) error
	UpdateChassis(ctx context.Context, id string, apply func(c *model.Chassis) error) (*model.Chassis, error)
	DeleteChassis(ctx context.Context, id string) error
	// Deploy templates (1.55): stored without a node lock; a deploy reads
	// them when it plans its steps. Errors: fault NotFound, Conflict
	// (uuid or name taken), and apply's own.
	CreateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error
	UpdateDeployTemplate(ctx context.Context, ident string, apply func(t *model.DeployTemplate) error) (*model.DeployTemplate, error)
	DeleteDeployTemplate(ctx context.Context, ident string) error
	// Runbooks (1.92): stored without a node lock; a provision request
	// naming one reads it (ProvisionRequest.Runbook). Errors: fault
	// NotFound, Conflict (uuid or name taken), and apply's own.
	CreateRunbook(ctx context.Context, r *model.Runbook) error
	UpdateRunbook(ctx context.Context, ident string, apply func(r *model.Runbook) error) (*model.Runbook, error)
	DeleteRunbook(ctx context.Context, ident string) error
	// Inspection rules (1.96): stored without a node lock; an inspection
	// reads them when it has stored its data. Errors: fault NotFound,
	// Conflict (uuid taken), and apply's own.
	CreateInspectionRule(ctx context.Context, r *model.InspectionRule) error
	UpdateInspectionRule(ctx context.Context, id string, apply func(r *model.InspectionRule) error) (*model.InspectionRule, error)
	DeleteInspectionRule(ctx context.Context, id string) error
	DeleteInspectionRules(ctx context.Context) error
}

// Agents the agent's callbacks: heartbeat, lookup, inspection data.
type Agents interface {
	// Heartbeat is an agent's callback: it resumes a node in a wait state.
	Heartbeat(ctx context.Context, ident string, hb ipa.Heartbeat) error
	// Lookup finds the node an agent runs on (GET /v1/lookup) by its MACs
	// or UUID and returns it with the agent token to use (empty once one was
	// issued). Errors: fault NotFound for any miss, including a node in a
	// state where no agent is expected.
	Lookup(ctx context.Context, macs []string, nodeUUID string) (*model.Node, string, error)
	// ContinueInspection takes the inventory a ramdisk pushes for a node in
	// inspect wait (POST /v1/continue_inspection), found by UUID or MACs;
	// token must match the one issued, if any. Errors: fault NotFound,
	// Conflict, Forbidden-style fault errors as Ironic answers them.
	ContinueInspection(ctx context.Context, macs []string, nodeUUID, token string, inventory, pluginData map[string]any) (*model.Node, error)
}

// Hardware the hardware types: what is enabled, their vendor methods and
// RAID properties, and a node's vendor passthru.
type Hardware interface {
	// Drivers lists the enabled hardware types.
	Drivers() []conductor.DriverInfo
	// Driver returns one hardware type. Errors: fault NotFound.
	Driver(name string) (conductor.DriverInfo, error)
	// Vendor passthru: a node's or a hardware type's vendor methods, and a
	// call to one (Ironic's errors: 400 no handler / wrong HTTP method /
	// bad arguments, 500 or 404 for the driver's failures).
	VendorMethods(ctx context.Context, ident string) (map[string]driver.VendorMethod, error)
	VendorPassthru(ctx context.Context, ident string, req conductor.VendorRequest) (conductor.VendorResult, error)
	DriverVendorMethods(ctx context.Context, name string) (map[string]driver.VendorMethod, error)
	DriverVendorPassthru(ctx context.Context, name string, req conductor.VendorRequest) (conductor.VendorResult, error)
	// RAIDLogicalDiskProperties lists what a hardware type's default raid
	// interface takes in a logical disk. Errors: fault NotFound.
	RAIDLogicalDiskProperties(driverName string) (map[string]string, error)
}

// Wire fills cfg's readers from st and its services from the first of
// services that provides each (the server wires one store, its conductor
// or an API-only process's handoff, and the records service), and panics
// naming the first interface none provides.
func Wire(cfg Config, st any, services ...any) Config {
	cfg.Nodes = provide[NodeReader]("store's NodeReader", st)
	cfg.Details = provide[NodeDetailReader]("store's NodeDetailReader", st)
	cfg.Catalog = provide[RecordReader]("store's RecordReader", st)
	cfg.Lifecycle = lifecycleOf(services...)
	cfg.Management = provide[Management]("Management service", services...)
	cfg.NodeRecords = provide[NodeRecords]("NodeRecords service", services...)
	cfg.Records = provide[Records]("Records service", services...)
	cfg.Agents = provide[Agents]("Agents service", services...)
	cfg.Hardware = provide[Hardware]("Hardware service", services...)
	return cfg
}

// lifecycleOf is the first service that is a whole Lifecycle (an API-only
// process's handoff), else the Lifecycle of the services that provide its
// parts (a conductor's core, Nodes and Allocations).
func lifecycleOf(from ...any) Lifecycle {
	for _, v := range from {
		if l, ok := v.(Lifecycle); ok {
			return l
		}
	}
	return lifecycle{
		Verbs:       provide[Verbs]("Lifecycle's Verbs service", from...),
		Nodes:       provide[Nodes]("Lifecycle's Nodes service", from...),
		Allocations: provide[Allocations]("Lifecycle's Allocations service", from...),
	}
}

// lifecycle is a Lifecycle made of its parts.
type lifecycle struct {
	Verbs
	Nodes
	Allocations
}

func provide[I any](what string, from ...any) I {
	for _, v := range from {
		if i, ok := v.(I); ok {
			return i
		}
	}
	panic("api.Wire: no " + what)
}
