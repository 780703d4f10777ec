// Package store is the storage contract of Anvil: nodes, ports, portgroups,
// allocations, chassis, deploy templates, volume connectors and targets,
// conductors, node history, and the BIOS settings and firmware
// components cached from each node's BMC, with the node lock kept in the
// nodes.reservation column and taken by compare-and-set. Implementations:
// sqlite (embedded default) and postgres.
//
// Invariants every implementation keeps (checked by storetest):
//   - UpdateNode never writes reservation; only ReserveNode/ReleaseNode do.
//   - UpdateNode succeeds only if the node's Version equals the stored one, and
//     bumps it; a stale write answers ErrStale and changes nothing.
//   - a write either happens whole or not at all.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// Sentinel errors. Implementations wrap them with detail.
var (
	ErrNotFound  = errors.New("not found")
	ErrDuplicate = errors.New("duplicate")
	ErrStale     = errors.New("stale write")
	ErrLocked    = errors.New("locked")
)

// LockedError says who holds a node's reservation. errors.Is(err, ErrLocked) holds.
type LockedError struct {
	Node   string // UUID
	Holder string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("node %s is locked by %s", e.Node, e.Holder)
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Unwrap() error { return ErrLocked }

// DuplicateError names the field whose unique constraint a write violated.
type DuplicateError struct {
	Field string // "uuid", "name", "address", "instance_uuid", "hostname"
	Value string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("duplicate %s %q", e.Field, e.Value)
}

// Unwrap makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// NodeQuery selects nodes. Zero values mean "no filter".
type NodeQuery struct {
	ProvisionState string
	Maintenance    *bool
	Driver         string
	ResourceClass  string
	Associated     *bool // instance_uuid set or not
	Fault          string
	Owner          string
	Lessee         string
	// Project selects nodes whose owner or lessee is it (Ironic's project
	// filter, and what a project-scoped token may see).
	Project        string
	ConductorGroup *string
	InstanceUUID   string
	ChassisUUID    string
	// ParentNode, when set, selects the children of that parent node (its
	// parent_node as stored), or with "" the nodes without a parent.
	ParentNode      *string
	Reserved        *bool    // reservation set or not
	ReservedBy      string   // reservation equals this host
	ProvisionStates []string // provision_state IN (...)
	PowerState      string   // power_state equals this ("None": no power state)
	// Search matches a node whose UUID starts with it, whose name contains
	// it (both case-insensitive), or one of whose ports has it as its MAC
	// address (exactly, once lowercased: the API stores MACs lowercase).
	Search string
	// ProvisionUpdatedBefore, when set, selects nodes whose
	// provision_updated_at is known and earlier.
	ProvisionUpdatedBefore time.Time

	// Only, when set, names the node fields (by their API names) the caller
	// will read: when each has a column of its own, the store fills just
	// those, with the UUID, ID and version, and decodes no node (a list of
	// two fields at 100,000 nodes spent most of its time decoding). Any
	// other name makes it fill whole nodes, as when Only is empty.
	Only []string

	// Pagination: rows after the node with UUID Marker in (SortKey, id) order.
	Limit   int
	Marker  string
	SortKey string // one of NodeSortKeys; "" means "id"
	SortDir string // "asc" (default) or "desc"
}

// NoPowerState is the NodeQuery.PowerState that selects nodes whose power
// state is unknown (null in the API, "None" in the CLI).
const NoPowerState = "None"

// NodeGroup is one group of CountNodeGroups: the nodes sharing these values.
type NodeGroup struct {
	ProvisionState string
	PowerState     string // "" when unknown
	Maintenance    bool
	Reservation    string // "" when unlocked
	Fault          string // "" when none
	Count          int
	// OldestProvisionUpdate is the earliest provision_updated_at of the
	// group (zero when none of its nodes has one).
	OldestProvisionUpdate time.Time
}

// NodeSortKeys are the sort keys a NodeQuery accepts.
var NodeSortKeys = []string{"id", "uuid", "name", "created_at", "updated_at",
	"provision_state", "provision_updated_at", "power_state", "driver", "maintenance",
	"instance_uuid", "resource_class", "owner", "lessee", "conductor_group", "fault",
	"reservation", "target_provision_state"}

// PortQuery selects ports.
type PortQuery struct {
	NodeUUID      string
	Address       string
	PortgroupUUID string
	Limit         int
	Marker        string
	SortKey       string // one of PortSortKeys; "" means "id"
	SortDir       string
}

// PortSortKeys are the sort keys a PortQuery accepts.
var PortSortKeys = []string{"id", "uuid", "address", "node_uuid", "created_at", "updated_at", "pxe_enabled", "name"}

// PortgroupQuery selects portgroups.
type PortgroupQuery struct {
	NodeUUID string
	Address  string
	Limit    int
	Marker   string
	SortKey  string // one of PortgroupSortKeys; "" means "id"
	SortDir  string
}

// PortgroupSortKeys are the sort keys a PortgroupQuery accepts.
var PortgroupSortKeys = []string{"id", "uuid", "name", "address", "node_uuid", "created_at", "updated_at"}

// AllocationQuery selects allocations.
type AllocationQuery struct {
	NodeUUID      string
	State         string
	ResourceClass string
	Owner         string
	Limit         int
	Marker        string
	SortKey       string // one of AllocationSortKeys; "" means "id"
	SortDir       string
}

// AllocationSortKeys are the sort keys an AllocationQuery accepts.
var AllocationSortKeys = []string{"id", "uuid", "name", "node_uuid", "state", "resource_class",
	"owner", "created_at", "updated_at"}

// DeployTemplateQuery selects deploy templates.
type DeployTemplateQuery struct {
	// Names selects the templates with one of these names (none: all).
	Names   []string
	Limit   int
	Marker  string
	SortKey string // one of DeployTemplateSortKeys; "" means "id"
	SortDir string
}

// ChassisQuery selects chassis.
type ChassisQuery struct {
	Limit   int
	Marker  string
	SortKey string // one of ChassisSortKeys; "" means "id"
	SortDir string
}

// ChassisSortKeys are the sort keys a ChassisQuery accepts.
var ChassisSortKeys = []string{"id", "uuid", "created_at", "updated_at"}

// ErrChassisNotEmpty is DeleteChassis's answer while nodes name the chassis.
var ErrChassisNotEmpty = errors.New("chassis has nodes")

// VolumeQuery selects volume connectors or targets.
type VolumeQuery struct {
	NodeUUID string
	Limit    int
	Marker   string
	SortKey  string // one of VolumeConnectorSortKeys or VolumeTargetSortKeys; "" means "id"
	SortDir  string
}

// VolumeConnectorSortKeys are the sort keys ListVolumeConnectors accepts.
var VolumeConnectorSortKeys = []string{"id", "uuid", "node_uuid", "type", "connector_id", "created_at", "updated_at"}

// VolumeTargetSortKeys are the sort keys ListVolumeTargets accepts.
var VolumeTargetSortKeys = []string{"id", "uuid", "node_uuid", "volume_type", "volume_id", "boot_index",
	"created_at", "updated_at"}

// DeployTemplateSortKeys are the sort keys a DeployTemplateQuery accepts.
var DeployTemplateSortKeys = []string{"id", "uuid", "name", "created_at", "updated_at"}

// RunbookQuery selects runbooks.
type RunbookQuery struct {
	// Project, when set, selects the runbooks it owns and the public ones
	// (Ironic's "project" filter).
	Project string
	Limit   int
	Marker  string
	SortKey string // one of RunbookSortKeys; "" means "id"
	SortDir string
}

// RunbookSortKeys are the sort keys a RunbookQuery accepts.
var RunbookSortKeys = []string{"id", "uuid", "name", "owner", "public", "disable_ramdisk", "created_at", "updated_at"}

// Store is the storage contract: one store per role, each its own small
// interface. The role stores of one Store share its database (and its
// transactions' rules); a decorator wraps only the role store it changes.
type Store interface {
	// Nodes keeps nodes, their lock (the reservation column) and their
	// history.
	Nodes() NodeStore
	// Ports keeps ports and portgroups.
	Ports() PortStore
	Allocations() AllocationStore
	Conductors() ConductorStore
	Chassis() ChassisStore
	DeployTemplates() DeployTemplateStore
	Runbooks() RunbookStore
	InspectionRules() InspectionRuleStore
	Volumes() VolumeStore
	Settings() SettingsStore
	Sessions() SessionStore
	Diagnoses() DiagnosisStore
	// Records keeps the record kinds declared on the generic record table
	// (records.go): a new kind needs no table, migration or method here.
	Records() RecordStore

	Close() error
}

// NodeStore keeps nodes, their lock and their history (Ironic's nodes and
// node_history tables).
type NodeStore interface {
	// CreateNode inserts n, setting n.ID, n.Version=1 and CreatedAt if zero.
	// Errors: *DuplicateError (uuid, name, instance_uuid).
	CreateNode(ctx context.Context, n *model.Node) error
	// GetNode finds a node by UUID, or by name when ident is not a UUID-shaped
	// string. Errors: ErrNotFound.
	GetNode(ctx context.Context, ident string) (*model.Node, error)
	// ListNodes returns nodes matching q in q's order.
	ListNodes(ctx context.Context, q NodeQuery) ([]*model.Node, error)
	// CountNodes returns the number of nodes matching q's filters.
	CountNodes(ctx context.Context, q NodeQuery) (int, error)
	// CountNodeGroups counts the nodes matching q's filters in one pass,
	// grouped by provision state, power state, maintenance, reservation and
	// fault (groups in no particular order, none empty), with each group's
	// oldest provision_updated_at: what gauges over the whole fleet need
	// without reading a node.
	CountNodeGroups(ctx context.Context, q NodeQuery) ([]NodeGroup, error)
	// UpdateNode writes every field of n but reservation, if n.Version is current;
	// on success n.Version is bumped and n.UpdatedAt set.
	// Errors: ErrNotFound, ErrStale, *DuplicateError.
	UpdateNode(ctx context.Context, n *model.Node) error
	// DeleteNode removes the node and its ports, portgroups, allocation,
	// history, BIOS settings, firmware components and volume connectors and
	// targets. Errors: ErrNotFound.
	DeleteNode(ctx context.Context, uuid string) error

	// ReserveNode sets reservation=host if it is empty (compare-and-set) and
	// returns the node as stored. Errors: ErrNotFound, *LockedError.
	ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error)
	// ReleaseNode clears the reservation if host holds it. Errors: ErrNotFound,
	// *LockedError (held by another host), nil if already free.
	ReleaseNode(ctx context.Context, uuid, host string) error
	// ReleaseHost clears every reservation held by host and returns the UUIDs freed.
	ReleaseHost(ctx context.Context, host string) ([]string, error)

	// AddHistory appends e (setting ID, UUID if empty, CreatedAt if zero) and
	// prunes the node's history to its newest keep entries (keep <= 0: no pruning).
	AddHistory(ctx context.Context, e *model.HistoryEvent, keep int) error
	// ListHistory returns a node's events, oldest first.
	ListHistory(ctx context.Context, nodeUUID string) ([]*model.HistoryEvent, error)
	GetHistory(ctx context.Context, nodeUUID, eventUUID string) (*model.HistoryEvent, error)
}

