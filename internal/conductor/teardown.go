package conductor

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// Operations whose failure or abort tears the agent ramdisk down: the step
// kinds (driver.CleanSteps, DeploySteps, ServiceSteps) and these two.
const (
	opInspect = "inspect"
	opRescue  = "rescue"
)

// tearDownAgent undoes the agent boot of op (clean, deploy, service,
// inspect or rescue) after it failed, timed out or, when aborted, was
// aborted: the operation's interface, if it is a driver.RamdiskCleaner,
// forgets the agent, withdraws the ramdisk and powers the node off where
// Ironic does:
//
//   - clean: tear_down_cleaning powers off, except after a failed step
//     (fault "clean failure": the node stays on, in maintenance, for the
//     operator to look at); an abort powers off;
//   - deploy, and service (the node holds an instance; Anvil does not
//     reboot it into the instance): the ramdisk is withdrawn and the power
//     left alone, as Ironic's deploy clean_up;
//   - rescue: a failure powers off (rescuing_error_handler), an abort does
//     not (_do_node_rescue_abort);
//   - inspect: powered off, failed or aborted (inspection's power_off).
//
// A failed tear down is added to last_error and history. It reports
// whether the interface tore the ramdisk down with the node to be powered
// off.
func (c *Conductor) tearDownAgent(ctx context.Context, t *task, op string, aborted bool) bool {
	n := t.node
	powerOff := true
	switch op {
	case opRescue:
		powerOff = !aborted
	case string(driver.DeploySteps), string(driver.ServiceSteps):
		powerOff = false
	case string(driver.CleanSteps):
		powerOff = n.Fault != "clean failure"
	}
	rc, ok := t.agentImpl(op).(driver.RamdiskCleaner)
	if !ok {
		return false
	}
	if err := rc.CleanUpRamdisk(ctx, t.driverTask(ctx), powerOff); err != nil {
		c.log.Error("tearing down the agent ramdisk failed", "node", n.UUID, "op", op, "err", err)
		n.LastError = fmt.Sprintf("%s. Also failed to tear down the agent ramdisk: %s", n.LastError, t.c.errorText(err))
		t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: "error", Event: n.LastError})
	}
	return powerOff
}

// failAgentOp fails op (inspect or rescue) with msg and tears its agent
// ramdisk down.
func (c *Conductor) failAgentOp(ctx context.Context, t *task, op, msg string) {
	t.failWith(msg)
	c.tearDownAgent(ctx, t, op, false)
}

// failStep fails a step of kind with msg (stepFailed) and tears the agent
// ramdisk down.
func (c *Conductor) failStep(ctx context.Context, t *task, kind driver.StepKind, msg string) {
	t.stepFailed(kind, msg)
	c.tearDownAgent(ctx, t, string(kind), false)
}

// agentImpl is the interface that booted op's agent ramdisk: the inspect or
// rescue interface, the deploy interface for steps (tear_down_cleaning and
// clean_up are the deploy interface's in Ironic).
func (t *task) agentImpl(op string) any {
	switch op {
	case opInspect:
		return t.drv.Inspect
	case opRescue:
		return t.drv.Rescue
	}
	return t.drv.Deploy
}
