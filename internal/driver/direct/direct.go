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
	"github.com/anvil-metal/anvil/internal/oci"
)

// Name is the deploy interface's name.
const Name = "direct"

// driver_internal_info keys of the running command, its progress and the
// deploy's progress through its commands.
const (
	keyCommandID   = "agent_command_id"
	keyCommandName = "agent_command_name"
	keyProgress    = "agent_bytes_written"
	keyDeployPhase = "agent_deploy_phase"
	keyEFIPartUUID = "efi_system_partition_uuid" // from standby.get_partition_uuids, for install_bootloader
)

// Config configures the direct deploy interface.
type Config struct {
	Client *Client
	// AllowMD5 accepts md5 image checksums (Ironic's [agent]allow_md5_checksum).
	AllowMD5 bool
	// LogsDir, when set, receives the agent's system logs
	// (log.collect_system_logs) when one of its commands fails, as Ironic's
	// [agent]deploy_logs_collect=on_failure with deploy_logs_local_path.
	LogsDir string
	// OCI pulls oci:// images' manifests (nil: HTTPS with the system's
	// roots).
	OCI *oci.Client
	// LogsCollect is Ironic's deploy_logs_collect: on_failure (""),
	// always (also when a deploy succeeds) or never.
	LogsCollect string
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

// Validate checks the node's boot interface can boot the agent (as Ironic's
// agent deploy validates the task's boot interface) and that instance_info
// names an image and a usable checksum.
func (d *Direct) Validate(t *driver.Task) error {
	if err := d.validateBoot(t, false); err != nil {
		return err
	}
	if _, err := imageInfo(t.Node, d.cfg.AllowMD5); err != nil {
		return err
	}
	return nil
}

// ValidatePorts runs the boot interface's port checks (a network boot
// needs a port), as Ironic's agent deploy validates its boot interface.
func (d *Direct) ValidatePorts(t *driver.Task) error {
	drv, err := t.Composed()
	if err != nil {
		return err
	}
	if pv, ok := drv.Boot.(driver.PortValidator); ok {
		return pv.ValidatePorts(t)
	}
	return nil
}

// validateBoot validates the task's boot interface; for rescue, as Ironic's
// agent rescue, its rescue checks instead when it has them (RescueValidator).
func (d *Direct) validateBoot(t *driver.Task, rescue bool) error {
	drv, err := t.Composed()
	if err != nil {
		return err
	}
	if drv.Boot == nil {
		return errors.New("the node has no boot interface")
	}
	if rv, ok := drv.Boot.(driver.RescueValidator); ok && rescue {
		return rv.ValidateRescue(t.Node)
	}
	if driver.IsRamdiskDeploy(t.Node) {
		// The boot interface validates a ramdisk deploy's node by what the
		// instance boots; the agent (inspection, cleaning) boots as for
		// any deploy, as Ironic's validate_inspection checks it.
		agent := *t.Node
		agent.Interfaces.Deploy = ""
		at := *t
		at.Node = &agent
		t = &at
	}
	return drv.Boot.Validate(t)
}

// imageInfo turns instance_info into prepare_image's parameters
// (image_info, configdrive), as Ironic's write_image builds them; the
// checksum is decided here, once (ipa.InstanceChecksum), and sent as
// os_hash_algo/os_hash_value, which every IPA reads with its algorithm
// (a bare "checksum" means md5 to older ones).
func imageInfo(n *model.Node, allowMD5 bool) (map[string]any, error) {
	src, _ := n.InstanceInfo["image_source"].(string)
	if src == "" {
		return nil, errors.New("instance_info.image_source is required (an http(s) URL or a local file path)")
	}
	var sum ipa.Checksum
	var err error
	if oci.IsRef(src) {
		// The registry's digests are the checksum, known once the deploy
		// has resolved the reference (resolveOCI); before, only the
		// reference is checked.
		if _, err := oci.ParseRef(src); err != nil {
			return nil, err
		}
		if infoString(n, "oci_image_manifest_url") != "" {
			if sum, err = ipa.InstanceChecksum(n.InstanceInfo, false); err != nil {
				return nil, err
			}
		}
	} else if sum, err = ipa.InstanceChecksum(n.InstanceInfo, allowMD5); err != nil {
		return nil, err
	}
	id := src
	if i := strings.LastIndexByte(src, '/'); i >= 0 && i < len(src)-1 {
		id = src[i+1:]
	}
	info := map[string]any{"id": id, "urls": []any{src}, "os_hash_algo": sum.Algo, "os_hash_value": sum.Value,
		"node_uuid": n.UUID, "stream_raw_images": true}
	for from, to := range map[string]string{"image_disk_format": "disk_format", "image_container_format": "container_format",
		"image_type": "image_type", "root_mb": "root_mb", "swap_mb": "swap_mb", "ephemeral_mb": "ephemeral_mb",
		"ephemeral_format": "ephemeral_format", "preserve_ephemeral": "preserve_ephemeral"} {
		if v, ok := n.InstanceInfo[from]; ok {
			info[to] = v
		}
	}
	if gb, ok := n.InstanceInfo["root_gb"]; ok && info["root_mb"] == nil {
		if f, ok := gb.(float64); ok {
			info["root_mb"] = int64(f * 1024)
		}
	}
	// Root device hints, disk format and label, the partition layout:
	// validated once here, sent inside image_info (Anvil's agent reads them
	// there; IPA reads what it knows and takes hints from its lookup).
	p, err := deployParams(n)
	if err != nil {
		return nil, err
	}
	for k, v := range p {
		if k != ipa.ParamConfigDrive {
			info[k] = v
		}
	}
	params := map[string]any{"image_info": info, "configdrive": nil}
	if cd, ok := n.InstanceInfo["configdrive"]; ok && cd != nil {
		params["configdrive"] = cd
	}
	return params, nil
}

// partitionImage says the image is a partition image (it needs a boot
// loader installed; a whole-disk image carries its own).
func partitionImage(n *model.Node) bool {
	t, _ := n.InstanceInfo["image_type"].(string)
	return t == "partition"
}

// Steps lists the deploy, clean and service steps the agent runs: the
// deploy step that boots the agent and writes the image, the agent's clean
// steps (ipa.CleanSteps, the list the agent itself offers), and
// erase_devices_metadata as a service step.
func (d *Direct) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface != "deploy" {
		return nil
	}
	switch kind {
	case driver.DeploySteps:
		return []driver.Step{{Interface: "deploy", Step: "deploy", Priority: 100}}
	case driver.CleanSteps:
		var out []driver.Step
		for _, s := range ipa.CleanSteps() {
			out = append(out, driver.Step{Interface: s.Interface, Step: s.Step, Priority: s.Priority, Abortable: s.Abortable})
		}
		return out
	case driver.ServiceSteps:
		return []driver.Step{{Interface: "deploy", Step: ipa.StepEraseDevicesMetadata}}
	}
	return nil
}

