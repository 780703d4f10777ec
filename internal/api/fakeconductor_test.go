package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

const fakeDriver = "fake-hardware"

// fakeConductor is a small stateful Conductor over the test store: writes
// happen at once (no workers), following the FSM. Any method can be
// replaced by setting its function field.
type fakeConductor struct {
	st   store.Store
	host string
	now  func() time.Time

	mu         sync.Mutex
	boot       map[string]conductor.BootDevice
	provisions []conductor.ProvisionRequest
	powers     []conductor.PowerRequest

	CreateNodeFn func(ctx context.Context, n *model.Node, initialAvailable bool) error
	UpdateNodeFn func(ctx context.Context, ident string, apply func(n *model.Node) error) (*model.Node, error)
	ProvisionFn  func(ctx context.Context, ident string, req conductor.ProvisionRequest) error
	SetPowerFn   func(ctx context.Context, ident string, req conductor.PowerRequest) error
	ValidateFn   func(ctx context.Context, ident string) (map[string]conductor.ValidateResult, error)
	CreatePortFn func(ctx context.Context, p *model.Port) error
}

var _ Conductor = (*fakeConductor)(nil)

func newFakeConductor(st store.Store, now func() time.Time) *fakeConductor {
	return &fakeConductor{st: st, host: "anvil-test", now: now, boot: map[string]conductor.BootDevice{}}
}

func (c *fakeConductor) Host() string { return c.host }

func (c *fakeConductor) get(ctx context.Context, ident string) (*model.Node, error) {
	n, err := c.st.GetNode(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NodeNotFound(ident)
	}
	return n, err
}

func noDriver(name, group string) error {
	return fault.New(fault.Invalid, "No valid host was found. Reason: No conductor service registered which supports driver %s for conductor group \"%s\".", name, group)
}

func (c *fakeConductor) CreateNode(ctx context.Context, n *model.Node, initialAvailable bool) error {
	if c.CreateNodeFn != nil {
		return c.CreateNodeFn(ctx, n, initialAvailable)
	}
	if n.Driver != fakeDriver {
		return noDriver(n.Driver, n.ConductorGroup)
	}
	for _, k := range model.InterfaceNames {
		if n.Interfaces.Get(k) == "" {
			n.Interfaces.Set(k, map[string]string{"network": "noop", "storage": "noop"}[k])
			if n.Interfaces.Get(k) == "" {
				n.Interfaces.Set(k, "fake")
			}
		}
	}
	if n.UUID == "" {
		n.UUID = uuid.NewString()
	}
	n.ProvisionState = fsm.Enroll
	if initialAvailable {
		n.ProvisionState = fsm.Available
	}
	n.CreatedAt = c.now()
	err := c.st.CreateNode(ctx, n)
	var dup *store.DuplicateError
	if errors.As(err, &dup) && dup.Field == "name" {
		return fault.New(fault.Conflict, "A node with name %s already exists.", dup.Value)
	}
	return err
}

func (c *fakeConductor) UpdateNode(ctx context.Context, ident string, apply func(n *model.Node) error) (*model.Node, error) {
	if c.UpdateNodeFn != nil {
		return c.UpdateNodeFn(ctx, ident, apply)
	}
	n, err := c.get(ctx, ident)
	if err != nil {
		return nil, err
	}
	if n.Reservation != "" {
		return nil, fault.NodeLocked(n.UUID, n.Reservation)
	}
	cp := cloneNode(n)
	if err := apply(cp); err != nil {
		return nil, err
	}
	if cp.Driver != fakeDriver {
		return nil, noDriver(cp.Driver, cp.ConductorGroup)
	}
	if !cp.Maintenance {
		cp.MaintenanceReason = ""
	}
	if err := c.st.UpdateNode(ctx, cp); err != nil {
		return nil, err
	}
	return cp, nil
}

func (c *fakeConductor) DeleteNode(ctx context.Context, ident string) error {
	n, err := c.get(ctx, ident)
	if err != nil {
		return err
	}
	if !fsm.DeleteAllowed(n.ProvisionState) && !n.Maintenance {
		return fault.New(fault.Conflict, "Can not delete node \"%s\" while it is in provision state \"%s\".", n.UUID, n.ProvisionState)
	}
	return c.st.DeleteNode(ctx, n.UUID)
}

// Provision moves the node through the machine until a stable state.
func (c *fakeConductor) Provision(ctx context.Context, ident string, req conductor.ProvisionRequest) error {
	c.mu.Lock()
	c.provisions = append(c.provisions, req)
	c.mu.Unlock()
	if c.ProvisionFn != nil {
		return c.ProvisionFn(ctx, ident, req)
	}
	n, err := c.get(ctx, ident)
	if err != nil {
		return err
	}
	event := req.Target
	if v, ok := fsm.LookupVerb(req.Target); ok {
		event = v.Event
	}
	to, _, ok := fsm.Next(n.ProvisionState, event, n.TargetProvisionState)
	if !ok {
		return fault.InvalidState(req.Target, n.UUID, n.ProvisionState)
	}
	from := n.ProvisionState
	for i := 0; i < 5 && !fsm.IsStable(to); i++ {
		next := fsm.EvDone
		switch {
		case to == fsm.Deleting:
			next = fsm.EvClean
		case to == fsm.Cleaning && event == fsm.EvClean:
			next = fsm.EvManage
		}
		if s, _, ok := fsm.Next(to, next, ""); ok {
			to = s
		}
	}
	n.ProvisionState, n.TargetProvisionState, n.ProvisionUpdatedAt = to, "", c.now()
	if err := c.st.UpdateNode(ctx, n); err != nil {
		return err
	}
	return c.st.AddHistory(ctx, &model.HistoryEvent{NodeUUID: n.UUID, Severity: model.SeverityInfo,
		EventType: "provisioning", Event: "Node moved to " + to, Conductor: c.host,
		FromState: from, ToState: to, Trigger: event, Duration: 1500 * time.Millisecond}, 0)
}

