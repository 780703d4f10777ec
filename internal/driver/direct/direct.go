// Package direct is the conductor side of the deploy agent: the "direct"
// deploy interface, which boots a node into the agent (the node's boot
// interface prepares the ramdisk, then power on), waits for the agent's
// heartbeat, has the agent stream the image to the disk and verify it, then
// boots the node from disk (the boot interface prepares the instance). The same
// interface runs the agent's clean steps (erase_devices_metadata with
// priority 99 in automated cleaning, erase_devices on demand).
//
// Every command to the agent is polled on the node's heartbeats: Continue
// answers driver.Wait until the agent reports the command done, so no
// goroutine waits on a machine.
package direct

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/anvil-metal/anvil/internal/agent/agentapi"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Name is the deploy interface's name.
const Name = "direct"

// driver_internal_info keys of the running command and its progress.
const (
	keyCommandID   = "agent_command_id"
	keyCommandName = "agent_command_name"
	keyProgress    = "agent_bytes_written"
)

// Config configures the direct deploy interface.
type Config struct {
	// Drivers composes a node's power and management interfaces.
	Drivers *driver.Registry
	Client  *Client
	// AllowMD5 accepts md5 image checksums (Ironic's [agent]allow_md5_checksum).
	AllowMD5 bool
}

// Direct is the direct deploy interface.
type Direct struct {
	cfg Config
}

// New returns the interface.
func New(cfg Config) *Direct {
	if cfg.Client == nil {
		cfg.Client = NewClient()
	}
	return &Direct{cfg: cfg}
}

var hexRE = regexp.MustCompile(`^[0-9a-fA-F]+$`)

// Validate checks the node's boot interface can boot the agent (as Ironic's
// agent deploy validates the boot interface) and that instance_info names an
// image and a usable checksum.
func (d *Direct) Validate(n *model.Node) error {
	if err := d.validateBoot(n, false); err != nil {
		return err
	}
	if _, err := imageParams(n, d.cfg.AllowMD5); err != nil {
		return err
	}
	return nil
}

// ValidatePorts runs the boot interface's port checks (a network boot
// needs a port), as Ironic's agent deploy validates its boot interface.
func (d *Direct) ValidatePorts(t *driver.Task) error {
	drv, err := d.cfg.Drivers.For(t.Node)
	if err != nil {
		return err
	}
	if pv, ok := drv.Boot.(driver.PortValidator); ok {
		return pv.ValidatePorts(t)
	}
	return nil
}

// validateBoot validates the node's boot interface; for rescue, as Ironic's
// agent rescue, its rescue checks instead when it has them (RescueValidator).
func (d *Direct) validateBoot(n *model.Node, rescue bool) error {
	drv, err := d.cfg.Drivers.For(n)
	if err != nil {
		return err
	}
	if drv.Boot == nil {
		return errors.New("the node has no boot interface")
	}
	if rv, ok := drv.Boot.(driver.RescueValidator); ok && rescue {
		return rv.ValidateRescue(n)
	}
	return drv.Boot.Validate(n)
}

// imageParams turns instance_info into write_image's parameters.
func imageParams(n *model.Node, allowMD5 bool) (map[string]any, error) {
	src, _ := n.InstanceInfo["image_source"].(string)
	if src == "" {
		return nil, errors.New("instance_info.image_source is required (an http(s) URL or a local file path)")
	}
	algo, _ := n.InstanceInfo["image_os_hash_algo"].(string)
	sum, _ := n.InstanceInfo["image_os_hash_value"].(string)
	if sum == "" {
		sum, _ = n.InstanceInfo["image_checksum"].(string)
		algo = ""
	}
	if sum == "" {
		return nil, errors.New("instance_info.image_checksum (or image_os_hash_algo and image_os_hash_value) is required")
	}
	if !hexRE.MatchString(sum) {
		return nil, fmt.Errorf("image checksum %q is not hexadecimal", sum)
	}
	if algo == "" {
		switch len(sum) {
		case 64:
			algo = "sha256"
		case 128:
			algo = "sha512"
		case 32:
			algo = "md5"
		default:
			return nil, fmt.Errorf("image checksum of %d hex digits matches no supported algorithm (sha256, sha512)", len(sum))
		}
	}
	algo = strings.ToLower(algo)
	switch {
	case algo == "md5" && !allowMD5:
		return nil, errors.New("md5 image checksums are not allowed; use sha256 or sha512")
	case algo != "sha256" && algo != "sha512" && algo != "md5":
		return nil, fmt.Errorf("unsupported image hash algorithm %q", algo)
	}
	p, err := deployParams(n)
	if err != nil {
		return nil, err
	}
	p[agentapi.ParamImageSource], p[agentapi.ParamChecksum], p[agentapi.ParamChecksumAlgo] = src, sum, algo
	return p, nil
}