// PortStore keeps ports and portgroups, and finds a node by its ports.
type PortStore interface {
	// CreatePort inserts p. Errors: *DuplicateError (uuid, address, name),
	// ErrNotFound if the node does not exist.
	CreatePort(ctx context.Context, p *model.Port) error
	// GetPort finds a port by UUID, or by name. Errors: ErrNotFound.
	GetPort(ctx context.Context, ident string) (*model.Port, error)
	// GetPortByAddress finds a port by MAC. Errors: ErrNotFound.
	GetPortByAddress(ctx context.Context, mac string) (*model.Port, error)
	// GetNodeByPortAddress finds the node with a port whose MAC is one of
	// macs (each compared as given): of several, the node of the first
	// such MAC in macs' order. It is one query (per 500 addresses), however
	// many MACs an agent sends. Errors: ErrNotFound.
	GetNodeByPortAddress(ctx context.Context, macs []string) (*model.Node, error)
	ListPorts(ctx context.Context, q PortQuery) ([]*model.Port, error)
	// UpdatePort is version-checked like UpdateNode.
	UpdatePort(ctx context.Context, p *model.Port) error
	DeletePort(ctx context.Context, uuid string) error

	// CreatePortgroup inserts pg. Errors: *DuplicateError (uuid, address,
	// name), ErrNotFound if the node does not exist.
	CreatePortgroup(ctx context.Context, pg *model.Portgroup) error
	// GetPortgroup finds a portgroup by UUID, or by name. Errors: ErrNotFound.
	GetPortgroup(ctx context.Context, ident string) (*model.Portgroup, error)
	ListPortgroups(ctx context.Context, q PortgroupQuery) ([]*model.Portgroup, error)
	// UpdatePortgroup is version-checked like UpdateNode.
	UpdatePortgroup(ctx context.Context, pg *model.Portgroup) error
	// DeletePortgroup removes a portgroup (whether it has ports is the
	// caller's rule). Errors: ErrNotFound.
	DeletePortgroup(ctx context.Context, uuid string) error
}

