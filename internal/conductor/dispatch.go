package conductor

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// flow is the work a worker does after a transition is saved. It ends by
// firing done/fail/wait on the task; the worker then saves and releases.
type flow func(ctx context.Context, t *task)

// start fires the verb's event on a locked node, saves it and hands the rest
// of the work to a worker. On error the caller releases the lock.
func (c *Conductor) start(ctx context.Context, t *task, event string, req ProvisionRequest) error {
	n := t.node
	switch event {
	case fsm.EvManage:
		if n.ProvisionState == fsm.Enroll {
			return c.startWork(ctx, t, event, c.verifyFlow)
		}
		return t.noWork(ctx, event)
	case fsm.EvProvide:
		return c.startWork(ctx, t, event, c.cleanFlow(false, nil))
	case fsm.EvClean:
		if n.Maintenance {
			return fault.New(fault.Invalid, "The cleaning operation can't be performed on node %s because it's in maintenance mode.", n.UUID)
		}
		return c.startWork(ctx, t, event, c.cleanFlow(true, req.CleanSteps))
	case fsm.EvInspect:
		return c.startWork(ctx, t, event, c.inspectFlow)
	case fsm.EvDeploy, fsm.EvRebuild:
		if err := t.switchDeploy(ctx); err != nil {
			return err
		}
		if err := validateDeploy(ctx, t); err != nil {
			return err
		}
		prepareDeploy(n, req)
		return c.startWork(ctx, t, event, c.deployFlow(req.DeploySteps))
	case fsm.EvDelete:
		return c.startWork(ctx, t, event, c.tearDownFlow)
	case fsm.EvRescue:
		setInfo(&n.InstanceInfo, "rescue_password", *req.RescuePassword)
		return c.startWork(ctx, t, event, c.rescueFlow)
	case fsm.EvUnrescue:
		return c.startWork(ctx, t, event, unrescueFlow)
	case fsm.EvAdopt:
		return c.startWork(ctx, t, event, adoptFlow)
	case fsm.EvService:
		if n.Maintenance {
			return inMaintenance(n.UUID)
		}
		return c.startWork(ctx, t, event, c.serviceFlow(req.ServiceSteps))
	case fsm.EvAbort:
		return c.abort(ctx, t)
	case fsm.EvUnhold:
		return c.unhold(ctx, t)
	}
	return fault.InvalidState(event, n.UUID, n.ProvisionState)
}

// noWork applies a transition that needs no worker (e.g. available → manageable).
func (t *task) noWork(ctx context.Context, event string) error {
	if err := t.fire(event); err != nil {
		return err
	}
	// As in Ironic, last_error stays until new work starts (e.g. the next
	// provide), so "manage" out of a failure state keeps the reason visible.
	if err := t.save(ctx); err != nil {
		return err
	}
	t.release()
	return nil
}

// startWork takes a worker slot (503 if none), fires event, saves the new
// state and target before returning, and runs fl on the worker, which saves
// the outcome and releases the lock.
func (c *Conductor) startWork(ctx context.Context, t *task, event string, fl flow) error {
	if err := c.workers.reserve(); err != nil {
		return err
	}
	if err := t.fire(event); err != nil {
		c.workers.free()
		return err
	}
	t.node.LastError = "" // Ironic clears last_error when new work starts
	if err := t.save(ctx); err != nil {
		c.workers.free()
		return err
	}
	c.workers.run(t, fl)
	return nil
}

// run runs fl on the worker reserved for it, which finishes t (saves and
// releases the node). Work a shutdown interrupted is recorded on the node:
// a node left in a state no one finishes fails with why.
func (p *pool) run(t *task, fl flow) {
	p.spawn(func(wctx context.Context) {
		defer t.finish()
		fl(wctx, t)
		if wctx.Err() == nil {
			return
		}
		msg := fmt.Sprintf("Operation was interrupted: conductor %s shut down", p.host)
		switch n := t.node; {
		case fsm.IsFailure(n.ProvisionState) && n.LastError != "":
			n.LastError = msg + " (" + n.LastError + ")"
			t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: "error", Event: n.LastError})
		case !fsm.IsStable(n.ProvisionState) && !fsm.IsWait(n.ProvisionState) && !fsm.IsHold(n.ProvisionState):
			t.failWith(msg)
		}
	})
}

