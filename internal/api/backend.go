package api

import (
	"context"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/model"
)

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

	// Ports change under their node's lock.
	CreatePort(ctx context.Context, p *model.Port) error
	UpdatePort(ctx context.Context, ident string, apply func(p *model.Port) error) (*model.Port, error)
	DeletePort(ctx context.Context, ident string) error

	// Heartbeat is an agent's callback: it resumes a node in a wait state.
	Heartbeat(ctx context.Context, ident string, hb conductor.HeartbeatRequest) error

	// Drivers lists the enabled hardware types.
	Drivers() []conductor.DriverInfo
	// Driver returns one hardware type. Errors: fault NotFound.
	Driver(name string) (conductor.DriverInfo, error)
}
