package conductor

import (
	"context"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Heartbeat is the callback that resumes a node parked in a wait state. A
// heartbeat for a node that is not waiting changes nothing; it is accepted
// only with the node's own token.
//
// The endpoint is public, so its answers must not tell who asks which
// nodes exist. Ironic answers 404 for an unknown node and 400 for a bad
// token, and its heartbeat to a node without an issued token fails as a
// bad token: each is an existence oracle. Here an unknown node, a wrong
// or missing token, and a token-less heartbeat to a node that is not
// waiting all get ErrBadAgentToken (401, one text): no token can be valid
// for a node that does not exist, so the answer is also true. The only
// heartbeat accepted without a token is one that resumes a waiting node
// whose token is not required (agents that predate tokens); a node booted
// with Anvil's agent requires its token before the first lookup.
func (svc *Agents) Heartbeat(ctx context.Context, ident string, hb ipa.Heartbeat) error {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if f, ok := fault.As(err); ok && f.Kind == fault.NotFound {
		return ErrBadAgentToken()
	}
	if err != nil {
		return err
	}
	waiting := fsm.IsWait(n.ProvisionState)
	if stored, _ := n.DriverInternalInfo[ipa.KeyToken].(string); !waiting && !ipa.TokenMatches(stored, hb.AgentToken) {
		c.log.Warn("heartbeat refused", "node", n.UUID, "reason", "not waiting, and not the node's token")
		return ErrBadAgentToken()
	}
	if err := checkAgent(n, hb); err != nil {
		c.log.Warn("heartbeat refused", "node", n.UUID, "reason", err)
		return err
	}
	if !waiting {
		return nil
	}
	// A heartbeat that cannot be served now writes nothing: with every
	// worker busy it is refused 503 and on a locked node 409 before it
	// takes the lock (which is two writes, and a locked node's a wait of
	// up to LockRetries polls), as Ironic refuses one with
	// NoFreeConductorWorker or NodeLocked; the agent heartbeats again. At
	// 10,000 nodes ~195,000 heartbeats refused for want of a worker each
	// took and freed a lock, and the writes queued behind them timed out.
	if err := c.workers.available(); err != nil {
		return err
	}
	if n.Reservation != "" {
		return fault.NodeLocked(n.UUID, n.Reservation)
	}
	t, err := c.acquire(ctx, n.UUID, "agent")
	if err != nil {
		return err
	}
	if err := checkAgent(t.node, hb); err != nil {
		t.release()
		c.log.Warn("heartbeat refused", "node", n.UUID, "reason", err)
		return err
	}
	if !fsm.IsWait(t.node.ProvisionState) {
		t.release()
		return nil
	}
	recordAgent(t.node, hb)
	if _, pushes := t.drv.Inspect.(InventoryReceiver); pushes && t.node.ProvisionState == fsm.InspectWait {
		// The agent posts its inventory itself (ContinueInspection): a
		// heartbeat only says it is alive, and the node keeps waiting
		// (no inspecting ↔ inspect wait flap in which a post would find
		// the node busy), as Ironic's agent inspection does.
		err := t.save(ctx)
		t.release()
		return err
	}
	if err := c.resume(ctx, t); err != nil {
		t.release()
		return err
	}
	return nil
}

// resume continues the operation of a node in a wait state on a worker.
// A step operation's step is asked first, the node still waiting, as
// Ironic's heartbeat asks the agent: a step still running only touches
// provision_updated_at (Ironic's touch_provisioning: the callback timeout
// runs from the agent's last sign of life), with no transition, history
// entry or event; a finished or failed step moves the node on. Other
// operations fire "resume" (saved before returning) and continue.
func (c *Conductor) resume(ctx context.Context, t *task) error {
	op := operationIn(t.node.ProvisionState)
	if op != nil && op.steps != "" && t.node.ProvisionState == op.wait {
		if r, i := waitingStep(t, op.steps); r != nil {
			if err := c.workers.reserve(); err != nil {
				return err
			}
			c.workers.run(t, func(ctx context.Context, t *task) { t.pollStep(ctx, op.steps, r, i) })
			return nil
		}
	}
	return c.startWork(ctx, t, fsm.EvResume, func(ctx context.Context, t *task) {
		if op != nil {
			op.resume(c, ctx, t)
		}
	})
}

// waitingStep is the step a node in kind's wait state waits on, when its
// interface continues it (driver.Resumer), and its index.
func waitingStep(t *task, kind driver.StepKind) (driver.Resumer, int) {
	i := stepIndex(t.node, kind)
	steps := planned(t.node, kind)
	if i < 0 || i >= len(steps) || steps[i].Step == stepHold {
		return nil, i
	}
	r, _ := t.drv.Interface(steps[i].Interface).(driver.Resumer)
	return r, i
}

// pollStep continues step i of a node waiting in kind's wait state: still
// running, the node keeps waiting; done, it resumes (saved), the step's
// interface finishes it (driver.StepFinisher) and the rest of the plan
// runs; failed, it fails from the wait state (as Ironic's
// cleaning_error_handler does from clean wait).
func (t *task) pollStep(ctx context.Context, kind driver.StepKind, r driver.Resumer, i int) {
	c := t.c
	res, err := r.Continue(ctx, t.driverTask(ctx), string(kind))
	switch {
	case err != nil:
		steps := planned(t.node, kind)
		c.failStep(ctx, t, kind, stepFailed(t.node, steps[i], t.c.errorText(err)))
	case res == driver.Wait:
		t.node.ProvisionUpdatedAt = c.now().UTC()
	default:
		t.node.LastError = "" // as a resume clears it
		t.advance(fsm.EvResume)
		// Saved before the rest of the plan runs, as every resume is: a
		// conductor that dies in those steps leaves the node in its
		// operation's state, which a take-over fails with why, not in the
		// wait state, where it would wait for an agent the steps may
		// already have rebooted away.
		if err := t.save(ctx); err != nil {
			c.log.Error("saving a resumed node failed", "node", t.node.UUID, "err", err)
			return
		}
		if f, ok := r.(driver.StepFinisher); ok {
			if err := f.FinishStep(ctx, t.driverTask(ctx), string(kind)); err != nil {
				steps := planned(t.node, kind)
				c.failStep(ctx, t, kind, stepFailed(t.node, steps[i], t.c.errorText(err)))
				return
			}
		}
		c.runSteps(ctx, t, kind, i+1)
	}
}

// continueSteps runs the rest of the plan after the step that waited
// without an interface to ask (a hold, or a step whose interface does not
// continue one): that step is done. A step its interface continues is
// polled by pollStep instead.
func (c *Conductor) continueSteps(ctx context.Context, t *task, kind driver.StepKind) {
	c.runSteps(ctx, t, kind, stepIndex(t.node, kind)+1)
}

// continueOp finishes a non-step operation (inspect, rescue) after its callback.
func (c *Conductor) continueOp(ctx context.Context, t *task, impl any, op string, onDone func()) {
	if r, ok := impl.(driver.Resumer); ok {
		dt := t.driverTask(ctx)
		res, err := r.Continue(ctx, dt, op)
		if op == "inspect" {
			c.NodeRecords().createInspectedPorts(ctx, t, dt.Ports)
		}
		if err != nil {
			c.failAgentOp(ctx, t, op, fmt.Sprintf("Failed to %s node %s: %s", op, t.node.UUID, t.c.errorText(err)))
			return
		}
		if res == driver.Wait {
			t.advance(fsm.EvWait)
			return
		}
	}
	if onDone != nil {
		onDone()
	}
	t.advance(fsm.EvDone)
}

// unhold releases a node from a hold state into its wait state; a node whose
// steps need no agent callback resumes at once.
func (c *Conductor) unhold(ctx context.Context, t *task) error {
	if err := t.fire(fsm.EvUnhold); err != nil {
		return err
	}
	if agentDriven(t.node) {
		if err := t.save(ctx); err != nil {
			return err
		}
		t.release()
		return nil
	}
	return c.resume(ctx, t)
}

// agentDriven says a node's operation is carried by an agent that will
// heartbeat on its own.
func agentDriven(n *model.Node) bool {
	_, ok := n.DriverInternalInfo["agent_url"]
	return ok
}

// waitTimeout is the callback timeout of a wait state and Ironic's message.
func (c *Conductor) waitTimeout(n *model.Node) (time.Duration, string) {
	op := operationIn(n.ProvisionState)
	if op == nil || n.ProvisionState != op.wait {
		return 0, ""
	}
	return op.timeout(&c.cfg), op.timeoutText(n)
}

// CheckTimeouts fails every unlocked node that has waited for a callback
// longer than its timeout (Ironic's _check_*_timeouts periodic tasks). A
// timed-out deploy or rescue powers the node off, as Ironic does.
func (c *Conductor) CheckTimeouts(ctx context.Context) error {
	free := false
	nodes, err := c.store.Nodes().ListNodes(ctx, store.NodeQuery{Reserved: &free,
		ProvisionStates: waitStates()})
	if err != nil {
		return err
	}
	r, err := c.liveRing(ctx)
	if err != nil {
		return err
	}
	nodes = c.owned(r, nodes)
	now := c.now()
	for _, n := range nodes {
		if d, _ := c.waitTimeout(n); d <= 0 || now.Sub(n.ProvisionUpdatedAt) <= d {
			continue
		}
		t, err := c.acquire(ctx, n.UUID, "")
		if err != nil {
			continue // taken by someone else meanwhile: look again next time
		}
		c.timeOut(ctx, t, now)
	}
	return nil
}

func (c *Conductor) timeOut(ctx context.Context, t *task, now time.Time) {
	defer t.finish()
	n := t.node
	d, msg := c.waitTimeout(n)
	if d <= 0 || now.Sub(n.ProvisionUpdatedAt) <= d {
		return
	}
	op := operationIn(n.ProvisionState)
	poweredOff := false
	if op.timeoutFailsStep {
		c.failStep(ctx, t, op.steps, msg)
	} else {
		t.failWith(msg)
		poweredOff = c.tearDownAgent(ctx, t, op.name, false)
	}
	// A timed-out deploy or rescue is powered off here unless its interface
	// did so as it tore its ramdisk down.
	if op.timeoutPowerOff && !poweredOff && t.drv.Power != nil && !n.DisablePowerOff {
		if err := t.drv.Power.SetPowerState(ctx, t.driverTask(ctx), fsm.PowerOff); err != nil {
			n.LastError += fmt.Sprintf(". Also failed to power off the node: %s", t.c.errorText(err))
		} else {
			n.PowerState = fsm.PowerOff
		}
	}
}

// checkLimit answers 503 when starting one more deploy or clean would exceed
// the configured cap.
func (c *Conductor) checkLimit(ctx context.Context, event string) error {
	op := operationStartedBy(event)
	if op == nil || op.limit == nil {
		return nil
	}
	limit := op.limit(&c.cfg)
	n, err := c.store.Nodes().CountNodes(ctx, store.NodeQuery{ProvisionStates: []string{op.running, op.wait}})
	if err != nil {
		return err
	}
	if n >= limit {
		return fault.New(fault.Unavailable, "The number of concurrent %s operations has reached the limit of %d (max_concurrent_%s); please retry later.", op.limitName, limit, op.limitName)
	}
	return nil
}
