package conductor

import (
	"context"
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// unstableStates are the states a node changes out of on its own (Ironic's
// UNSTABLE_STATES): no boot mode or secure boot change while in them.
var unstableStates = []string{fsm.Deploying, fsm.DeployWait, fsm.Cleaning, fsm.CleanWait, fsm.Verifying,
	fsm.Deleting, fsm.Inspecting, fsm.InspectWait, fsm.Adopting, fsm.Rescuing, fsm.RescueWait, fsm.Unrescuing}

// ChangeBootMode starts changing the boot mode ("uefi" or "bios"; PUT
// .../states/boot_mode, 1.76): checked and locked before it returns, done
// in a worker, which records the new boot_mode or last_error (Ironic's
// node_change_boot_mode).
func (svc *Management) ChangeBootMode(ctx context.Context, ident, user, mode string) error {
	c := svc.c
	if mode != driver.BootModeUEFI && mode != driver.BootModeBIOS {
		return fault.New(fault.Invalid, "Invalid boot mode %s requested for node. Allowed boot modes are: bios, uefi", mode)
	}
	return svc.managementChange(ctx, ident, user, "changing boot mode", func(ctx context.Context, t *task, m driver.Management) error {
		bm, ok := m.(driver.BootModeManager)
		if !ok {
			return unsupported(t.node, "set_boot_mode")
		}
		if cur, err := bm.BootMode(ctx, t.driverTask(ctx)); err == nil && cur == mode {
			t.node.BootMode = mode
			return nil
		}
		if err := bm.SetBootMode(ctx, t.driverTask(ctx), mode); err != nil {
			return err
		}
		t.node.BootMode = mode
		return nil
	}, func(err error) string {
		return fmt.Sprintf("Failed to change boot mode to '%s: %s", mode, c.errorText(err))
	})
}

// ChangeSecureBoot starts turning UEFI secure boot on or off (PUT
// .../states/secure_boot, 1.76), as ChangeBootMode.
func (svc *Management) ChangeSecureBoot(ctx context.Context, ident, user string, on bool) error {
	c := svc.c
	return svc.managementChange(ctx, ident, user, "changing secure boot", func(ctx context.Context, t *task, m driver.Management) error {
		sb, ok := m.(driver.SecureBootManager)
		if !ok {
			return unsupported(t.node, "set_secure_boot_state")
		}
		if err := sb.SetSecureBoot(ctx, t.driverTask(ctx), on); err != nil {
			return err
		}
		t.node.SecureBoot = &on
		return nil
	}, func(err error) string {
		return fmt.Sprintf("Failed to change secure_boot state to '%s': %s", pyrepr.Bool(on), c.errorText(err))
	})
}

// managementChange locks the node, refuses unstable states (409, as
// Ironic's API), validates the management interface, clears last_error and
// runs act in a worker; a failure becomes last_error (made by msg) and an
// error history event.
func (svc *Management) managementChange(ctx context.Context, ident, user, purpose string,
	act func(ctx context.Context, t *task, m driver.Management) error, msg func(error) string) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, user)
	if err != nil {
		return err
	}
	if slices.Contains(unstableStates, t.node.ProvisionState) {
		t.release()
		return fault.New(fault.Conflict, "Node is in %s state. Since node is transitioning, the boot mode will not be set as this may interfere with ongoing changes and result in erroneous modification. Try again later.", t.node.ProvisionState)
	}
	m, err := svc.management(t.node)
	if err != nil {
		t.release()
		return err
	}
	return svc.runRecorded(ctx, t, "management", purpose, func(ctx context.Context) error { return act(ctx, t, m) }, msg)
}

// runRecorded clears the locked node's last_error, saves it and runs act
// in a worker (503 when none is free), releasing the lock at the end; a
// failure becomes last_error (made by msg) and an error history event of
// eventType. The lock is released on every path.
func (svc *Management) runRecorded(ctx context.Context, t *task, eventType, purpose string,
	act func(ctx context.Context) error, msg func(error) string) error {
	c := svc.c
	if err := c.workers.reserve(); err != nil {
		t.release()
		return err
	}
	t.node.LastError = ""
	if err := t.save(ctx); err != nil {
		c.workers.free()
		t.release()
		return err
	}
	c.workers.spawn(func(wctx context.Context) {
		defer t.finish()
		if err := act(wctx); err != nil {
			t.node.LastError = msg(err)
			t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: eventType, Event: t.node.LastError})
			c.log.Error(purpose+" failed", "node", t.node.UUID, "err", err)
			return
		}
		c.log.Info(purpose+" done", "node", t.node.UUID)
	})
	return nil
}
