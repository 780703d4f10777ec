package direct

import (
	"context"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/raid"
)

// keyTargetRAIDConfig is where the filtered target configuration travels
// to the agent, in the node's driver_internal_info (Ironic's key).
const keyTargetRAIDConfig = "target_raid_config"

// RAID is the "agent" raid interface (Ironic's AgentRAID): the clean steps
// raid.create_configuration (args create_root_volume,
// create_nonroot_volumes) and raid.delete_configuration run in the agent
// with clean.execute_clean_step, as IPA's hardware managers implement them
// (software RAID). create_configuration first puts the filtered target
// configuration in driver_internal_info["target_raid_config"], which the
// agent reads from the node it is sent; its clean_result becomes the node's
// raid_config (update_raid_info); delete_configuration clears raid_config
// and properties.root_device.
//
// This is the conductor side only: `anvil agent` has no RAID steps, so
// these steps need an IPA ramdisk with RAID support (as in Ironic, where
// AgentRAID needs RAID bits IPA images do not ship by default).
type RAID struct {
	d   *Direct
	now func() time.Time
}

// RAID returns the agent raid interface sharing d's configuration.
func (d *Direct) RAID() *RAID { return &RAID{d: d, now: time.Now} }

var (
	_ driver.RAID    = (*RAID)(nil)
	_ driver.Stepper = (*RAID)(nil)
	_ driver.Resumer = (*RAID)(nil)
)

// Validate checks the target RAID configuration, when there is one.
func (r *RAID) Validate(t *driver.Task) error {
	n := t.Node
	if len(n.TargetRaidConfig) == 0 {
		return nil
	}
	return r.ValidateRAIDConfig(n, n.TargetRaidConfig)
}

// ValidateRAIDConfig is Ironic's schema check.
func (r *RAID) ValidateRAIDConfig(_ *model.Node, cfg model.JSON) error { return raid.Validate(cfg) }

// LogicalDiskProperties are the schema's.
func (r *RAID) LogicalDiskProperties() map[string]string { return raid.LogicalDiskProperties() }

// Steps offers the agent's RAID clean steps (priority 0: manual cleaning,
// Ironic's [deploy]create/delete_configuration_priority defaults).
func (r *RAID) Steps(_ *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if kind != driver.CleanSteps {
		return nil
	}
	return []driver.Step{{Interface: iface, Step: "create_configuration"}, {Interface: iface, Step: "delete_configuration"}}
}

// ExecuteStep prepares the step and boots the agent unless it runs; the
// step runs in the agent on its next heartbeat (Continue).
func (r *RAID) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	n := t.Node
	if kind != driver.CleanSteps {
		return driver.Done, fmt.Errorf("the agent raid interface has no %s steps", kind)
	}
	switch s.Step {
	case "create_configuration":
		root, err := raid.BoolArg(s.Args, "create_root_volume", true)
		if err != nil {
			return driver.Done, err
		}
		nonRoot, err := raid.BoolArg(s.Args, "create_nonroot_volumes", true)
		if err != nil {
			return driver.Done, err
		}
		cfg, err := raid.Filter(n, root, nonRoot)
		if err != nil {
			return driver.Done, err
		}
		if n.DriverInternalInfo == nil {
			n.DriverInternalInfo = model.JSON{}
		}
		n.DriverInternalInfo[keyTargetRAIDConfig] = cfg
	case "delete_configuration":
	default:
		return driver.Done, fmt.Errorf("the agent raid interface has no step %s", s.Step)
	}
	if agentKnown(n) {
		return driver.Wait, nil
	}
	return driver.Wait, r.d.bootAgent(ctx, t, driver.RamdiskDeploy)
}

// Continue runs the current RAID step in the agent and, once it succeeded,
// records its outcome on the node (Ironic's post clean step hooks).
func (r *RAID) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	n := t.Node
	if op != string(driver.CleanSteps) {
		return driver.Done, fmt.Errorf("the agent raid interface cannot %s", op)
	}
	if !agentKnown(n) {
		return driver.Wait, nil
	}
	step := map[string]any{}
	for k, v := range n.CleanStep {
		step[k] = v
	}
	params := map[string]any{"step": step, "node": AgentNode(n), "ports": agentPorts(t.Ports), "clean_version": nil}
	res, done, err := runCommand(ctx, r.d.cfg.Client, n, ipa.CmdExecuteCleanStep, params)
	if err != nil || !done {
		return notDone(err)
	}
	switch step["step"] {
	case "create_configuration":
		result, _ := res.Result["clean_result"].(map[string]any)
		lds, _ := result["logical_disks"].([]any)
		if result == nil {
			return driver.Done, fmt.Errorf("Agent ramdisk didn't return a proper command result while building RAID on %s. It returned '%s' after command execution.",
				n.UUID, pyrepr.Repr(res.Result))
		}
		list := make([]map[string]any, 0, len(lds))
		for _, l := range lds {
			if m, ok := l.(map[string]any); ok {
				list = append(list, m)
			}
		}
		return driver.Done, raid.Apply(n, list, r.now())
	case "delete_configuration":
		delete(n.Properties, "root_device")
		n.RaidConfig = nil
	}
	return driver.Done, nil
}