// AllocationStore keeps allocations.
type AllocationStore interface {
	// CreateAllocation inserts a. Errors: *DuplicateError (uuid, name,
	// node_uuid), ErrNotFound if it names a node that does not exist.
	CreateAllocation(ctx context.Context, a *model.Allocation) error
	// GetAllocation finds an allocation by UUID, or by name. Errors: ErrNotFound.
	GetAllocation(ctx context.Context, ident string) (*model.Allocation, error)
	ListAllocations(ctx context.Context, q AllocationQuery) ([]*model.Allocation, error)
	// UpdateAllocation is version-checked like UpdateNode.
	UpdateAllocation(ctx context.Context, a *model.Allocation) error
	DeleteAllocation(ctx context.Context, uuid string) error
}

// ConductorStore keeps the conductor rows (registration and heartbeat).
type ConductorStore interface {
	// RegisterConductor creates or refreshes the conductor row (online, heartbeat now).
	RegisterConductor(ctx context.Context, c *model.Conductor) error
	// HeartbeatConductor sets updated_at=now for hostname. Errors: ErrNotFound.
	HeartbeatConductor(ctx context.Context, hostname string, now time.Time) error
	// UnregisterConductor marks the conductor offline.
	UnregisterConductor(ctx context.Context, hostname string) error
	GetConductor(ctx context.Context, hostname string) (*model.Conductor, error)
	ListConductors(ctx context.Context) ([]*model.Conductor, error)
}