// agentStep reports whether the agent offers the clean step name.
func agentStep(name string) bool {
	for _, s := range ipa.CleanSteps() {
		if s.Step == name {
			return true
		}
	}
	return false
}

// ExecuteStep starts a step: every step boots the node into the agent and
// waits for its heartbeat.
func (d *Direct) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind == driver.DeploySteps && s.Step == "deploy" {
		return d.Deploy(ctx, t)
	}
	if agentStep(s.Step) {
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
	if isOCI(t.Node) {
		if err := d.resolveOCI(ctx, t.Node); err != nil {
			return driver.Done, err
		}
	}
	if _, err := imageInfo(t.Node, d.cfg.AllowMD5); err != nil {
		return driver.Done, err
	}
	return driver.Wait, d.bootAgent(ctx, t, driver.RamdiskDeploy)
}

// bootAgent forgets any previous agent (its token and URL: a new agent boots
// and must look itself up again), has the boot interface prepare the
// ramdisk of mode and powers on.
func (d *Direct) bootAgent(ctx context.Context, t *driver.Task, mode string) error {
	forgetAgent(t.Node)
	t.Node.DriverInternalInfo[ipa.KeyTokenRequired] = true
	drv, err := t.Composed()
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
	url, _ := n.DriverInternalInfo[ipa.KeyURL].(string)
	token, _ := n.DriverInternalInfo[ipa.KeyToken].(string)
	return url != "" && token != ""
}

