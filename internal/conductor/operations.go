package conductor

import (
	"context"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// operation is an operation that parks a node in a wait state for its
// agent's callback (and, for steps, in a hold state for the operator):
// everything that depends on which operation it is, stated once. The
// conductor looks it up by state (operationIn) or by the verb that starts
// it (operationStartedBy).
type operation struct {
	// name is the operation as tearDownAgent and agentImpl know it: a step
	// kind, opInspect or opRescue.
	name string
	// steps is the step kind of an operation run as steps, "" otherwise.
	steps driver.StepKind
	// running, wait and hold are its states ("" when it has no hold).
	running, wait, hold string

	// timeout is its callback timeout (Ironic's [conductor]*_callback_timeout
	// or inspect_wait_timeout); timeoutText is Ironic's last_error.
	timeout     func(*Config) time.Duration
	timeoutText func(*model.Node) string
	// timeoutFailsStep: a timeout fails the step that waited (clean and
	// service: the step's fault and history), else the operation.
	timeoutFailsStep bool
	// timeoutPowerOff: a timed-out node is powered off, unless tearing its
	// ramdisk down did so (Ironic's deploy and rescue timeouts).
	timeoutPowerOff bool

	// abortText is Ironic's last_error after an abort; abortMinor the
	// microversion an abort from its wait state needs (0: any).
	abortText  func(*model.Node) string
	abortMinor int

	// limit caps how many nodes run it at once, counted in running and
	// wait, when one of startedBy starts it (0: no cap); limitName is the
	// cap's name in Ironic's message (max_concurrent_<limitName>).
	limit     func(*Config) int
	limitName string
	startedBy []string

	// resume continues it on a worker after its callback.
	resume func(c *Conductor, ctx context.Context, t *task)
}

// operations are the five operations with a wait state.
var operations = []*operation{
	{
		name: string(driver.DeploySteps), steps: driver.DeploySteps,
		running: fsm.Deploying, wait: fsm.DeployWait, hold: fsm.DeployHold,
		timeout: func(c *Config) time.Duration { return c.DeployCallbackTimeout },
		timeoutText: func(n *model.Node) string {
			return fmt.Sprintf("Timeout reached while waiting for callback for node %s", n.UUID)
		},
		timeoutPowerOff: true,
		abortText:       func(n *model.Node) string { return fmt.Sprintf("Deploy operation aborted for node %s.", n.UUID) },
		abortMinor:      110,
		limit:           func(c *Config) int { return c.MaxConcurrentDeploy }, limitName: "deploy",
		startedBy: []string{fsm.EvDeploy, fsm.EvRebuild},
		resume:    func(c *Conductor, ctx context.Context, t *task) { c.continueSteps(ctx, t, driver.DeploySteps) },
	},
	{
		name: string(driver.CleanSteps), steps: driver.CleanSteps,
		running: fsm.Cleaning, wait: fsm.CleanWait, hold: fsm.CleanHold,
		timeout: func(c *Config) time.Duration { return c.CleanCallbackTimeout },
		timeoutText: func(n *model.Node) string {
			return fmt.Sprintf("Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node. Failed on step %s.", pyRepr(n.CleanStep))
		},
		timeoutFailsStep: true,
		abortText: func(n *model.Node) string {
			return fmt.Sprintf("Clean operation aborted for node %s on step %s.", n.UUID, stepName(n.CleanStep))
		},
		limit: func(c *Config) int { return c.MaxConcurrentClean }, limitName: "clean",
		startedBy: []string{fsm.EvProvide, fsm.EvClean},
		resume:    func(c *Conductor, ctx context.Context, t *task) { c.continueSteps(ctx, t, driver.CleanSteps) },
	},
	{
		name: string(driver.ServiceSteps), steps: driver.ServiceSteps,
		running: fsm.Servicing, wait: fsm.ServiceWait, hold: fsm.ServiceHold,
		timeout: func(c *Config) time.Duration { return c.ServiceCallbackTimeout },
		timeoutText: func(n *model.Node) string {
			return fmt.Sprintf("Timeout reached while servicing the node. Please check if the ramdisk responsible for the servicing is running on the node. Failed on step %s.", pyRepr(n.ServiceStep))
		},
		timeoutFailsStep: true,
		abortText:        func(n *model.Node) string { return fmt.Sprintf("Service operation aborted for node %s.", n.UUID) },
		resume:           func(c *Conductor, ctx context.Context, t *task) { c.continueSteps(ctx, t, driver.ServiceSteps) },
	},
	{
		name:    opInspect,
		running: fsm.Inspecting, wait: fsm.InspectWait,
		timeout: func(c *Config) time.Duration { return c.InspectWaitTimeout },
		timeoutText: func(*model.Node) string {
			return "Timeout reached while inspecting the node. Please check if the ramdisk responsible for the inspection is running on the node."
		},
		abortText:  func(*model.Node) string { return "Inspection was aborted by request." },
		abortMinor: 41,
		resume: func(c *Conductor, ctx context.Context, t *task) {
			c.continueOp(ctx, t, t.drv.Inspect, opInspect, func() { t.node.InspectionFinishedAt = c.now().UTC() })
		},
	},
	{
		name:    opRescue,
		running: fsm.Rescuing, wait: fsm.RescueWait,
		timeout: func(c *Config) time.Duration { return c.RescueCallbackTimeout },
		timeoutText: func(n *model.Node) string {
			return fmt.Sprintf("Timeout reached while waiting for rescue ramdisk callback for node %s", n.UUID)
		},
		timeoutPowerOff: true,
		abortText:       func(n *model.Node) string { return fmt.Sprintf("Rescue operation aborted for node %s.", n.UUID) },
		resume:          func(c *Conductor, ctx context.Context, t *task) { c.continueOp(ctx, t, t.drv.Rescue, opRescue, nil) },
	},
}

// operationIn is the operation whose wait or hold state state is, or nil.
func operationIn(state string) *operation {
	for _, op := range operations {
		if state == op.wait || (op.hold != "" && state == op.hold) {
			return op
		}
	}
	return nil
}

// operationStartedBy is the capped operation event starts, or nil.
func operationStartedBy(event string) *operation {
	for _, op := range operations {
		for _, e := range op.startedBy {
			if e == event {
				return op
			}
		}
	}
	return nil
}

// waitStates are the states a node waits for a callback in.
func waitStates() []string {
	s := make([]string, len(operations))
	for i, op := range operations {
		s[i] = op.wait
	}
	return s
}
