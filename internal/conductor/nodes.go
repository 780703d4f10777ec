package conductor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// noDriver is Ironic's answer for a driver no conductor runs.
func noDriver(name, group string) error {
	return fault.New(fault.Invalid, "No valid host was found. Reason: No conductor service registered which supports driver %s for conductor group \"%s\".", name, group)
}

// CreateNode fills defaults (interfaces, initial state) and stores n.
func (svc *Nodes) CreateNode(ctx context.Context, n *model.Node, initialAvailable bool) error {
	c := svc.c
	if _, ok := c.reg.HardwareType(n.Driver); !ok {
		return noDriver(n.Driver, n.ConductorGroup)
	}
	if err := c.reg.Compose(n); err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	if n.UUID == "" {
		n.UUID = uuid.NewString()
	}
	n.ProvisionState = fsm.Enroll
	if initialAvailable {
		n.ProvisionState = fsm.Available
	}
	n.TargetProvisionState, n.Reservation = "", ""
	now := c.now().UTC()
	n.CreatedAt, n.ProvisionUpdatedAt = now, now
	// No history entry for the creation (Ironic has none either): created_at
	// and provision_updated_at already say when the node entered its state,
	// and a second write would halve the create rate.
	if err := c.store.Nodes().CreateNode(ctx, n); err != nil {
		return duplicate(err)
	}
	return nil
}

// duplicate turns a store duplicate into Ironic's 409 texts.
func duplicate(err error) error {
	var d *store.DuplicateError
	if !errors.As(err, &d) {
		return err
	}
	switch d.Field {
	case "name":
		return fault.New(fault.Conflict, "A node with name %s already exists.", d.Value)
	case "uuid":
		return fault.New(fault.Conflict, "A node with UUID %s already exists.", d.Value)
	case "instance_uuid":
		return fault.New(fault.Conflict, "Instance %s is already associated with a node.", d.Value)
	case "address":
		return fault.New(fault.Conflict, "A port with MAC address %s already exists.", d.Value)
	}
	return fault.New(fault.Conflict, "A resource with %s %s already exists.", d.Field, d.Value)
}

// UpdateNode applies a change under the node lock with Ironic's rules.
func (svc *Nodes) UpdateNode(ctx context.Context, ident string, apply func(n *model.Node) error) (*model.Node, error) {
	c := svc.c
	// Ironic's API refuses before it asks for the lock.
	cur, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	if err := transitionInProgress(cur, ident); err != nil {
		return nil, err
	}
	t, err := c.acquireNode(ctx, cur.UUID, "", false)
	if err != nil {
		return nil, err
	}
	defer t.release()
	old := t.node
	if err := transitionInProgress(old, ident); err != nil {
		return nil, err
	}
	n, err := clone(old)
	if err != nil {
		return nil, err
	}
	if err := apply(n); err != nil {
		return nil, err
	}
	if err := svc.checkUpdate(old, n); err != nil {
		return nil, err
	}
	if err := c.Allocations().dropAllocationOfUnassociated(ctx, old, n); err != nil {
		return nil, err
	}
	if err := c.store.Nodes().UpdateNode(ctx, n); err != nil {
		return nil, duplicate(err)
	}
	if old.Maintenance != n.Maintenance {
		c.addHistory(ctx, []*model.HistoryEvent{maintenanceEvent(c, n, "")})
	}
	return n, nil
}

func transitionInProgress(n *model.Node, ident string) error {
	if n.TargetProvisionState != "" && !fsm.UpdateAllowed(n.ProvisionState) {
		return fault.New(fault.Conflict, "Node %s can not be updated while a state transition is in progress.", ident)
	}
	return nil
}

func (svc *Nodes) checkUpdate(old, n *model.Node) error {
	c := svc.c
	allowed := n.Maintenance || fsm.InterfaceUpdateAllowed(old.ProvisionState)
	notAllowed := func(field string) error {
		return fault.New(fault.Conflict, "Node %s can not have %s updated unless it is in one of allowed (%s) states or in maintenance mode.",
			old.UUID, field, strings.Join(fsm.InterfaceUpdateAllowedStates(), ", "))
	}
	if n.Driver != old.Driver {
		if _, ok := c.reg.HardwareType(n.Driver); !ok {
			return noDriver(n.Driver, n.ConductorGroup)
		}
		if !allowed {
			return notAllowed("driver")
		}
		// Interfaces the new hardware type lacks fall back to its defaults.
		ht, _ := c.reg.HardwareType(n.Driver)
		for _, k := range model.InterfaceNames {
			if v := n.Interfaces.Get(k); v != "" && !slices.Contains(ht.Supported[k], v) && v == old.Interfaces.Get(k) {
				n.Interfaces.Set(k, "")
			}
		}
	}
	// As in Ironic, interfaces are checked only when the driver or one of
	// them changes: a node whose stored interface is no longer enabled can
	// still have other fields updated.
	check := n.Driver != old.Driver
	for _, k := range model.InterfaceNames {
		if n.Interfaces.Get(k) != old.Interfaces.Get(k) {
			if !allowed {
				return notAllowed(k + "_interface")
			}
			check = true
		}
	}
	if check {
		if err := c.reg.Compose(n); err != nil {
			return fault.Wrap(fault.Invalid, err, err.Error())
		}
	}
	if n.ResourceClass != old.ResourceClass && old.ResourceClass != "" && !allowed {
		return notAllowed("resource_class")
	}
	if old.InstanceUUID != "" && n.InstanceUUID != "" && n.InstanceUUID != old.InstanceUUID {
		return fault.New(fault.Conflict, "Node %s is associated with instance %s.", old.UUID, old.InstanceUUID)
	}
	if !n.Maintenance {
		n.MaintenanceReason, n.Fault = "", ""
	}
	return nil
}