var steps = map[driver.StepKind][]driver.Step{
	driver.DeploySteps: {{Interface: "deploy", Step: "deploy", Priority: 100}},
	driver.CleanSteps: {
		{Interface: "deploy", Step: agentapi.CmdEraseDevicesMetadata, Priority: 99, Abortable: true},
		{Interface: "deploy", Step: agentapi.CmdEraseDevices, Priority: 0, Abortable: true},
	},
	driver.ServiceSteps: {{Interface: "deploy", Step: agentapi.CmdEraseDevicesMetadata}},
}

// Steps lists the deploy, clean and service steps the agent runs.
func (d *Direct) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface != "deploy" {
		return nil
	}
	return append([]driver.Step(nil), steps[kind]...)
}

// ExecuteStep starts a step: every step boots the node into the agent and
// waits for its heartbeat.
func (d *Direct) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind == driver.DeploySteps && s.Step == "deploy" {
		return d.Deploy(ctx, t)
	}
	switch s.Step {
	case agentapi.CmdEraseDevicesMetadata, agentapi.CmdEraseDevices:
		if agentKnown(t.Node) { // a later step: the agent is already running
			return driver.Wait, nil
		}
		return driver.Wait, d.bootAgent(ctx, t, driver.RamdiskDeploy)
	}
	return driver.Done, fmt.Errorf("unknown step %s", s.Step)
}

// Deploy boots the node into the agent; the image is written once the
// agent heartbeats (Continue).
func (d *Direct) Deploy(ctx context.Context, t *driver.Task) (driver.Result, error) {
	if err := storeConfigDrive(t.Node); err != nil {
		return driver.Done, err
	}
	if _, err := imageParams(t.Node, d.cfg.AllowMD5); err != nil {
		return driver.Done, err
	}
	return driver.Wait, d.bootAgent(ctx, t, driver.RamdiskDeploy)
}

// bootAgent forgets any previous agent (its token and URL: a new agent boots
// and must look itself up again), has the boot interface prepare the
// ramdisk of mode and powers on.
func (d *Direct) bootAgent(ctx context.Context, t *driver.Task, mode string) error {
	forgetAgent(t.Node)
	t.Node.DriverInternalInfo[agentapi.KeyTokenRequired] = true
	drv, err := d.cfg.Drivers.For(t.Node)
	if err != nil {
		return err
	}
	if drv.Boot == nil {
		return errors.New("the node has no boot interface")
	}
	if err := drv.Boot.PrepareRamdisk(ctx, t, mode); err != nil {
		return err
	}
	if drv.Power == nil {
		return errors.New("the node has no power interface")
	}
	target := fsm.PowerOn
	if st, err := drv.Power.PowerState(ctx, t); err == nil && st == fsm.PowerOn {
		target = fsm.Rebooting
	}
	if err := drv.Power.SetPowerState(ctx, t, target); err != nil {
		return fmt.Errorf("booting the agent (%s): %w", target, err)
	}
	t.Node.PowerState = fsm.PowerOn
	return nil
}

func agentKnown(n *model.Node) bool {
	url, _ := n.DriverInternalInfo[agentapi.KeyURL].(string)
	key, _ := n.DriverInternalInfo[agentapi.KeyCommandKey].(string)
	return url != "" && key != ""
}

// forgetAgent clears the agent's token, URL and command bookkeeping.
func forgetAgent(n *model.Node) {
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSON{}
	}
	for _, k := range []string{agentapi.KeyTokenHash, agentapi.KeyCommandKey, agentapi.KeyTokenRequired,
		agentapi.KeyURL, agentapi.KeyVersion, keyCommandID, keyCommandName} {
		delete(n.DriverInternalInfo, k)
	}
}

// Continue runs on each heartbeat of the agent: it starts the operation's
// command, or polls it, and finishes the operation when it is done.
func (d *Direct) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	n := t.Node
	if !agentKnown(n) {
		return driver.Wait, nil // not heard from the agent yet
	}
	name, params, err := d.command(n, op)
	if err != nil {
		return driver.Done, err
	}
	if _, done, err := runCommand(ctx, d.cfg.Client, n, name, params); err != nil || !done {
		if err != nil {
			return driver.Done, err
		}
		return driver.Wait, nil
	}
	if name == agentapi.CmdWriteImage {
		return driver.Done, d.bootFromDisk(ctx, t)
	}
	return driver.Done, nil
}