// forgetAgent clears the agent's token, URL and command bookkeeping.
func forgetAgent(n *model.Node) {
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSON{}
	}
	for _, k := range []string{ipa.KeyToken, ipa.KeyTokenRequired, ipa.KeyURL, ipa.KeyVersion, ipa.KeyVerifyCA,
		keyCommandID, keyCommandName, keyDeployPhase, keyEFIPartUUID} {
		delete(n.DriverInternalInfo, k)
	}
}

// Continue runs on each heartbeat of the agent: it starts the operation's
// command, or polls it, and finishes the operation when it is done.
func (d *Direct) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	res, err := d.continueOp(ctx, t, op)
	if errors.Is(err, errCommandFailed) && d.cfg.collects(true) {
		err = fmt.Errorf("%w (%s)", err, d.saveLogs(ctx, t.Node, op))
	}
	return res, err
}

func (d *Direct) continueOp(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	n := t.Node
	if !agentKnown(n) {
		return driver.Wait, nil // not heard from the agent yet
	}
	switch op {
	case string(driver.DeploySteps):
		return d.continueDeploy(ctx, t)
	case string(driver.CleanSteps), string(driver.ServiceSteps):
		cur := n.CleanStep
		if op == string(driver.ServiceSteps) {
			cur = n.ServiceStep
		}
		name, _ := cur["step"].(string)
		if !agentStep(name) {
			return driver.Done, fmt.Errorf("the agent has no step %q", name)
		}
		step := map[string]any{}
		for k, v := range cur {
			step[k] = v
		}
		params := map[string]any{"step": step, "node": AgentNode(n), "ports": agentPorts(t.Ports), "clean_version": nil}
		if _, done, err := runCommand(ctx, d.cfg.Client, n, ipa.CmdExecuteCleanStep, params); err != nil || !done {
			return notDone(err)
		}
		return driver.Done, nil
	}
	return driver.Done, fmt.Errorf("the direct deploy interface cannot %s", op)
}

