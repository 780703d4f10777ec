package direct

import (
	"context"
	"errors"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// instance_info keys of the rescue password.
const (
	keyRescuePassword = "rescue_password"
	// KeyHashedRescuePassword holds the SHA-512 crypt hash (Ironic's name).
	KeyHashedRescuePassword = "hashed_rescue_password"
)

// Rescuer is the "agent" rescue interface: it boots the node into the agent,
// which, on its first heartbeat, is sent the rescue password's SHA-512 crypt
// hash (finalize_rescue). The plain password is dropped from instance_info
// as soon as it is hashed. Unrescue boots the instance from disk again.
type Rescuer struct{ d *Direct }

// Rescuer returns the agent rescue interface sharing d's configuration.
func (d *Direct) Rescuer() *Rescuer { return &Rescuer{d: d} }

// Validate checks the node's boot interface can boot the rescue ramdisk
// (Ironic's boot validate_rescue).
func (r *Rescuer) Validate(t *driver.Task) error { return r.d.validateBoot(t, true) }

// Rescue hashes the rescue password, boots the agent and waits (rescue wait).
func (r *Rescuer) Rescue(ctx context.Context, t *driver.Task) (driver.Result, error) {
	n := t.Node
	if n.InstanceInfo == nil {
		n.InstanceInfo = model.JSON{}
	}
	if pw, _ := n.InstanceInfo[keyRescuePassword].(string); pw != "" {
		n.InstanceInfo[KeyHashedRescuePassword] = ipa.HashRescuePassword(pw)
	}
	delete(n.InstanceInfo, keyRescuePassword)
	if h, _ := n.InstanceInfo[KeyHashedRescuePassword].(string); !ipa.IsCryptHash(h) {
		return driver.Done, errors.New("no rescue password was given")
	}
	return driver.Wait, r.d.bootAgent(ctx, t, driver.RamdiskRescue)
}

// Continue sends finalize_rescue to the agent and waits for it to finish;
// then the boot interface withdraws the rescue ramdisk (CleanUpRamdisk).
func (r *Rescuer) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	if op != "rescue" {
		return driver.Done, fmt.Errorf("the agent rescue interface cannot %s", op)
	}
	n := t.Node
	if !agentKnown(n) {
		return driver.Wait, nil
	}
	h, _ := n.InstanceInfo[KeyHashedRescuePassword].(string)
	if !ipa.IsCryptHash(h) {
		return driver.Done, errors.New("the node has no hashed rescue password")
	}
	_, done, err := runCommand(ctx, r.d.cfg.Client, n, ipa.CmdFinalizeRescue,
		map[string]any{ipa.ParamRescuePassword: h, ipa.ParamHashed: true})
	if err != nil {
		return driver.Done, err
	}
	if !done {
		return driver.Wait, nil
	}
	delete(n.DriverInternalInfo, keyProgress)
	// The rescue ramdisk runs from memory now: withdraw what booted it (the
	// iPXE script, the virtual media ISO), as Ironic's _finalize_rescue
	// does through the rescue interface's clean_up.
	drv, err := t.Composed()
	if err != nil {
		return driver.Done, err
	}
	if drv.Boot != nil {
		if err := drv.Boot.CleanUpRamdisk(ctx, t); err != nil {
			return driver.Done, fmt.Errorf("cleaning up the rescue ramdisk: %w", err)
		}
	}
	return driver.Done, nil
}

// CleanUpRamdisk undoes a failed, timed-out or aborted rescue
// (driver.RamdiskCleaner; Ironic's rescue clean_up).
// The rescue password goes too, as Ironic's remove_node_rescue_password.
func (r *Rescuer) CleanUpRamdisk(ctx context.Context, t *driver.Task, powerOff bool) error {
	delete(t.Node.InstanceInfo, keyRescuePassword)
	delete(t.Node.InstanceInfo, KeyHashedRescuePassword)
	return r.d.cleanUpRamdisk(ctx, t, powerOff)
}

// Unrescue sets the boot device to disk and reboots into the instance; the
// rescue password's hash is dropped.
func (r *Rescuer) Unrescue(ctx context.Context, t *driver.Task) error {
	delete(t.Node.InstanceInfo, keyRescuePassword)
	delete(t.Node.InstanceInfo, KeyHashedRescuePassword)
	return r.d.bootFromDisk(ctx, t)
}