// clone deep-copies a node (maps included) so a failed update changes nothing.
func clone(n *model.Node) (*model.Node, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	out := &model.Node{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	out.ID, out.Version, out.Reservation, out.Conductor = n.ID, n.Version, n.Reservation, n.Conductor
	return out, nil
}

// DeleteNode deletes a node in a delete-allowed state or in maintenance.
func (svc *Nodes) DeleteNode(ctx context.Context, ident string) error {
	c := svc.c
	// As Ironic, without the driver: a node whose interfaces are no longer
	// enabled can still be deleted.
	t, err := c.acquireNode(ctx, ident, "", false)
	if err != nil {
		return err
	}
	n := t.node
	var ferr error
	switch {
	case n.Protected:
		ferr = fault.New(fault.Conflict, "Node %s is protected and cannot be undeployed, rebuilt or deleted", n.UUID)
	case !fsm.DeleteAllowed(n.ProvisionState) && !n.Maintenance:
		ferr = fault.New(fault.Conflict, "Can not delete node \"%s\" while it is in provision state \"%s\". Valid provision states to perform deletion are: \"%s\", or set the node into maintenance mode",
			n.UUID, n.ProvisionState, pyrepr.StringTuple(fsm.DeleteAllowedStates()))
	case n.InstanceUUID != "":
		ferr = fault.New(fault.Conflict, "Node %s is associated with instance %s.", n.UUID, n.InstanceUUID)
	}
	if ferr != nil {
		t.release()
		return ferr
	}
	if err := c.store.Nodes().DeleteNode(ctx, n.UUID); err != nil {
		t.release()
		return err
	}
	c.log.Info("node deleted", "node", n.UUID)
	svc.withdrawBoot(ctx, n)
	return nil
}

// withdrawBoot has a deleted node's boot interface withdraw whatever it
// still publishes (a node deleted in maintenance mid-deploy); failures are
// logged, the node is gone either way.
func (svc *Nodes) withdrawBoot(ctx context.Context, n *model.Node) {
	c := svc.c
	drv, err := c.reg.For(n)
	if err != nil || drv.Boot == nil {
		return
	}
	if err := drv.Boot.CleanUpInstance(ctx, &driver.Task{Node: n, Driver: drv}); err != nil {
		c.log.Warn("withdrawing a deleted node's boot files failed", "node", n.UUID, "err", err)
	}
}

// SetMaintenance sets or clears maintenance under the node lock.
func (svc *Nodes) SetMaintenance(ctx context.Context, ident string, on bool, reason string) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, "")
	if err != nil {
		return err
	}
	defer t.release()
	n := t.node
	n.Maintenance = on
	if on {
		n.MaintenanceReason = reason
	} else {
		n.MaintenanceReason, n.Fault = "", ""
	}
	t.history = append(t.history, maintenanceEvent(c, n, ""))
	return t.save(ctx)
}

func maintenanceEvent(c *Conductor, n *model.Node, user string) *model.HistoryEvent {
	msg := "Maintenance mode unset"
	if n.Maintenance {
		msg = "Maintenance mode set"
		if n.MaintenanceReason != "" {
			msg += ": " + n.MaintenanceReason
		}
	}
	now := c.now().UTC()
	return &model.HistoryEvent{NodeUUID: n.UUID, Severity: model.SeverityInfo, EventType: "maintenance",
		Event: msg, Conductor: c.cfg.Host, User: user, CreatedAt: now,
		State: n.ProvisionState, TargetProvisionState: n.TargetProvisionState, DurationSeconds: historyDuration(n, now)}
}

// validateKinds returns the interfaces GET /validate reports, in Ironic's order.
func validateKinds() []string {
	return []string{"bios", "boot", "console", "deploy", "firmware", "inspect", "management",
		"network", "power", "raid", "rescue", "storage"}
}

// Validate runs each interface's validation without touching hardware.
func (svc *Nodes) Validate(ctx context.Context, ident string) (map[string]ValidateResult, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	drv, err := c.reg.For(n)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	yes, no := true, false
	var portList []*model.Port
	ports := func(ctx context.Context) []*model.Port { // listed once, when an interface needs them
		if portList == nil {
			var err error
			if portList, err = c.store.Ports().ListPorts(ctx, store.PortQuery{NodeUUID: n.UUID}); err != nil {
				c.log.Warn("listing ports failed", "node", n.UUID, "err", err)
			}
		}
		return portList
	}
	out := map[string]ValidateResult{}
	for _, k := range validateKinds() {
		v, ok := drv.Interface(k).(driver.Validator)
		if !ok || v == nil || reflect.ValueOf(v).IsNil() {
			out[k] = ValidateResult{Reason: fmt.Sprintf("%s interface is not supported by driver %s", k, n.Driver)}
			continue
		}
		err := v.Validate(&driver.Task{Node: n, Driver: drv})
		if pv, ok := v.(driver.PortValidator); ok && err == nil {
			err = pv.ValidatePorts(&driver.Task{Node: n, Ports: ports(ctx), Driver: drv})
		}
		if err != nil {
			out[k] = ValidateResult{Result: &no, Reason: err.Error()}
			continue
		}
		out[k] = ValidateResult{Result: &yes}
	}
	return out, nil
}