// continueDeploy runs the deploy's commands, as Ironic's direct deploy
// does: standby.prepare_image (polled), standby.get_partition_uuids, for
// a partition image or any image in UEFI boot mode image.install_bootloader
// (polled: in UEFI the agent writes the boot entry of the image's EFI
// system partition, as Ironic's configure_local_boot asks it), standby.sync;
// then the step is done and FinishStep boots the node from disk. The phase
// reached is kept across heartbeats.
func (d *Direct) continueDeploy(ctx context.Context, t *driver.Task) (driver.Result, error) {
	n := t.Node
	phase, _ := n.DriverInternalInfo[keyDeployPhase].(string)
	if phase == "" {
		params, err := imageInfo(n, d.cfg.AllowMD5)
		if err != nil {
			return driver.Done, err
		}
		if isOCI(n) && n.DriverInternalInfo[keyCommandName] != ipa.CmdPrepareImage {
			if err := d.ociAgentParams(ctx, n, params["image_info"].(map[string]any)); err != nil {
				return driver.Done, err
			}
		}
		res, done, err := runCommand(ctx, d.cfg.Client, n, ipa.CmdPrepareImage, params)
		if err != nil || !done {
			return notDone(err)
		}
		if w, ok := res.Result["bytes_written"].(float64); ok {
			n.DriverInternalInfo[keyProgress] = int64(w)
		}
		phase = ipa.CmdPrepareImage
		n.DriverInternalInfo[keyDeployPhase] = phase
	}
	if phase == ipa.CmdPrepareImage {
		res, done, err := runCommand(ctx, d.cfg.Client, n, ipa.CmdGetPartitionUUIDs, nil)
		if err != nil || !done {
			return notDone(err)
		}
		root, _ := res.Result["root uuid"].(string)
		if root != "" {
			n.DriverInternalInfo["root_uuid_or_disk_id"] = root
		}
		if efi, _ := res.Result["efi system partition uuid"].(string); efi != "" {
			n.DriverInternalInfo[keyEFIPartUUID] = efi
		}
		// A phase of its own: install_bootloader is polled over later
		// heartbeats, which must not ask for the partitions again (that
		// would replace the polled command's id).
		phase = ipa.CmdGetPartitionUUIDs
		n.DriverInternalInfo[keyDeployPhase] = phase
	}
	if phase == ipa.CmdGetPartitionUUIDs {
		if partitionImage(n) || bootMode(n) == "uefi" {
			root, _ := n.DriverInternalInfo["root_uuid_or_disk_id"].(string)
			efi, _ := n.DriverInternalInfo[keyEFIPartUUID].(string)
			params := map[string]any{"root_uuid": nilIfEmpty(root), "efi_system_part_uuid": nilIfEmpty(efi),
				"prep_boot_part_uuid": nil, "target_boot_mode": bootMode(n)}
			if _, done, err := runCommand(ctx, d.cfg.Client, n, ipa.CmdInstallBootloader, params); err != nil || !done {
				return notDone(err)
			}
		}
		phase = ipa.CmdInstallBootloader
		n.DriverInternalInfo[keyDeployPhase] = phase
	}
	if _, done, err := runCommand(ctx, d.cfg.Client, n, ipa.CmdSync, nil); err != nil || !done {
		return notDone(err)
	}
	n.DriverInternalInfo[keyDeployPhase] = ipa.CmdSync
	if d.cfg.collects(false) {
		// deploy_logs_collect=always: the logs of a successful deploy are
		// saved before the agent is rebooted away, as Ironic does; failing
		// to collect them does not fail the deploy.
		d.saveLogs(ctx, n, string(driver.DeploySteps))
	}
	return driver.Done, nil // FinishStep boots the instance, the resume saved
}

// FinishStep implements driver.StepFinisher: a deploy whose image is
// written and synced boots from disk (Ironic's boot_instance step, run in
// deploying after the heartbeat's resume).
func (d *Direct) FinishStep(ctx context.Context, t *driver.Task, op string) error {
	if phase, _ := t.Node.DriverInternalInfo[keyDeployPhase].(string); op != string(driver.DeploySteps) || phase != ipa.CmdSync {
		return nil // not a direct deploy's image written and synced (the custom agent's steps, a clean step)
	}
	return d.bootFromDisk(ctx, t)
}

