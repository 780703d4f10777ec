package api

import (
	"context"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	eventbus "github.com/anvil-metal/anvil/internal/events"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Store is what the API reads; it never writes (writes go through the
// Conductor). Errors are those of store.Store (store.ErrNotFound, ...).
// eventbus.Store's publisher satisfies it: the API needs the broker of the
// store's change stream for GET /v1/events/stream, so a store that does
// not publish its changes cannot be wired in by mistake.
type Store interface {
	GetNode(ctx context.Context, ident string) (*model.Node, error)
	ListNodes(ctx context.Context, q store.NodeQuery) ([]*model.Node, error)
	CountNodes(ctx context.Context, q store.NodeQuery) (int, error)
	CountNodeGroups(ctx context.Context, q store.NodeQuery) ([]store.NodeGroup, error)
	GetPort(ctx context.Context, ident string) (*model.Port, error)
	ListPorts(ctx context.Context, q store.PortQuery) ([]*model.Port, error)
	GetPortgroup(ctx context.Context, ident string) (*model.Portgroup, error)
	ListPortgroups(ctx context.Context, q store.PortgroupQuery) ([]*model.Portgroup, error)
	GetAllocation(ctx context.Context, ident string) (*model.Allocation, error)
	ListAllocations(ctx context.Context, q store.AllocationQuery) ([]*model.Allocation, error)
	GetConductor(ctx context.Context, hostname string) (*model.Conductor, error)
	ListConductors(ctx context.Context) ([]*model.Conductor, error)
	ListHistory(ctx context.Context, nodeUUID string) ([]*model.HistoryEvent, error)
	GetHistory(ctx context.Context, nodeUUID, eventUUID string) (*model.HistoryEvent, error)
	GetDiagnosis(ctx context.Context, nodeUUID string) ([]byte, error)
	ListBIOSSettings(ctx context.Context, nodeUUID string) ([]model.BIOSSetting, error)
	GetBIOSSetting(ctx context.Context, nodeUUID, name string) (*model.BIOSSetting, error)
	ListFirmwareComponents(ctx context.Context, nodeUUID string) ([]model.FirmwareComponent, error)
	GetChassis(ctx context.Context, uuid string) (*model.Chassis, error)
	ListChassis(ctx context.Context, q store.ChassisQuery) ([]*model.Chassis, error)
	GetDeployTemplate(ctx context.Context, ident string) (*model.DeployTemplate, error)
	ListDeployTemplates(ctx context.Context, q store.DeployTemplateQuery) ([]*model.DeployTemplate, error)
	GetVolumeConnector(ctx context.Context, uuid string) (*model.VolumeConnector, error)
	ListVolumeConnectors(ctx context.Context, q store.VolumeQuery) ([]*model.VolumeConnector, error)
	GetVolumeTarget(ctx context.Context, uuid string) (*model.VolumeTarget, error)
	ListVolumeTargets(ctx context.Context, q store.VolumeQuery) ([]*model.VolumeTarget, error)
	GetRunbook(ctx context.Context, ident string) (*model.Runbook, error)
	ListRunbooks(ctx context.Context, q store.RunbookQuery) ([]*model.Runbook, error)
	GetInspectionRule(ctx context.Context, uuid string) (*model.InspectionRule, error)
	ListInspectionRules(ctx context.Context, q store.InspectionRuleQuery) ([]*model.InspectionRule, error)
	// Broker is the stream the store publishes its node changes on; never nil.
	Broker() *eventbus.Broker
}

// Conductor is what the API asks of the conductor: every write to a node goes
// through it, under the node's lock. Errors are *fault.Error for anything the
// client caused (mapped to Ironic's status codes), plain errors otherwise (500).
type Conductor interface {
	// Host is this conductor's name (shown as a node's "conductor").
	Host() string
	// CreateNode validates the driver and interfaces, fills defaults and the
	// initial state (enroll, or available when initialAvailable) and stores n.
	CreateNode(ctx context.Context, n *model.Node, initialAvailable bool) error
	// UpdateNode loads the node under its lock, calls apply on a copy, checks
	// Ironic's rules on what may change in which state, and saves it.
	UpdateNode(ctx context.Context, ident string, apply func(n *model.Node) error) (*model.Node, error)
	// DeleteNode deletes a node in a delete-allowed state or in maintenance.
	DeleteNode(ctx context.Context, ident string) error
	// Provision applies a provision verb (PUT /states/provision).
	Provision(ctx context.Context, ident string, req conductor.ProvisionRequest) error
	// SetPower applies a power target (PUT /states/power).
	SetPower(ctx context.Context, ident string, req conductor.PowerRequest) error
	// SetMaintenance sets (on) or clears maintenance with a reason.
	SetMaintenance(ctx context.Context, ident string, on bool, reason string) error
	// Validate runs every interface's validation without touching hardware.
	Validate(ctx context.Context, ident string) (map[string]conductor.ValidateResult, error)
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

	// Vendor passthru: a node's or a hardware type's vendor methods, and a
	// call to one (Ironic's errors: 400 no handler / wrong HTTP method /
	// bad arguments, 500 or 404 for the driver's failures).
	VendorMethods(ctx context.Context, ident string) (map[string]driver.VendorMethod, error)
	VendorPassthru(ctx context.Context, ident string, req conductor.VendorRequest) (conductor.VendorResult, error)
	DriverVendorMethods(ctx context.Context, name string) (map[string]driver.VendorMethod, error)
	DriverVendorPassthru(ctx context.Context, name string, req conductor.VendorRequest) (conductor.VendorResult, error)

	// SetTargetRAIDConfig validates (unless empty) and stores a node's
	// target RAID configuration. Errors: fault NotFound (node; a raid
	// interface without RAID support), Conflict, Invalid (schema).
	SetTargetRAIDConfig(ctx context.Context, ident string, cfg model.JSON) error
	// RAIDLogicalDiskProperties lists what a hardware type's default raid
	// interface takes in a logical disk. Errors: fault NotFound.
	RAIDLogicalDiskProperties(driverName string) (map[string]string, error)

	// SetTraits replaces a node's traits with change(current) under its
	// lock, in any state. Errors: fault NotFound, Conflict (locked), Invalid
	// (more than 50 traits), and change's own.
	SetTraits(ctx context.Context, ident string, change func(cur []string) ([]string, error)) (*model.Node, error)

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

	// Allocations (1.52): CreateAllocation stores an allocation and
	// allocates a node in a worker, or backfills the given node at once.
	CreateAllocation(ctx context.Context, a *model.Allocation, backfill string) error
	UpdateAllocation(ctx context.Context, ident string, apply func(a *model.Allocation) error) (*model.Allocation, error)
	DeleteAllocation(ctx context.Context, ident string) error

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

	// Heartbeat is an agent's callback: it resumes a node in a wait state.
	Heartbeat(ctx context.Context, ident string, hb conductor.HeartbeatRequest) error

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

	// Drivers lists the enabled hardware types.
	Drivers() []conductor.DriverInfo
	// Driver returns one hardware type. Errors: fault NotFound.
	Driver(name string) (conductor.DriverInfo, error)
}
