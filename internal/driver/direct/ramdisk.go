package direct

import (
	"context"
	"errors"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// RamdiskName is the "ramdisk" deploy interface's name (Ironic's
// RamdiskDeploy).
const RamdiskName = driver.DeployRamdisk

// Ramdisk is the "ramdisk" deploy interface: the deploy boots the
// instance's own kernel and ramdisk, or its ISO, through the boot
// interface (driver.RamdiskBooter) and leaves it running; nothing is
// written to a disk and no agent runs for it. Cleaning, tear down and the
// agent's clean steps are the direct interface's: a ramdisk deploy is
// cleaned by the agent as any other.
type Ramdisk struct{ *Direct }

// Ramdisk returns the "ramdisk" deploy interface sharing d's agent client.
func (d *Direct) Ramdisk() *Ramdisk { return &Ramdisk{d} }

// Validate is Ironic's RamdiskDeploy.validate: the boot interface must
// boot an instance ramdisk (Ironic's ramdisk_boot capability,
// driver.RamdiskBooter), and its validation (ValidateRamdiskBoot: what
// instance_info boots, and the agent's ramdisk unless the node's
// automated_clean is off, as cleaning still boots the agent) must pass.
func (r *Ramdisk) Validate(t *driver.Task) error {
	drv, err := t.Composed()
	if err != nil {
		return err
	}
	rb, ok := drv.Boot.(driver.RamdiskBooter)
	if !ok {
		return errors.New(driver.ErrNoRamdiskBoot)
	}
	return rb.ValidateRamdiskBoot(t.Node)
}

// Steps offers the deploy step "deploy" (priority 100, Ironic's) and the
// agent's clean and service steps.
func (r *Ramdisk) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface == "deploy" && kind == driver.DeploySteps {
		return []driver.Step{{Interface: "deploy", Step: "deploy", Priority: 100}}
	}
	return r.Direct.Steps(n, iface, kind)
}

// ExecuteStep runs the deploy step (Deploy) or an agent's clean or
// service step.
func (r *Ramdisk) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind == driver.DeploySteps {
		if s.Step != "deploy" {
			return driver.Done, fmt.Errorf("unknown step %s", s.Step)
		}
		return r.Deploy(ctx, t)
	}
	return r.Direct.ExecuteStep(ctx, t, kind, s)
}

// Deploy is Ironic's RamdiskDeploy.deploy: power off, the boot interface
// prepares the instance's ramdisk or ISO, power on; the deploy is then
// done. A config drive is ignored, as Ironic's boot interfaces without
// ramdisk_boot_configdrive ignore it.
func (r *Ramdisk) Deploy(ctx context.Context, t *driver.Task) (driver.Result, error) {
	n := t.Node
	drv, err := t.Composed()
	if err != nil {
		return driver.Done, err
	}
	rb, ok := drv.Boot.(driver.RamdiskBooter)
	if !ok {
		return driver.Done, errors.New(driver.ErrNoRamdiskBoot)
	}
	forgetAgent(n)
	if drv.Power == nil {
		return driver.Done, errors.New("the node has no power interface")
	}
	if err := drv.Power.SetPowerState(ctx, t, fsm.PowerOff); err != nil {
		return driver.Done, fmt.Errorf("powering off: %w", err)
	}
	n.PowerState = fsm.PowerOff
	if err := rb.PrepareRamdiskBoot(ctx, t); err != nil {
		return driver.Done, err
	}
	if err := drv.Power.SetPowerState(ctx, t, fsm.PowerOn); err != nil {
		return driver.Done, fmt.Errorf("booting the instance: %w", err)
	}
	n.PowerState = fsm.PowerOn
	return driver.Done, nil
}

// Continue serves the agent's clean and service steps; a ramdisk deploy
// never waits for an agent.
func (r *Ramdisk) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	if op == string(driver.DeploySteps) {
		return driver.Done, errors.New("the ramdisk deploy interface does not wait for an agent")
	}
	return r.Direct.Continue(ctx, t, op)
}