func (c *fakeConductor) SetPower(ctx context.Context, ident string, req conductor.PowerRequest) error {
	c.mu.Lock()
	c.powers = append(c.powers, req)
	c.mu.Unlock()
	if c.SetPowerFn != nil {
		return c.SetPowerFn(ctx, ident, req)
	}
	n, err := c.get(ctx, ident)
	if err != nil {
		return err
	}
	if !fsm.IsPowerTarget(req.Target) {
		return fault.InvalidState(req.Target, n.UUID, n.PowerState)
	}
	n.PowerState = fsm.PowerResult(req.Target)
	return c.st.UpdateNode(ctx, n)
}

func (c *fakeConductor) SetMaintenance(ctx context.Context, ident string, on bool, reason string) error {
	n, err := c.get(ctx, ident)
	if err != nil {
		return err
	}
	n.Maintenance, n.MaintenanceReason = on, reason
	if !on {
		n.MaintenanceReason = ""
	}
	return c.st.UpdateNode(ctx, n)
}

func (c *fakeConductor) Validate(ctx context.Context, ident string) (map[string]conductor.ValidateResult, error) {
	if c.ValidateFn != nil {
		return c.ValidateFn(ctx, ident)
	}
	if _, err := c.get(ctx, ident); err != nil {
		return nil, err
	}
	yes := true
	out := map[string]conductor.ValidateResult{}
	for _, k := range []string{"power", "boot", "deploy", "management", "network", "console", "storage"} {
		out[k] = conductor.ValidateResult{Result: &yes}
	}
	out["rescue"] = conductor.ValidateResult{Reason: "not supported"}
	return out, nil
}

func (c *fakeConductor) GetBootDevice(ctx context.Context, ident string) (conductor.BootDevice, error) {
	n, err := c.get(ctx, ident)
	if err != nil {
		return conductor.BootDevice{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.boot[n.UUID]; ok {
		return d, nil
	}
	no := false
	return conductor.BootDevice{Device: "pxe", Persistent: &no}, nil
}

func (c *fakeConductor) SetBootDevice(ctx context.Context, ident string, dev conductor.BootDevice) error {
	n, err := c.get(ctx, ident)
	if err != nil {
		return err
	}
	if dev.Device != "pxe" && dev.Device != "disk" {
		return fault.New(fault.Invalid, "Invalid boot device %s specified.", dev.Device)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.boot[n.UUID] = dev
	return nil
}

func (c *fakeConductor) SupportedBootDevices(ctx context.Context, ident string) ([]string, error) {
	if _, err := c.get(ctx, ident); err != nil {
		return nil, err
	}
	return []string{"pxe", "disk"}, nil
}

func (c *fakeConductor) CreatePort(ctx context.Context, p *model.Port) error {
	if c.CreatePortFn != nil {
		return c.CreatePortFn(ctx, p)
	}
	if _, err := c.get(ctx, p.NodeUUID); err != nil {
		return err
	}
	p.CreatedAt = c.now()
	return c.st.CreatePort(ctx, p) // duplicates come back as *store.DuplicateError
}

func (c *fakeConductor) UpdatePort(ctx context.Context, ident string, apply func(p *model.Port) error) (*model.Port, error) {
	p, err := c.st.GetPort(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, "Port %s could not be found.", ident)
	} else if err != nil {
		return nil, err
	}
	cp := *p
	if err := apply(&cp); err != nil {
		return nil, err
	}
	if err := c.st.UpdatePort(ctx, &cp); err != nil {
		return nil, err
	}
	return &cp, nil
}

func (c *fakeConductor) DeletePort(ctx context.Context, ident string) error {
	if err := c.st.DeletePort(ctx, ident); errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "Port %s could not be found.", ident)
	} else if err != nil {
		return err
	}
	return nil
}

func (c *fakeConductor) Heartbeat(ctx context.Context, ident string, hb conductor.HeartbeatRequest) error {
	_, err := c.get(ctx, ident)
	return err
}

func (c *fakeConductor) Drivers() []conductor.DriverInfo {
	ifaces := map[string][]string{}
	defaults := map[string]string{}
	for _, k := range model.InterfaceNames {
		ifaces[k] = []string{"fake", "no-" + k}
		defaults[k] = "fake"
	}
	return []conductor.DriverInfo{{
		Name: fakeDriver, Hosts: []string{c.host}, Interfaces: ifaces, Defaults: defaults,
		Properties: map[string]string{"B1": "B1 description. Required.", "B2": "B2 description. Required."},
	}}
}

func (c *fakeConductor) Driver(name string) (conductor.DriverInfo, error) {
	for _, d := range c.Drivers() {
		if d.Name == name {
			return d, nil
		}
	}
	return conductor.DriverInfo{}, fault.New(fault.NotFound, "Could not find the following driver(s) or hardware type(s): %s.", name)
}
