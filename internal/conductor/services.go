package conductor

// The conductor's services besides its lifecycle core: each is one of the
// API's interfaces (internal/api backend.go) over the same conductor, so
// the core's method set holds the lifecycle and the services hold the
// rest.

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