// SessionStore keeps the dashboard's login sessions (internal/auth), so
// that every API process sharing the database knows them and they outlive
// a restart. A session is opaque here: its key is the SHA-256 of the
// cookie's id (hex), never the id; data is what auth records (never a
// password or token).
type SessionStore interface {
	// PutSession stores a session until expires, and drops the sessions
	// that expired.
	PutSession(ctx context.Context, key string, data []byte, expires time.Time) error
	// GetSession returns a session's data. Errors: ErrNotFound, also once
	// it expired.
	GetSession(ctx context.Context, key string) ([]byte, error)
	// DeleteSession ends a session; an unknown key is no error.
	DeleteSession(ctx context.Context, key string) error
}

// DiagnosisStore keeps each node's latest failure diagnosis (a JSON
// document, model.Diagnosis), removed with the node.
type DiagnosisStore interface {
	// PutDiagnosis replaces the node's diagnosis. Errors: ErrNotFound for
	// an unknown node.
	PutDiagnosis(ctx context.Context, nodeUUID string, data []byte) error
	// GetDiagnosis returns it. Errors: ErrNotFound when there is none.
	GetDiagnosis(ctx context.Context, nodeUUID string) ([]byte, error)
}

// SettingsStore keeps what a node's BMC reported of its BIOS settings and
// firmware components (Ironic's bios_settings and firmware_information
// tables). Lists are sorted by name; an unknown node has none.
type SettingsStore interface {
	// ListBIOSSettings returns a node's cached BIOS settings.
	ListBIOSSettings(ctx context.Context, nodeUUID string) ([]model.BIOSSetting, error)
	// GetBIOSSetting returns one. Errors: ErrNotFound.
	GetBIOSSetting(ctx context.Context, nodeUUID, name string) (*model.BIOSSetting, error)
	// SyncBIOSSettings makes the cache equal settings, as Ironic's
	// sync_node_setting: new names are created, changed ones updated
	// (updated_at set, created_at kept), absent ones deleted.
	// Errors: ErrNotFound when the node does not exist.
	SyncBIOSSettings(ctx context.Context, nodeUUID string, settings []model.BIOSSetting) error
	// ListFirmwareComponents returns a node's firmware components.
	ListFirmwareComponents(ctx context.Context, nodeUUID string) ([]model.FirmwareComponent, error)
	// SyncFirmwareComponents records the current versions of comps, as
	// Ironic's cache_firmware_components: a new component takes its current
	// version as initial_version; a known one whose version changed records
	// it as current_version and last_version_flashed. Components not in
	// comps are kept. Errors: ErrNotFound when the node does not exist.
	SyncFirmwareComponents(ctx context.Context, nodeUUID string, comps []model.FirmwareComponent) error
}

