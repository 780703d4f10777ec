package conductor

// The conductor's services besides its lifecycle core: each holds the
// core (not embedded either way) and is one of the API's interfaces
// (internal/api backend.go) or another package's, so the core's method set
// holds the lifecycle and the services hold the rest.

// Management is a node's management calls that reach its BMC: boot
// device, virtual media, console, boot mode and secure boot, indicators,
// NMI (the API's Management).
type Management struct{ c *Conductor }

// NodeRecords changes the records under a node's lock: ports,
// portgroups, VIFs, volume connectors and targets (the API's
// NodeRecords).
type NodeRecords struct{ c *Conductor }

// Hardware answers for the hardware types: the enabled ones, their vendor
// methods and RAID properties, a node's vendor passthru (the API's
// Hardware).
type Hardware struct{ c *Conductor }

// Management is c's management service.
func (c *Conductor) Management() *Management { return &Management{c} }

// NodeRecords is c's service for the records under a node's lock.
func (c *Conductor) NodeRecords() *NodeRecords { return &NodeRecords{c} }

// Hardware is c's hardware types service.
func (c *Conductor) Hardware() *Hardware { return &Hardware{c} }

// Nodes changes nodes themselves under their lock: creation, updates,
// deletion, maintenance, validation, traits, the target RAID
// configuration (with the core's Host, Provision and SetPower, and
// Allocations, the API's Lifecycle).
type Nodes struct{ c *Conductor }

// Allocations picks and locks a node for an allocation in a worker,
// backfills, updates and deletes allocations, and resumes or takes over
// unfinished ones (the API's Allocations).
type Allocations struct{ c *Conductor }

// Agents answers the agent's callbacks: lookup (and its token),
// heartbeat, inspection data (the API's Agents). A heartbeat that resumes
// a node hands it to the core's callbacks.
type Agents struct{ c *Conductor }

// Consoles decides which nodes' serial consoles this conductor holds
// (internal/console's Resolver).
type Consoles struct{ c *Conductor }

// PowerSync reads the power state of the nodes this conductor owns and
// reconciles it with the database (Ironic's sync_power_states), with its
// counters.
type PowerSync struct{ c *Conductor }

// Nodes is c's service for changing nodes under their lock.
func (c *Conductor) Nodes() *Nodes { return &Nodes{c} }

// Allocations is c's allocations service.
func (c *Conductor) Allocations() *Allocations { return &Allocations{c} }

// Agents is c's service for the agent's callbacks.
func (c *Conductor) Agents() *Agents { return &Agents{c} }

// Consoles is c's console ownership service.
func (c *Conductor) Consoles() *Consoles { return &Consoles{c} }

// PowerSync is c's power state sync.
func (c *Conductor) PowerSync() *PowerSync { return &PowerSync{c} }