// runCommand starts the command name on the node's agent, or polls the one
// started on an earlier heartbeat; done reports it finished successfully
// (with its result). The agent must be known (agentKnown).
func runCommand(ctx context.Context, c *Client, n *model.Node, name string, params map[string]any) (res agentapi.CommandResult, done bool, err error) {
	info := n.DriverInternalInfo
	url, _ := info[agentapi.KeyURL].(string)
	key, _ := info[agentapi.KeyCommandKey].(string)
	id, _ := info[keyCommandID].(string)
	if id == "" || info[keyCommandName] != name {
		res, err := c.Start(ctx, url, key, name, params)
		if err != nil {
			return res, false, fmt.Errorf("starting %s on the agent: %w", name, err)
		}
		info[keyCommandID], info[keyCommandName] = res.ID, name
		info[keyProgress] = 0
		return res, false, nil
	}
	res, err = c.Status(ctx, url, key, id)
	if err != nil {
		delete(info, keyCommandID)
		return res, false, fmt.Errorf("polling %s on the agent: %w", name, err)
	}
	info[keyProgress] = res.Written
	switch res.Status {
	case agentapi.StatusRunning:
		return res, false, nil
	case agentapi.StatusFailed:
		delete(info, keyCommandID)
		delete(info, keyCommandName)
		return res, false, fmt.Errorf("agent command %s failed: %s", name, res.Error)
	}
	delete(info, keyCommandID)
	delete(info, keyCommandName)
	return res, true, nil
}

// command is the agent command an operation runs.
func (d *Direct) command(n *model.Node, op string) (string, map[string]any, error) {
	switch op {
	case string(driver.DeploySteps):
		p, err := imageParams(n, d.cfg.AllowMD5)
		return agentapi.CmdWriteImage, p, err
	case string(driver.CleanSteps), string(driver.ServiceSteps):
		cur := n.CleanStep
		if op == string(driver.ServiceSteps) {
			cur = n.ServiceStep
		}
		name, _ := cur["step"].(string)
		if name != agentapi.CmdEraseDevicesMetadata && name != agentapi.CmdEraseDevices {
			return "", nil, fmt.Errorf("the agent has no step %q", name)
		}
		return name, map[string]any{}, nil
	}
	return "", nil, fmt.Errorf("the direct deploy interface cannot %s", op)
}

// bootFromDisk has the boot interface prepare the instance (boot device
// disk) and reboots into it; the agent is gone afterwards, so its token is
// forgotten.
func (d *Direct) bootFromDisk(ctx context.Context, t *driver.Task) error {
	drv, err := d.cfg.Drivers.For(t.Node)
	if err != nil {
		return err
	}
	if drv.Boot != nil {
		if err := drv.Boot.PrepareInstance(ctx, t); err != nil {
			return err
		}
	}
	if drv.Power != nil {
		if err := drv.Power.SetPowerState(ctx, t, fsm.Rebooting); err != nil {
			return fmt.Errorf("rebooting into the instance: %w", err)
		}
		t.Node.PowerState = fsm.PowerOn
	}
	forgetAgent(t.Node)
	return nil
}

// FinishCleaning ends cleaning as Ironic's tear_down_cleaning does: the node
// is powered off, the cleaning agent forgotten and its ramdisk withdrawn. A
// node with disable_power_off (1.95) is not powered off but rebooted once
// the ramdisk is withdrawn.
func (d *Direct) FinishCleaning(ctx context.Context, t *driver.Task) error {
	if err := d.powerOff(ctx, t, "", driver.Boot.CleanUpRamdisk); err != nil {
		return err
	}
	if !t.Node.DisablePowerOff {
		return nil
	}
	drv, err := d.cfg.Drivers.For(t.Node)
	if err != nil || drv.Power == nil {
		return err
	}
	if err := drv.Power.SetPowerState(ctx, t, fsm.Rebooting); err != nil {
		return fmt.Errorf("rebooting after cleaning: %w", err)
	}
	t.Node.PowerState = fsm.PowerOn
	return nil
}

// TearDown powers the node off (unless disable_power_off), forgets the
// agent and has the boot interface withdraw the instance's boot files.
func (d *Direct) TearDown(ctx context.Context, t *driver.Task) error {
	return d.powerOff(ctx, t, "", driver.Boot.CleanUpInstance)
}

// powerOff forgets the agent, powers the node off (not one with
// disable_power_off, as Ironic) and runs cleanUp on its boot interface;
// what names the operation in the power error ("" for none).
func (d *Direct) powerOff(ctx context.Context, t *driver.Task, what string, cleanUp func(driver.Boot, context.Context, *driver.Task) error) error {
	forgetAgent(t.Node)
	delete(t.Node.DriverInternalInfo, keyProgress)
	drv, err := d.cfg.Drivers.For(t.Node)
	if err != nil {
		return err
	}
	if drv.Power != nil && !t.Node.DisablePowerOff {
		if err := drv.Power.SetPowerState(ctx, t, fsm.PowerOff); err != nil {
			return fmt.Errorf("powering off%s: %w", what, err)
		}
		t.Node.PowerState = fsm.PowerOff
	}
	if drv.Boot != nil {
		return cleanUp(drv.Boot, ctx, t)
	}
	return nil
}