// DeployTemplateStore keeps deploy templates (Ironic's deploy_templates).
type DeployTemplateStore interface {
	// CreateDeployTemplate inserts t, setting t.ID, t.Version=1, a UUID if
	// empty and CreatedAt if zero. Errors: *DuplicateError (uuid, name).
	CreateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error
	// GetDeployTemplate finds a template by UUID, or by name. Errors: ErrNotFound.
	GetDeployTemplate(ctx context.Context, ident string) (*model.DeployTemplate, error)
	// ListDeployTemplates returns the templates matching q in q's order.
	ListDeployTemplates(ctx context.Context, q DeployTemplateQuery) ([]*model.DeployTemplate, error)
	// UpdateDeployTemplate is version-checked like UpdateNode.
	// Errors: ErrNotFound, ErrStale, *DuplicateError (name).
	UpdateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error
	// DeleteDeployTemplate removes a template. Errors: ErrNotFound.
	DeleteDeployTemplate(ctx context.Context, uuid string) error
}

// RunbookStore keeps runbooks (Ironic's runbooks).
type RunbookStore interface {
	// CreateRunbook inserts r, setting r.ID, r.Version=1, a UUID if empty
	// and CreatedAt if zero. Errors: *DuplicateError (uuid, name).
	CreateRunbook(ctx context.Context, r *model.Runbook) error
	// GetRunbook finds a runbook by UUID, or by name. Errors: ErrNotFound.
	GetRunbook(ctx context.Context, ident string) (*model.Runbook, error)
	// ListRunbooks returns the runbooks matching q in q's order.
	// Errors: ErrNotFound (q.Marker names no runbook).
	ListRunbooks(ctx context.Context, q RunbookQuery) ([]*model.Runbook, error)
	// UpdateRunbook is version-checked like UpdateNode.
	// Errors: ErrNotFound, ErrStale, *DuplicateError (name).
	UpdateRunbook(ctx context.Context, r *model.Runbook) error
	// DeleteRunbook removes a runbook. Errors: ErrNotFound.
	DeleteRunbook(ctx context.Context, uuid string) error
}

// InspectionRuleQuery selects inspection rules.
type InspectionRuleQuery struct {
	Phase   string // only the rules of this phase ("": all)
	Limit   int
	Marker  string
	SortKey string // one of InspectionRuleSortKeys; "" means "id"
	SortDir string
}

// InspectionRuleSortKeys are the sort keys an InspectionRuleQuery accepts.
var InspectionRuleSortKeys = []string{"id", "uuid", "priority", "phase", "description", "sensitive",
	"created_at", "updated_at"}

