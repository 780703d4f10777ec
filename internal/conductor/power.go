package conductor

import (
	"context"
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// SetPower starts a power action: target_power_state is saved before the call
// returns; a worker performs it and records power_state or last_error.
func (c *Conductor) SetPower(ctx context.Context, ident string, req PowerRequest) error {
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return err
	}
	if !fsm.IsPowerTarget(req.Target) {
		return fault.InvalidState(req.Target, n.UUID, powerName(n.PowerState))
	}
	t, err := c.acquire(ctx, n.UUID, req.User)
	if err != nil {
		return err
	}
	p := t.drv.Power
	if p == nil {
		t.release()
		return fault.New(fault.Invalid, "Node %s has no power interface", n.UUID)
	}
	if err := p.Validate(t.checkTask()); err != nil {
		t.release()
		return fault.New(fault.Invalid, "Failed to validate power driver interface for node %s. Error: %v", n.UUID, err)
	}
	if err := c.workers.reserve(); err != nil {
		t.release()
		return err
	}
	result := fsm.PowerResult(req.Target)
	t.node.TargetPowerState = result
	t.node.LastError = ""
	if req.Target != fsm.PowerOn && t.node.DriverInternalInfo != nil {
		// Off or rebooting: the agent running now is gone (Ironic wipes
		// before the action too).
		ipa.ForgetOnPowerOff(t.node.DriverInternalInfo)
	}
	if err := t.save(ctx); err != nil {
		c.workers.free()
		t.release()
		return err
	}
	c.workers.spawn(func(wctx context.Context) {
		defer t.finish()
		t.powerAction(wctx, req.Target)
	})
	return nil
}

func powerName(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

// powerAction performs target through the driver and records the outcome.
func (t *task) powerAction(ctx context.Context, target string) {
	c := t.c
	n := t.node
	before := n.PowerState
	err := t.drv.Power.SetPowerState(ctx, t.driverTask(ctx), target)
	n.TargetPowerState = ""
	if err != nil {
		n.LastError = fmt.Sprintf("Failed to change power state to '%s' by '%s'. Error: %s", fsm.PowerResult(target), target, t.c.errorText(err))
		t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: "power", Event: n.LastError})
		c.log.Error("power action failed", "node", n.UUID, "target", target, "err", err)
		return
	}
	n.PowerState = fsm.PowerResult(target)
	setInfo(&n.DriverInternalInfo, "last_power_state_change", c.now().UTC().Format("2006-01-02T15:04:05.000000"))
	t.record(&model.HistoryEvent{Severity: model.SeverityInfo, EventType: "power",
		Event: fmt.Sprintf("Power state changed from %s to %s by %q", powerName(before), n.PowerState, target)})
}

// GetBootDevice reads the boot device through the management interface.
func (svc *Management) GetBootDevice(ctx context.Context, ident string) (BootDevice, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return BootDevice{}, err
	}
	m, err := svc.management(n)
	if err != nil {
		return BootDevice{}, err
	}
	bd, err := m.BootDevice(ctx, &driver.Task{Node: n})
	if err != nil {
		return BootDevice{}, fault.Wrap(fault.Invalid, err, fmt.Sprintf("Failed to get boot device of node %s: %v", n.UUID, err))
	}
	p := bd.Persistent
	return BootDevice{Device: bd.Device, Persistent: &p}, nil
}

// SetBootDevice sets the boot device under the node lock.
func (svc *Management) SetBootDevice(ctx context.Context, ident string, dev BootDevice) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, "")
	if err != nil {
		return err
	}
	defer t.release()
	m, err := svc.management(t.node)
	if err != nil {
		return err
	}
	supported, err := m.SupportedBootDevices(ctx, &driver.Task{Node: t.node})
	if err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	if !slices.Contains(supported, dev.Device) {
		return fault.New(fault.Invalid, "Invalid boot device %s specified.", dev.Device)
	}
	persistent := dev.Persistent != nil && *dev.Persistent
	if err := m.SetBootDevice(ctx, t.driverTask(ctx), driver.BootDevice{Device: dev.Device, Persistent: persistent}); err != nil {
		return fault.Wrap(fault.Invalid, err, fmt.Sprintf("Failed to set boot device of node %s: %v", t.node.UUID, err))
	}
	return nil
}

// SupportedBootDevices lists the devices the management interface can set.
func (svc *Management) SupportedBootDevices(ctx context.Context, ident string) ([]string, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	m, err := svc.management(n)
	if err != nil {
		return nil, err
	}
	return m.SupportedBootDevices(ctx, &driver.Task{Node: n})
}

func (svc *Management) management(n *model.Node) (driver.Management, error) {
	c := svc.c
	drv, err := c.reg.For(n)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	if drv.Management == nil {
		return nil, fault.New(fault.Invalid, "Node %s has no management interface", n.UUID)
	}
	if err := drv.Management.Validate(&driver.Task{Node: n, Driver: drv}); err != nil {
		return nil, fault.New(fault.Invalid, "Failed to validate management interface for node %s: %v", n.UUID, err)
	}
	return drv.Management, nil
}
