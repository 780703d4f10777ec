package direct

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// CustomAgentName is the "custom-agent" deploy interface's name (Ironic's
// CustomAgentDeploy).
const CustomAgentName = "custom-agent"

// The out-of-band deploy steps of the custom-agent interface, with
// Ironic's priorities: deploy boots the agent (100); the user's in-band
// steps come in between; prepare_instance_boot (60), tear_down_agent (40)
// and boot_instance (20) end the deploy.
const (
	stepDeploy              = "deploy"
	stepPrepareInstanceBoot = "prepare_instance_boot"
	stepTearDownAgent       = "tear_down_agent"
	stepBootInstance        = "boot_instance"
)

// CustomAgent is the "custom-agent" deploy interface: the agent boots and
// runs only the deploy steps the user's deploy_steps and deploy templates
// name (the agent's in-band steps, deploy.execute_deploy_step); no image
// is written unless a named step writes one. The node then boots what its
// boot interface prepares for the instance. Cleaning, tear down and the
// agent's clean steps are the direct interface's.
type CustomAgent struct{ *Direct }

// CustomAgent returns the "custom-agent" deploy interface sharing d's
// agent client.
func (d *Direct) CustomAgent() *CustomAgent { return &CustomAgent{d} }

// Validate checks, as Ironic's CustomAgentDeploy.validate, that the boot
// interface can boot the agent and that the root device hints are valid;
// instance_info needs no image.
func (c *CustomAgent) Validate(t *driver.Task) error {
	if err := c.validateBoot(t, false); err != nil {
		return err
	}
	_, err := rootDeviceHints(t.Node)
	return err
}

func oobStep(name string, prio int) driver.Step {
	return driver.Step{Interface: "deploy", Step: name, Priority: prio}
}

// keyCachedDeploySteps is where the agent's deploy steps are kept once
// fetched.
const keyCachedDeploySteps = ipa.KeyCachedDeploySteps

// agentDeploySteps are the in-band deploy steps of the node's agent: those
// it listed (deploy.get_deploy_steps, cached when the agent first
// heartbeats in a deploy) for the deploy interface, else the steps
// Anvil's agent offers (ipa.DeploySteps).
func agentDeploySteps(n *model.Node) []driver.Step {
	var out []driver.Step
	if byIface, ok := n.DriverInternalInfo[keyCachedDeploySteps].(map[string]any); ok {
		list, _ := byIface["deploy"].([]any)
		for _, v := range list {
			m, _ := v.(map[string]any)
			name, _ := m["step"].(string)
			if name == "" {
				continue
			}
			prio, _ := m["priority"].(float64)
			abortable, _ := m["abortable"].(bool)
			out = append(out, driver.Step{Interface: "deploy", Step: name, Priority: int(prio), Abortable: abortable})
		}
		return out
	}
	for _, s := range ipa.DeploySteps() {
		out = append(out, driver.Step{Interface: s.Interface, Step: s.Step, Priority: s.Priority, Abortable: s.Abortable})
	}
	return out
}

// inBand reports whether the node's agent offers the deploy step name.
func inBand(n *model.Node, name string) bool {
	for _, s := range agentDeploySteps(n) {
		if s.Step == name {
			return true
		}
	}
	return false
}

// LearnsSteps says the interface learns its in-band deploy steps from the
// agent (driver.StepLearner): a user's deploy step it does not list yet is
// planned, and checked against the agent's list once the agent runs.
func (c *CustomAgent) LearnsSteps(kind driver.StepKind) bool { return kind == driver.DeploySteps }

// cacheAgentSteps asks the running agent for its deploy steps
// (deploy.get_deploy_steps) and keeps them by interface, as Ironic's
// refresh_steps does. done is false while the command runs.
func (c *CustomAgent) cacheAgentSteps(ctx context.Context, t *driver.Task) (done bool, err error) {
	n := t.Node
	res, done, err := runCommand(ctx, c.cfg.Client, n, ipa.CmdGetDeploySteps, map[string]any{"node": AgentNode(n), "ports": agentPorts(t.Ports)})
	if err != nil || !done {
		return false, err
	}
	byIface := map[string]any{}
	managers, _ := res.Result["deploy_steps"].(map[string]any)
	for _, list := range managers {
		steps, _ := list.([]any)
		for _, v := range steps {
			m, _ := v.(map[string]any)
			iface, _ := m["interface"].(string)
			if iface == "" {
				continue
			}
			prev, _ := byIface[iface].([]any)
			byIface[iface] = append(prev, m)
		}
	}
	n.DriverInternalInfo[keyCachedDeploySteps] = byIface
	return true, nil
}

// Steps offers the out-of-band deploy steps and the agent's deploy steps
// (ipa.DeploySteps, priority 0: they run only when named), and the
// agent's clean and service steps.
func (c *CustomAgent) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface != "deploy" || kind != driver.DeploySteps {
		return c.Direct.Steps(n, iface, kind)
	}
	out := []driver.Step{oobStep(stepDeploy, 100), oobStep(stepPrepareInstanceBoot, 60),
		oobStep(stepTearDownAgent, 40), oobStep(stepBootInstance, 20)}
	for _, s := range agentDeploySteps(n) {
		if s.Step != stepDeploy && s.Step != stepPrepareInstanceBoot && s.Step != stepTearDownAgent && s.Step != stepBootInstance {
			s.Priority = 0 // in-band steps run only when named, as Ironic's custom agent plans them
			out = append(out, s)
		}
	}
	return out
}