// InspectionRuleStore keeps inspection rules (Ironic's inspection_rules).
type InspectionRuleStore interface {
	// CreateInspectionRule inserts r, setting r.ID, r.Version=1, a UUID if
	// empty and CreatedAt if zero. Errors: *DuplicateError (uuid).
	CreateInspectionRule(ctx context.Context, r *model.InspectionRule) error
	// GetInspectionRule finds a rule by UUID. Errors: ErrNotFound.
	GetInspectionRule(ctx context.Context, uuid string) (*model.InspectionRule, error)
	// ListInspectionRules returns the rules matching q in q's order.
	// Errors: ErrNotFound (unknown marker).
	ListInspectionRules(ctx context.Context, q InspectionRuleQuery) ([]*model.InspectionRule, error)
	// UpdateInspectionRule is version-checked like UpdateNode.
	// Errors: ErrNotFound, ErrStale.
	UpdateInspectionRule(ctx context.Context, r *model.InspectionRule) error
	// DeleteInspectionRule removes a rule. Errors: ErrNotFound.
	DeleteInspectionRule(ctx context.Context, uuid string) error
	// DeleteInspectionRules removes every rule and returns how many.
	DeleteInspectionRules(ctx context.Context) (int, error)
}

// ChassisStore keeps chassis (Ironic's chassis table).
type ChassisStore interface {
	// CreateChassis inserts c, setting c.ID, c.Version=1, a UUID if empty
	// and CreatedAt if zero. Errors: *DuplicateError (uuid).
	CreateChassis(ctx context.Context, c *model.Chassis) error
	// GetChassis finds a chassis by UUID. Errors: ErrNotFound.
	GetChassis(ctx context.Context, uuid string) (*model.Chassis, error)
	// ListChassis returns the chassis in q's order.
	ListChassis(ctx context.Context, q ChassisQuery) ([]*model.Chassis, error)
	// UpdateChassis is version-checked like UpdateNode.
	UpdateChassis(ctx context.Context, c *model.Chassis) error
	// DeleteChassis removes a chassis no node names. Errors: ErrNotFound,
	// ErrChassisNotEmpty.
	DeleteChassis(ctx context.Context, uuid string) error
}

// VolumeStore keeps volume connectors and targets (Ironic's
// volume_connectors and volume_targets tables). Each belongs to a node and
// goes with it.
type VolumeStore interface {
	// CreateVolumeConnector inserts c, setting c.ID, c.Version=1, a UUID if
	// empty and CreatedAt if zero. Errors: *DuplicateError (uuid; "type"
	// when another connector has the same type and connector_id),
	// ErrNotFound if the node does not exist.
	CreateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error
	// GetVolumeConnector finds a connector by UUID. Errors: ErrNotFound.
	GetVolumeConnector(ctx context.Context, uuid string) (*model.VolumeConnector, error)
	// ListVolumeConnectors returns the connectors matching q in q's order.
	// Errors: ErrNotFound (wrapped) for an unknown marker.
	ListVolumeConnectors(ctx context.Context, q VolumeQuery) ([]*model.VolumeConnector, error)
	// UpdateVolumeConnector is version-checked like UpdateNode.
	// Errors: ErrNotFound (connector, or the node it names), ErrStale,
	// *DuplicateError ("type").
	UpdateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error
	// DeleteVolumeConnector removes a connector. Errors: ErrNotFound.
	DeleteVolumeConnector(ctx context.Context, uuid string) error

	// CreateVolumeTarget inserts t like CreateVolumeConnector. Errors:
	// *DuplicateError (uuid; "boot_index" when the node has a target with
	// the same boot index), ErrNotFound if the node does not exist.
	CreateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error
	// GetVolumeTarget finds a target by UUID. Errors: ErrNotFound.
	GetVolumeTarget(ctx context.Context, uuid string) (*model.VolumeTarget, error)
	// ListVolumeTargets returns the targets matching q in q's order.
	ListVolumeTargets(ctx context.Context, q VolumeQuery) ([]*model.VolumeTarget, error)
	// UpdateVolumeTarget is version-checked like UpdateNode.
	// Errors: ErrNotFound, ErrStale, *DuplicateError ("boot_index").
	UpdateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error
	// DeleteVolumeTarget removes a target. Errors: ErrNotFound.
	DeleteVolumeTarget(ctx context.Context, uuid string) error
}
