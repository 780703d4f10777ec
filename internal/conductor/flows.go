package conductor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Verifier is an optional Power capability: check the BMC answers with the
// node's credentials (what "manage" runs in verifying).
type Verifier interface {
	Verify(ctx context.Context, t *driver.Task) error
}

// verifyFlow: verifying → manageable, or back to enroll with last_error.
func (c *Conductor) verifyFlow(ctx context.Context, t *task) {
	n := t.node
	p := t.drv.Power
	if p == nil {
		t.failWith(fmt.Sprintf("Failed to validate power driver interface for node %s. Error: no power interface", n.UUID))
		return
	}
	if err := p.Validate(t.checkTask()); err != nil {
		t.failWith(fmt.Sprintf("Failed to validate power driver interface for node %s. Error: %s", n.UUID, t.c.errorText(err)))
		return
	}
	dt := t.driverTask(ctx)
	if v, ok := p.(Verifier); ok {
		if err := v.Verify(ctx, dt); err != nil {
			t.failWith(fmt.Sprintf("Failed to get power state for node %s. Error: %s", n.UUID, t.c.errorText(err)))
			return
		}
	}
	state, err := p.PowerState(ctx, dt)
	if err != nil {
		t.failWith(fmt.Sprintf("Failed to get power state for node %s. Error: %s", n.UUID, t.c.errorText(err)))
		return
	}
	if state == fsm.PowerOn || state == fsm.PowerOff {
		n.PowerState = state
	}
	t.cacheSettings(ctx) // Ironic's node_update_cache after verifying
	t.advance(fsm.EvDone)
}

// inspectFlow: inspecting → manageable (or inspect wait), inspect failed on error.
func (c *Conductor) inspectFlow(ctx context.Context, t *task) {
	n := t.node
	n.InspectionStartedAt, n.InspectionFinishedAt = c.now().UTC(), time.Time{}
	if t.drv.Inspect == nil {
		t.failWith(fmt.Sprintf("Failed to inspect hardware. Reason: node %s has no inspect interface", n.UUID))
		return
	}
	if err := t.drv.Inspect.Validate(t.checkTask()); err != nil {
		t.failWith(fmt.Sprintf("Failed to validate inspect interface for node %s: %s", n.UUID, t.c.errorText(err)))
		return
	}
	dt := t.driverTask(ctx)
	before := storedInventory(n)
	res, err := t.drv.Inspect.Inspect(ctx, dt)
	if err != nil {
		c.failAgentOp(ctx, t, opInspect, fmt.Sprintf("Failed to inspect hardware. Reason: %s", t.c.errorText(err)))
		return
	}
	c.NodeRecords().createInspectedPorts(ctx, t, dt.Ports)
	if res == driver.Wait {
		t.advance(fsm.EvWait)
		return
	}
	// Out-of-band inspection (redfish) stored a new inventory: the rules
	// run on it, their failure is the inspection's (Ironic: str(e)).
	if after := storedInventory(t.node); after != nil && !sameMap(before, after) {
		if err := t.applyInspectionRules(ctx); err != nil {
			c.failAgentOp(ctx, t, opInspect, t.c.errorText(err))
			return
		}
	}
	n.InspectionFinishedAt = c.now().UTC()
	t.cacheSettings(ctx)
	t.advance(fsm.EvDone)
}

// deployFlow: deploying → active (or wait call-back / deploy hold), deploy
// failed on error. The driver's deploy steps run first, then the user's.
func (c *Conductor) deployFlow(userSteps []map[string]any) flow {
	return func(ctx context.Context, t *task) {
		n := t.node
		if t.drv.Deploy == nil {
			t.failWith(fmt.Sprintf("Node %s has no deploy interface", n.UUID))
			return
		}
		if err := t.drv.Deploy.Validate(t.checkTask()); err != nil {
			t.failWith(fmt.Sprintf("Failed to validate deploy interface for node %s: %s", n.UUID, t.c.errorText(err)))
			return
		}
		if !c.planUser(ctx, t, driver.DeploySteps, userSteps) {
			return
		}
		c.runSteps(ctx, t, driver.DeploySteps, 0)
	}
}

