package model

import "time"

// JSON is a free-form JSON object, as Ironic stores driver_info, properties, extra...
type JSON = map[string]any

// Node is a bare-metal server. Field names follow Ironic's node object; the JSON
// tags are the storage encoding (the API renders nodes itself, per microversion).
// Empty strings stand for Ironic's null, except ConductorGroup which is "" in Ironic.
type Node struct {
	ID      int64  `json:"-"` // database row id; Ironic's default sort key
	Version int64  `json:"-"` // optimistic-concurrency counter, bumped by every update
	UUID    string `json:"uuid"`
	Name    string `json:"name,omitempty"`

	Driver             string   `json:"driver"`
	DriverInfo         JSON     `json:"driver_info,omitempty"`
	DriverInternalInfo JSON     `json:"driver_internal_info,omitempty"`
	Properties         JSON     `json:"properties,omitempty"`
	InstanceInfo       JSON     `json:"instance_info,omitempty"`
	Extra              JSON     `json:"extra,omitempty"`
	InstanceUUID       string   `json:"instance_uuid,omitempty"`
	InstanceName       string   `json:"instance_name,omitempty"`
	ChassisUUID        string   `json:"chassis_uuid,omitempty"`
	ResourceClass      string   `json:"resource_class,omitempty"`
	Owner              string   `json:"owner,omitempty"`
	Lessee             string   `json:"lessee,omitempty"`
	Description        string   `json:"description,omitempty"`
	ConductorGroup     string   `json:"conductor_group,omitempty"`
	Shard              string   `json:"shard,omitempty"`
	ParentNode         string   `json:"parent_node,omitempty"`
	Traits             []string `json:"traits,omitempty"`
	// AllocationUUID is the allocation holding the node (1.52); only the
	// conductor's allocation flow sets and clears it.
	AllocationUUID string `json:"allocation_uuid,omitempty"`

	Interfaces Interfaces `json:"interfaces"`

	ProvisionState       string    `json:"provision_state"`
	TargetProvisionState string    `json:"target_provision_state,omitempty"`
	ProvisionUpdatedAt   time.Time `json:"provision_updated_at,omitzero"`
	PowerState           string    `json:"power_state,omitempty"`
	TargetPowerState     string    `json:"target_power_state,omitempty"`
	LastError            string    `json:"last_error,omitempty"`

	Maintenance       bool   `json:"maintenance,omitempty"`
	MaintenanceReason string `json:"maintenance_reason,omitempty"`
	Fault             string `json:"fault,omitempty"`
	Health            string `json:"health,omitempty"`

	// Reservation is the name of the conductor holding the node's lock; it is a
	// column managed only by Store.Reserve/Release, never written by UpdateNode.
	Reservation string `json:"-"`

	ConsoleEnabled  bool   `json:"console_enabled,omitempty"`
	AutomatedClean  *bool  `json:"automated_clean,omitempty"`
	Protected       bool   `json:"protected,omitempty"`
	ProtectedReason string `json:"protected_reason,omitempty"`
	Retired         bool   `json:"retired,omitempty"`
	RetiredReason   string `json:"retired_reason,omitempty"`
	BootMode        string `json:"boot_mode,omitempty"`
	SecureBoot      *bool  `json:"secure_boot,omitempty"`
	DisablePowerOff bool   `json:"disable_power_off,omitempty"`

	CleanStep            JSON      `json:"clean_step,omitempty"`
	DeployStep           JSON      `json:"deploy_step,omitempty"`
	ServiceStep          JSON      `json:"service_step,omitempty"`
	RaidConfig           JSON      `json:"raid_config,omitempty"`
	TargetRaidConfig     JSON      `json:"target_raid_config,omitempty"`
	NetworkData          JSON      `json:"network_data,omitempty"`
	InspectionStartedAt  time.Time `json:"inspection_started_at,omitzero"`
	InspectionFinishedAt time.Time `json:"inspection_finished_at,omitzero"`

	// Conductor is the conductor that manages the node (hash ring owner); set
	// by the API when rendering, not stored.
	Conductor string `json:"-"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Interfaces are the per-node driver interface choices (Ironic's *_interface fields).
type Interfaces struct {
	Bios       string `json:"bios,omitempty"`
	Boot       string `json:"boot,omitempty"`
	Console    string `json:"console,omitempty"`
	Deploy     string `json:"deploy,omitempty"`
	Firmware   string `json:"firmware,omitempty"`
	Inspect    string `json:"inspect,omitempty"`
	Management string `json:"management,omitempty"`
	Network    string `json:"network,omitempty"`
	Power      string `json:"power,omitempty"`
	Raid       string `json:"raid,omitempty"`
	Rescue     string `json:"rescue,omitempty"`
	Storage    string `json:"storage,omitempty"`
	Vendor     string `json:"vendor,omitempty"`
}

// InterfaceNames lists the interface kinds in Ironic's order.
var InterfaceNames = []string{"bios", "boot", "console", "deploy", "firmware", "inspect",
	"management", "network", "power", "raid", "rescue", "storage", "vendor"}

// Get returns the interface chosen for kind ("deploy", "power", ...).
func (i *Interfaces) Get(kind string) string {
	if p := i.ptr(kind); p != nil {
		return *p
	}
	return ""
}

// Set sets the interface for kind; it reports false for an unknown kind.
func (i *Interfaces) Set(kind, value string) bool {
	p := i.ptr(kind)
	if p == nil {
		return false
	}
	*p = value
	return true
}

func (i *Interfaces) ptr(kind string) *string {
	switch kind {
	case "bios":
		return &i.Bios
	case "boot":
		return &i.Boot
	case "console":
		return &i.Console
	case "deploy":
		return &i.Deploy
	case "firmware":
		return &i.Firmware
	case "inspect":
		return &i.Inspect
	case "management":
		return &i.Management
	case "network":
		return &i.Network
	case "power":
		return &i.Power
	case "raid":
		return &i.Raid
	case "rescue":
		return &i.Rescue
	case "storage":
		return &i.Storage
	case "vendor":
		return &i.Vendor
	}
	return nil
}

// Port is a NIC of a node, identified by its MAC address.
type Port struct {
	ID                  int64  `json:"-"`
	Version             int64  `json:"-"`
	UUID                string `json:"uuid"`
	Address             string `json:"address"` // lower-case MAC, unique
	NodeUUID            string `json:"node_uuid"`
	Name                string `json:"name,omitempty"`
	PortgroupUUID       string `json:"portgroup_uuid,omitempty"`
	PXEEnabled          bool   `json:"pxe_enabled"`
	LocalLinkConnection JSON   `json:"local_link_connection,omitempty"`
	PhysicalNetwork     string `json:"physical_network,omitempty"`
	Extra               JSON   `json:"extra,omitempty"`
	InternalInfo        JSON   `json:"internal_info,omitempty"`
	IsSmartNIC          bool   `json:"is_smartnic,omitempty"`
	Description         string `json:"description,omitempty"`
	Vendor              string `json:"vendor,omitempty"`
	Category            string `json:"category,omitempty"`
	// AvailableForDynamicPortgroup (API 1.111) is nil for true, Ironic's
	// default (and what a port stored before the field reads as).
	AvailableForDynamicPortgroup *bool `json:"available_for_dynamic_portgroup,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// DynamicPortgroupAvailable is the port's available_for_dynamic_portgroup.
func (p *Port) DynamicPortgroupAvailable() bool {
	return p.AvailableForDynamicPortgroup == nil || *p.AvailableForDynamicPortgroup
}

// Portgroup is a group of a node's ports bonded together (Ironic's
// portgroup). Address is a lower-case MAC or "" (null).
type Portgroup struct {
	ID                       int64  `json:"-"`
	Version                  int64  `json:"-"`
	UUID                     string `json:"uuid"`
	Name                     string `json:"name,omitempty"`
	Address                  string `json:"address,omitempty"`
	NodeUUID                 string `json:"node_uuid"`
	Extra                    JSON   `json:"extra,omitempty"`
	InternalInfo             JSON   `json:"internal_info,omitempty"`
	Mode                     string `json:"mode,omitempty"`
	Properties               JSON   `json:"properties,omitempty"`
	StandalonePortsSupported bool   `json:"standalone_ports_supported"`
	PhysicalNetwork          string `json:"physical_network,omitempty"`
	Category                 string `json:"category,omitempty"`
	// DynamicPortgroup (API 1.111) marks a portgroup Ironic manages itself;
	// read-only to API consumers, and nothing in Ironic master sets it yet.
	DynamicPortgroup bool `json:"dynamic_portgroup,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Allocation states (Ironic's allocation states).
const (
	AllocationAllocating = "allocating"
	AllocationActive     = "active"
	AllocationError      = "error"
)

// Allocation is a request for a node matching a resource class, traits
// and candidates (Ironic's allocation, API 1.52).
type Allocation struct {
	ID             int64    `json:"-"`
	Version        int64    `json:"-"`
	UUID           string   `json:"uuid"`
	Name           string   `json:"name,omitempty"`
	NodeUUID       string   `json:"node_uuid,omitempty"`
	State          string   `json:"state"`
	LastError      string   `json:"last_error,omitempty"`
	ResourceClass  string   `json:"resource_class,omitempty"`
	Traits         []string `json:"traits,omitempty"`
	CandidateNodes []string `json:"candidate_nodes,omitempty"` // node UUIDs
	Owner          string   `json:"owner,omitempty"`
	Extra          JSON     `json:"extra,omitempty"`
	// ConductorAffinity is the conductor that processes the allocation.
	ConductorAffinity string `json:"conductor_affinity,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Chassis groups nodes (Ironic's chassis): a description and extra; a node
// names it in ChassisUUID.
type Chassis struct {
	ID          int64  `json:"-"`
	Version     int64  `json:"-"`
	UUID        string `json:"uuid"`
	Description string `json:"description,omitempty"`
	Extra       JSON   `json:"extra,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// DeployTemplate is a named set of deploy steps (Ironic's deploy template,
// API 1.55): a deploy whose instance traits include its name (a trait)
// adds its steps to the deploy plan.
type DeployTemplate struct {
	ID      int64  `json:"-"`
	Version int64  `json:"-"`
	UUID    string `json:"uuid"`
	Name    string `json:"name"`
	// Steps are the deploy steps, each with interface, step, args and
	// priority (an integer).
	Steps       []DeployStep `json:"steps"`
	Description string       `json:"description,omitempty"`
	Extra       JSON         `json:"extra,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// DeployStep is one step of a deploy template.
type DeployStep struct {
	Interface string `json:"interface"`
	Step      string `json:"step"`
	Args      JSON   `json:"args"`
	Priority  int    `json:"priority"`
}

// Runbook is a named list of steps an operator may run on a node as its
// manual clean or service steps (Ironic's runbook, API 1.92). Before API
// 1.112 its name is a trait, and a node may run it only when it has that
// trait. A runbook with an owner belongs to that project; a public one
// (never owned) is readable by every project.
type Runbook struct {
	ID      int64  `json:"-"`
	Version int64  `json:"-"`
	UUID    string `json:"uuid"`
	Name    string `json:"name"`
	// Steps run in this order, each with interface, step, args and order.
	Steps          []RunbookStep `json:"steps"`
	DisableRamdisk bool          `json:"disable_ramdisk,omitempty"`
	Public         bool          `json:"public,omitempty"`
	Owner          string        `json:"owner,omitempty"`
	Extra          JSON          `json:"extra,omitempty"`
	// Description (API 1.112) is "" for null.
	Description string `json:"description,omitempty"`
	// Traits (API 1.112) are the node traits that approve the runbook for
	// a node (one in common). A new runbook has none, at any version; the
	// store's migration gave each runbook stored before them its name.
	Traits []string `json:"traits"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// RunbookStep is one step of a runbook.
type RunbookStep struct {
	Interface string `json:"interface"`
	Step      string `json:"step"`
	Args      JSON   `json:"args"`
	Order     int    `json:"order"`
}

// Conductor is a registered conductor process.
type Conductor struct {
	Hostname       string
	ConductorGroup string
	Drivers        []string
	Online         bool
	CreatedAt      time.Time
	UpdatedAt      time.Time // last heartbeat
}

// Alive is Ironic's liveness test of a conductor: online, with a heartbeat
// no older than window at now. The API's "alive" and the hash ring of live
// conductors both use it.
func (c *Conductor) Alive(now time.Time, window time.Duration) bool {
	return c.Online && !c.UpdatedAt.IsZero() && !c.UpdatedAt.Before(now.Add(-window))
}

// Severity values of history events (Ironic's).
const (
	SeverityInfo    = "INFO"
	SeverityWarning = "WARNING"
	SeverityError   = "ERROR"
)

// HistoryEvent is one entry of a node's history (Ironic's node_history).
type HistoryEvent struct {
	ID        int64
	UUID      string
	NodeUUID  string
	CreatedAt time.Time
	Severity  string // INFO, WARNING, ERROR
	EventType string // provisioning, power, maintenance, lock, ...
	Event     string // human-readable text
	Conductor string
	User      string
	// Transition details (Ironic 1.115): empty when not a provision transition.
	FromState string
	ToState   string
	Trigger   string        // the FSM event that caused it
	Duration  time.Duration // time spent in FromState
	// Ironic 1.113 and 1.115's columns: the project that caused the event
	// ("" = null: Ironic master records none), the node's provision state
	// and target when it was recorded ("" = null), and its duration in
	// seconds (nil = null: the node had no provision_updated_at).
	Project              string
	State                string
	TargetProvisionState string
	DurationSeconds      *int64
}

// BIOSSetting is one cached BIOS setting of a node (Ironic's bios_settings
// row): its value and, where the BMC's attribute registry says, its schema.
// Nil schema fields are unknown (null in the API).
type BIOSSetting struct {
	Name            string    `json:"name"`
	Value           *string   `json:"value"` // Ironic stores values as strings; nil is null
	AttributeType   *string   `json:"attribute_type,omitempty"`
	AllowableValues []string  `json:"allowable_values,omitempty"`
	LowerBound      *int64    `json:"lower_bound,omitempty"`
	UpperBound      *int64    `json:"upper_bound,omitempty"`
	MinLength       *int64    `json:"min_length,omitempty"`
	MaxLength       *int64    `json:"max_length,omitempty"`
	ReadOnly        *bool     `json:"read_only,omitempty"`
	ResetRequired   *bool     `json:"reset_required,omitempty"`
	Unique          *bool     `json:"unique,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"` // zero until the value changes
}

// FirmwareComponent is one firmware component of a node (Ironic's
// firmware_information row): "bios", "bmc" or "nic:<id>", the version first
// seen, the current one and the last one an update flashed ("" = null).
type FirmwareComponent struct {
	Component          string `json:"component"`
	InitialVersion     string `json:"initial_version"`
	CurrentVersion     string `json:"current_version"`
	LastVersionFlashed string `json:"last_version_flashed"`
	// Identity of the hardware (API 1.114), as the BMC reports it; "" = null.
	Vendor       string    `json:"vendor,omitempty"`
	Model        string    `json:"model,omitempty"`
	SerialNumber string    `json:"serial_number,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}