// notDone is a command's outcome on this heartbeat: failed, or wait for
// the next one.
func notDone(err error) (driver.Result, error) {
	if err != nil {
		return driver.Done, err
	}
	return driver.Wait, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// bootMode is the node's boot mode (instance_info, then properties'
// capabilities), bios by default.
func bootMode(n *model.Node) string {
	if m, _ := n.InstanceInfo["deploy_boot_mode"].(string); m != "" {
		return m
	}
	caps, _ := n.Properties["capabilities"].(string)
	for _, c := range strings.Split(caps, ",") {
		if k, v, ok := strings.Cut(c, ":"); ok && strings.TrimSpace(k) == "boot_mode" {
			return strings.TrimSpace(v)
		}
	}
	return "bios"
}

// runCommand starts the command name on the node's agent, or polls the one
// started on an earlier heartbeat; done reports it finished successfully
// (with its result). A synchronous command finishes in the POST's answer.
// The agent must be known (agentKnown).
func runCommand(ctx context.Context, c *Client, n *model.Node, name string, params map[string]any) (res ipa.CommandResult, done bool, err error) {
	info := n.DriverInternalInfo
	url, _ := info[ipa.KeyURL].(string)
	token, _ := info[ipa.KeyToken].(string)
	id, _ := info[keyCommandID].(string)
	ca, _ := info[ipa.KeyVerifyCA].(string)
	c, err = c.verifying(ca)
	if err != nil {
		return res, false, err
	}
	if id == "" || info[keyCommandName] != name {
		res, err = c.Run(ctx, url, token, name, params, false)
		if errors.Is(err, ErrBusy) { // an earlier command still runs: next heartbeat
			return res, false, nil
		}
		if err != nil {
			return res, false, fmt.Errorf("starting %s on the agent: %w", name, err)
		}
		info[keyCommandID], info[keyCommandName] = res.ID, name
	} else {
		res, err = c.Status(ctx, url, token, id)
		if err != nil {
			delete(info, keyCommandID)
			return res, false, fmt.Errorf("polling %s on the agent: %w", name, err)
		}
	}
	if res.BytesWritten > 0 || name == ipa.CmdPrepareImage {
		info[keyProgress] = res.BytesWritten
	}
	switch res.Status {
	case ipa.StatusRunning:
		return res, false, nil
	case ipa.StatusSucceeded:
		delete(info, keyCommandID)
		delete(info, keyCommandName)
		return res, true, nil
	}
	delete(info, keyCommandID)
	delete(info, keyCommandName)
	return res, false, fmt.Errorf("%w: %s %s: %s", errCommandFailed, name, strings.ToLower(res.Status), res.ErrorText())
}

// errCommandFailed marks an agent command that ran and failed (not an
// unreachable agent).
var errCommandFailed = errors.New("agent command failed")

// AgentNode is the node as the agent sees it in step commands (Ironic's
// _LOOKUP_RETURN_FIELDS), without the agent's token, secrets of
// instance_info, and the stored inspection data.
func AgentNode(n *model.Node) map[string]any {
	dii := map[string]any{}
	for k, v := range n.DriverInternalInfo {
		if k != ipa.KeyToken && k != KeyInventory && k != KeyPluginData {
			dii[k] = v
		}
	}
	ii := map[string]any{}
	for k, v := range n.InstanceInfo {
		if k != "configdrive" && k != keyRescuePassword && k != KeyHashedRescuePassword && k != keyPullSecret {
			ii[k] = v
		}
	}
	return map[string]any{"uuid": n.UUID, "properties": nonNil(n.Properties), "instance_info": ii, "driver_internal_info": dii}
}

func nonNil(m model.JSON) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// agentPorts are the node's ports as step commands carry them.
func agentPorts(ports []*model.Port) []any {
	out := make([]any, 0, len(ports))
	for _, p := range ports {
		out = append(out, map[string]any{"uuid": p.UUID, "address": p.Address, "pxe_enabled": p.PXEEnabled, "node_uuid": p.NodeUUID})
	}
	return out
}

// bootFromDisk has the boot interface prepare the instance (boot device
// disk) and reboots into it; the agent is gone afterwards, so its token is
// forgotten.
func (d *Direct) bootFromDisk(ctx context.Context, t *driver.Task) error {
	drv, err := t.Composed()
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
	drv, err := t.Composed()
	if err != nil || drv.Power == nil {
		return err
	}
	if err := drv.Power.SetPowerState(ctx, t, fsm.Rebooting); err != nil {
		return fmt.Errorf("rebooting after cleaning: %w", err)
	}
	t.Node.PowerState = fsm.PowerOn
	return nil
}

// CleanUpRamdisk undoes a failed or aborted deploy, clean or service
// (driver.RamdiskCleaner): the agent is forgotten, the node powered off if
// powerOff, the ramdisk withdrawn.
func (d *Direct) CleanUpRamdisk(ctx context.Context, t *driver.Task, powerOff bool) error {
	return d.cleanUpRamdisk(ctx, t, powerOff)
}

// cleanUpRamdisk is RamdiskCleaner for the deploy, inspect and rescue
// interfaces alike.
func (d *Direct) cleanUpRamdisk(ctx context.Context, t *driver.Task, powerOff bool) error {
	if powerOff {
		return d.powerOff(ctx, t, "", driver.Boot.CleanUpRamdisk)
	}
	forgetAgent(t.Node)
	delete(t.Node.DriverInternalInfo, keyProgress)
	drv, err := t.Composed()
	if err != nil {
		return err
	}
	if drv.Boot != nil {
		return drv.Boot.CleanUpRamdisk(ctx, t)
	}
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
	drv, err := t.Composed()
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