// tearDownFlow: deleting → cleaning → available; error on a failed tear down.
func (c *Conductor) tearDownFlow(ctx context.Context, t *task) {
	n := t.node
	if d := t.drv.Deploy; d != nil {
		if err := d.TearDown(ctx, t.driverTask(ctx)); err != nil {
			t.failWith(fmt.Sprintf("Failed to tear down. Error: %s", t.c.errorText(err)))
			return
		}
	}
	if err := c.NodeRecords().removeVIFs(ctx, n); err != nil {
		t.failWith(fmt.Sprintf("Failed to tear down: %v", err))
		return
	}
	n.InstanceInfo, n.InstanceUUID = nil, ""
	// The switched-to interface's cleaning continues; later heartbeats
	// load the original, which cleans as direct does (autodetect).
	restoreDeploy(n)
	c.Allocations().releaseAllocation(ctx, n)
	for _, k := range []string{"user_deploy_steps", "deploy_steps", "agent_url", "agent_secret_token"} {
		delete(n.DriverInternalInfo, k)
	}
	t.advance(fsm.EvClean)
	if t.node.ProvisionState != fsm.Cleaning {
		return
	}
	c.cleanFlow(false, nil)(ctx, t)
}

// rescueFlow: rescuing → rescue (or rescue wait), rescue failed on error.
func (c *Conductor) rescueFlow(ctx context.Context, t *task) {
	r := t.drv.Rescue
	if r == nil {
		t.failWith(fmt.Sprintf("Node %s has no rescue interface", t.node.UUID))
		return
	}
	if err := r.Validate(t.checkTask()); err != nil {
		t.failWith(fmt.Sprintf("Failed to validate rescue interface for node %s: %s", t.node.UUID, t.c.errorText(err)))
		return
	}
	res, err := r.Rescue(ctx, t.driverTask(ctx))
	if err != nil {
		c.failAgentOp(ctx, t, opRescue, fmt.Sprintf("Failed to rescue node %s: %s", t.node.UUID, t.c.errorText(err)))
		return
	}
	if res == driver.Wait {
		t.advance(fsm.EvWait)
		return
	}
	t.advance(fsm.EvDone)
}

// unrescueFlow: unrescuing → active, unrescue failed on error.
func unrescueFlow(ctx context.Context, t *task) {
	r := t.drv.Rescue
	if r == nil {
		t.failWith(fmt.Sprintf("Node %s has no rescue interface", t.node.UUID))
		return
	}
	if err := r.Unrescue(ctx, t.driverTask(ctx)); err != nil {
		t.failWith(fmt.Sprintf("Failed to unrescue node %s: %s", t.node.UUID, t.c.errorText(err)))
		return
	}
	delete(t.node.InstanceInfo, "rescue_password")
	t.advance(fsm.EvDone)
}

// adoptFlow: adopting → active, adopt failed on error.
func adoptFlow(ctx context.Context, t *task) {
	n := t.node
	var err error
	switch a, ok := t.drv.Deploy.(driver.Adopter); {
	case t.drv.Deploy == nil:
		err = fmt.Errorf("no deploy interface")
	case ok:
		if err = t.drv.Deploy.Validate(t.checkTask()); err == nil {
			err = a.Adopt(ctx, t.driverTask(ctx))
		}
	default:
		err = t.drv.Deploy.Validate(t.checkTask())
	}
	if err != nil {
		t.failWith(fmt.Sprintf("Error while attempting to adopt node %s: %s.", n.UUID, t.c.errorText(err)))
		return
	}
	t.advance(fsm.EvDone)
}

// serviceFlow: servicing → active (or service wait / hold), service failed on error.
func (c *Conductor) serviceFlow(steps []map[string]any) flow {
	return func(ctx context.Context, t *task) {
		if !c.planUser(ctx, t, driver.ServiceSteps, steps) {
			return
		}
		t.cacheSettings(ctx) // Ironic's node_update_cache when servicing starts
		c.runSteps(ctx, t, driver.ServiceSteps, 0)
	}
}

// createInspectedPorts stores the ports an inspection found (those without a
// UUID); a MAC that already exists is left alone.
func (svc *NodeRecords) createInspectedPorts(ctx context.Context, t *task, ports []*model.Port) {
	c := svc.c
	for _, p := range ports {
		if p.UUID != "" {
			continue
		}
		p.UUID, p.NodeUUID = uuid.NewString(), t.node.UUID
		p.Address = strings.ToLower(p.Address)
		if err := svc.CreatePort(ctx, p); err != nil {
			c.log.Info("inspection found a port that could not be created", "node", t.node.UUID, "address", p.Address, "err", err)
			continue
		}
		t.record(&model.HistoryEvent{Severity: model.SeverityInfo, EventType: "inspection",
			Event: fmt.Sprintf("Port %s created by inspection", p.Address)})
	}
}