// ExecuteStep runs one deploy step: deploy boots the agent and waits for
// it; an in-band step waits for the next heartbeat, which sends it to the
// agent (Continue); the closing steps act at once.
func (c *CustomAgent) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind != driver.DeploySteps {
		return c.Direct.ExecuteStep(ctx, t, kind, s)
	}
	switch s.Step {
	case stepDeploy:
		return c.Deploy(ctx, t)
	case stepPrepareInstanceBoot:
		return driver.Done, c.prepareInstanceBoot(ctx, t)
	case stepTearDownAgent:
		return driver.Done, c.tearDownAgent(ctx, t)
	case stepBootInstance:
		return driver.Done, c.bootInstance(ctx, t)
	}
	if !agentKnown(t.Node) {
		return driver.Done, fmt.Errorf("Deploy step %s has not been found. Available out-of-band steps: %s. Agent is not running.",
			s.Step, strings.Join([]string{stepDeploy, stepPrepareInstanceBoot, stepTearDownAgent, stepBootInstance}, ", "))
	}
	if !inBand(t.Node, s.Step) {
		var names []string
		for _, a := range agentDeploySteps(t.Node) {
			names = append(names, a.Step)
		}
		return driver.Done, fmt.Errorf("Deploy step %s has not been found: the agent offers %s", s.Step, strings.Join(names, ", "))
	}
	return driver.Wait, nil
}

// Deploy boots the node into the agent (its config drive, if any, built
// and kept for steps that write one) and waits for its heartbeat.
func (c *CustomAgent) Deploy(ctx context.Context, t *driver.Task) (driver.Result, error) {
	if err := storeConfigDrive(t.Node); err != nil {
		return driver.Done, err
	}
	return driver.Wait, c.bootAgent(ctx, t, driver.RamdiskDeploy)
}

// Continue runs on each heartbeat: in deploy, the agent's first heartbeat
// ends the deploy step; an in-band step is started on the agent
// (deploy.execute_deploy_step) and polled until it ends.
func (c *CustomAgent) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	if op != string(driver.DeploySteps) {
		return c.Direct.Continue(ctx, t, op)
	}
	n := t.Node
	if !agentKnown(n) {
		return driver.Wait, nil
	}
	name, _ := n.DeployStep["step"].(string)
	if name == stepDeploy { // the agent is up: learn its deploy steps
		done, err := c.cacheAgentSteps(ctx, t)
		if err != nil || !done {
			return notDone(err)
		}
		return driver.Done, nil
	}
	if !inBand(n, name) {
		return driver.Done, fmt.Errorf("the agent has no deploy step %q", name)
	}
	step := map[string]any{}
	for k, v := range n.DeployStep {
		step[k] = v
	}
	params := map[string]any{"step": step, "node": AgentNode(n), "ports": agentPorts(t.Ports), "deploy_version": nil}
	res, done, err := runCommand(ctx, c.cfg.Client, n, ipa.CmdExecuteDeployStep, params)
	if err != nil && errors.Is(err, errCommandFailed) && c.cfg.collects(true) {
		err = fmt.Errorf("%w (%s)", err, c.saveLogs(ctx, n, op))
	}
	if err != nil || !done {
		return notDone(err)
	}
	if name == ipa.StepWriteImage {
		if w, ok := res.Result["bytes_written"].(float64); ok {
			n.DriverInternalInfo[keyProgress] = int64(w)
		}
	}
	return driver.Done, nil
}

// prepareInstanceBoot is Ironic's prepare_instance_boot of the custom
// agent: the boot interface prepares the instance (boot from disk).
func (c *CustomAgent) prepareInstanceBoot(ctx context.Context, t *driver.Task) error {
	drv, err := t.Composed()
	if err != nil {
		return err
	}
	if drv.Boot == nil {
		return nil
	}
	if err := drv.Boot.PrepareInstance(ctx, t); err != nil {
		return fmt.Errorf("Failed to prepare instance for booting: %w", err)
	}
	return nil
}

// tearDownAgent powers the node off (not one with disable_power_off) and
// forgets the agent.
func (c *CustomAgent) tearDownAgent(ctx context.Context, t *driver.Task) error {
	forgetAgent(t.Node)
	if t.Node.DisablePowerOff {
		return nil
	}
	drv, err := t.Composed()
	if err != nil || drv.Power == nil {
		return err
	}
	if err := drv.Power.SetPowerState(ctx, t, fsm.PowerOff); err != nil {
		return fmt.Errorf("Error rebooting node %s after deploy. %w", t.Node.UUID, err)
	}
	t.Node.PowerState = fsm.PowerOff
	return nil
}

// bootInstance powers the node on into its instance (a node with
// disable_power_off, never powered off, is rebooted).
func (c *CustomAgent) bootInstance(ctx context.Context, t *driver.Task) error {
	drv, err := t.Composed()
	if err != nil || drv.Power == nil {
		return err
	}
	target := fsm.PowerOn
	if t.Node.DisablePowerOff {
		target = fsm.Rebooting
	}
	if err := drv.Power.SetPowerState(ctx, t, target); err != nil {
		return fmt.Errorf("booting the instance: %w", err)
	}
	t.Node.PowerState = fsm.PowerOn
	return nil
}