// switchDeploy gives a deploy interface that chooses another
// (driver.DeploySwitcher: autodetect) the choice before validation, as
// Ironic's do_node_deploy calls switch_interface: the node keeps its
// original interface in driver_internal_info and deploys with the chosen
// one. Nothing is saved unless the deploy starts.
func (t *task) switchDeploy(ctx context.Context) error {
	c := t.c
	sw, ok := t.drv.Deploy.(driver.DeploySwitcher)
	if !ok {
		return nil
	}
	n := t.node
	name, err := sw.SwitchDeploy(ctx, n)
	if err != nil {
		return fault.New(fault.Invalid, "Failed to validate deploy or power info for node %s: %v", n.UUID, err)
	}
	orig := n.Interfaces.Get("deploy")
	n.Interfaces.Set("deploy", name)
	drv, err := c.reg.For(n)
	if err != nil {
		n.Interfaces.Set("deploy", orig)
		return fault.New(fault.Invalid, "Failed to validate deploy or power info for node %s: deploy interface %s chose %s: %v", n.UUID, orig, name, err)
	}
	setInfo(&n.DriverInternalInfo, driver.KeyOriginalDeployInterface, orig)
	t.drv = drv
	c.log.Info("deploy interface switched for this deploy", "node", n.UUID, "from", orig, "to", name)
	return nil
}

// restoreDeploy puts back the deploy interface a switch replaced
// (Ironic's restore_interface).
func restoreDeploy(n *model.Node) {
	if orig, _ := n.DriverInternalInfo[driver.KeyOriginalDeployInterface].(string); orig != "" {
		n.Interfaces.Set("deploy", orig)
		delete(n.DriverInternalInfo, driver.KeyOriginalDeployInterface)
	}
}

// validateDeploy runs the power and deploy interfaces' validation before
// anything starts, as Ironic's start_deploy does: a node that cannot deploy
// (no image, no deploy ramdisk, network boot not configured) is refused 400.
func validateDeploy(ctx context.Context, t *task) error {
	n := t.node
	for _, v := range []driver.Validator{t.drv.Power, t.drv.Deploy} {
		if v == nil {
			continue
		}
		err := v.Validate(t.checkTask())
		if pv, ok := v.(driver.PortValidator); ok && err == nil {
			err = pv.ValidatePorts(t.driverTask(ctx))
		}
		if err != nil {
			return fault.New(fault.Invalid, "Failed to validate deploy or power info for node %s: %v", n.UUID, err)
		}
	}
	msg := instanceTraitsError(n)
	if msg == "" {
		_, m, err := t.templateSteps(ctx, true)
		if err != nil {
			return err
		}
		msg = m
	}
	if msg != "" {
		return fault.New(fault.Invalid, "Failed to validate deploy or power info for node %s: %s", n.UUID, msg)
	}
	return nil
}

func prepareDeploy(n *model.Node, req ProvisionRequest) {
	if req.ConfigDrive != nil {
		setInfo(&n.InstanceInfo, "configdrive", req.ConfigDrive)
	}
	if len(req.DeploySteps) > 0 {
		steps := make([]any, len(req.DeploySteps))
		for i, s := range req.DeploySteps {
			steps[i] = s
		}
		setInfo(&n.DriverInternalInfo, "user_deploy_steps", steps)
	} else if n.DriverInternalInfo != nil {
		delete(n.DriverInternalInfo, "user_deploy_steps")
	}
}

func setInfo(m *model.JSON, k string, v any) {
	if *m == nil {
		*m = model.JSON{}
	}
	(*m)[k] = v
}

// abort stops an operation parked in a wait or hold state. The state moves
// at once; the agent ramdisk the operation booted is then torn down on a
// worker (Ironic's do_node_clean_abort, _do_node_rescue_abort), so an
// abort needs a free worker (503 otherwise) when the operation's interface
// has a ramdisk to tear down.
func (c *Conductor) abort(ctx context.Context, t *task) error {
	n := t.node
	from := n.ProvisionState
	op := operationIn(from)
	tearDown := op != nil
	if tearDown {
		if _, ok := t.agentImpl(op.name).(driver.RamdiskCleaner); !ok {
			tearDown = false
		}
	}
	if tearDown {
		if err := c.workers.reserve(); err != nil {
			return err
		}
	}
	if err := t.fire(fsm.EvAbort); err != nil {
		if tearDown {
			c.workers.free()
		}
		return err
	}
	switch {
	case op != nil:
		n.LastError = op.abortText(n)
		if op.steps == driver.CleanSteps {
			n.CleanStep = nil
		}
	case from == fsm.ServiceFailed:
		n.LastError = ""
	}
	if n.LastError != "" {
		t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: "abort", Event: n.LastError})
	}
	if err := t.save(ctx); err != nil {
		if tearDown {
			c.workers.free()
		}
		return err
	}
	if !tearDown {
		t.release()
		return nil
	}
	c.workers.spawn(func(wctx context.Context) {
		defer t.finish()
		c.tearDownAgent(wctx, t, op.name, true)
	})
	return nil
}

func stepName(s model.JSON) string {
	if len(s) == 0 {
		return "None"
	}
	return fmt.Sprintf("%v.%v", s["interface"], s["step"])
}
