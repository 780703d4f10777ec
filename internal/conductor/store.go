package conductor

import (
	"context"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Store is the part of the storage contract the conductor uses, grouped by
// role. store.Store (SQLite and PostgreSQL) satisfies it; each method has
// the meaning and errors store.Store documents.
type Store interface {
	NodeStore
	LockStore
	PortStore
	PortgroupStore
	AllocationStore
	ConductorStore
	store.SettingsStore
	store.DeployTemplateStore
	store.RunbookStore
	store.ChassisStore
	store.VolumeStore
	store.InspectionRuleStore
	store.DiagnosisStore
	// ListHistory returns a node's history, oldest first.
	ListHistory(ctx context.Context, nodeUUID string) ([]*model.HistoryEvent, error)
	// AddHistory appends a node history entry and prunes to the newest keep.
	AddHistory(ctx context.Context, e *model.HistoryEvent, keep int) error
}

// NodeStore reads and writes nodes.
type NodeStore interface {
	CreateNode(ctx context.Context, n *model.Node) error
	GetNode(ctx context.Context, ident string) (*model.Node, error)
	ListNodes(ctx context.Context, q store.NodeQuery) ([]*model.Node, error)
	CountNodes(ctx context.Context, q store.NodeQuery) (int, error)
	UpdateNode(ctx context.Context, n *model.Node) error
	DeleteNode(ctx context.Context, uuid string) error
}

// LockStore takes and frees node locks (the reservation column).
type LockStore interface {
	ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error)
	ReleaseNode(ctx context.Context, uuid, host string) error
	ReleaseHost(ctx context.Context, host string) ([]string, error)
}

// PortStore reads and writes ports.
type PortStore interface {
	CreatePort(ctx context.Context, p *model.Port) error
	GetPort(ctx context.Context, ident string) (*model.Port, error)
	GetPortByAddress(ctx context.Context, mac string) (*model.Port, error)
	GetNodeByPortAddress(ctx context.Context, macs []string) (*model.Node, error)
	ListPorts(ctx context.Context, q store.PortQuery) ([]*model.Port, error)
	UpdatePort(ctx context.Context, p *model.Port) error
	DeletePort(ctx context.Context, uuid string) error
}

// PortgroupStore reads and writes portgroups.
type PortgroupStore interface {
	CreatePortgroup(ctx context.Context, pg *model.Portgroup) error
	GetPortgroup(ctx context.Context, ident string) (*model.Portgroup, error)
	ListPortgroups(ctx context.Context, q store.PortgroupQuery) ([]*model.Portgroup, error)
	UpdatePortgroup(ctx context.Context, pg *model.Portgroup) error
	DeletePortgroup(ctx context.Context, uuid string) error
}

// AllocationStore reads and writes allocations.
type AllocationStore interface {
	CreateAllocation(ctx context.Context, a *model.Allocation) error
	GetAllocation(ctx context.Context, ident string) (*model.Allocation, error)
	ListAllocations(ctx context.Context, q store.AllocationQuery) ([]*model.Allocation, error)
	UpdateAllocation(ctx context.Context, a *model.Allocation) error
	DeleteAllocation(ctx context.Context, uuid string) error
}

// ConductorStore keeps the conductor rows (registration and heartbeat).
type ConductorStore interface {
	RegisterConductor(ctx context.Context, c *model.Conductor) error
	HeartbeatConductor(ctx context.Context, hostname string, now time.Time) error
	UnregisterConductor(ctx context.Context, hostname string) error
	ListConductors(ctx context.Context) ([]*model.Conductor, error)
}
