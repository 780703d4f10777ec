// Package ipmi is the ipmi hardware type's power and management interfaces
// (Ironic's "ipmitool" implementations), speaking IPMI v2.0 RMCP+ (lanplus)
// natively through go-ipmi: no ipmitool process.
//
// Each operation opens one session, runs its commands and closes it. Commands
// to one BMC are serialised and spaced by Config.MinCommandInterval (Ironic's
// [ipmi]min_command_interval); a failed operation is retried with
// exponential backoff until Config.CommandRetryTimeout (Ironic's
// [ipmi]command_retry_timeout) — except when the BMC refused the
// credentials, which no retry mends.
//
// Invariants: Validate never contacts the BMC; errors never contain the
// password.
package ipmi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
)

// Names Anvil registers: the hardware type and its interface implementations.
const (
	Name      = "ipmi"
	Interface = "ipmitool"
)

// ErrAuth: the BMC refused the credentials (match with errors.Is).
var ErrAuth = errors.New("the BMC refused the credentials")

// Config tunes the driver. Zero values take Ironic's defaults; a negative
// MinCommandInterval disables spacing.
type Config struct {
	MinCommandInterval  time.Duration // between operations on one BMC (5 s)
	CommandRetryTimeout time.Duration // retry a failing operation this long (60 s)
	ExchangeTimeout     time.Duration // one UDP request/reply (1 s)
	PowerTimeout        time.Duration // wait for a power change (power_state_change_timeout: 60 s)
	PollInterval        time.Duration // between power reads while waiting (1 s)
	Sleep               func(ctx context.Context, d time.Duration) error
	Log                 *slog.Logger
	// Calls, if set, records each operation's outcome under the node's
	// UUID (a failed node's diagnosis shows them).
	Calls *recent.Log[model.BMCCall]
}

// Driver implements driver.Power (with Verify) and driver.Management over
// IPMI lanplus. It is safe for concurrent use.
type Driver struct {
	cfg  Config
	mu   sync.Mutex
	bmcs map[string]*bmcLane
}

// bmcLane serialises and spaces the operations on one BMC.
type bmcLane struct {
	mu   sync.Mutex
	last time.Time
}

// New returns a driver with cfg's settings.
func New(cfg Config) *Driver {
	if cfg.MinCommandInterval == 0 {
		cfg.MinCommandInterval = 5 * time.Second
	}
	if cfg.CommandRetryTimeout <= 0 {
		cfg.CommandRetryTimeout = 60 * time.Second
	}
	if cfg.ExchangeTimeout <= 0 {
		cfg.ExchangeTimeout = time.Second
	}
	if cfg.PowerTimeout <= 0 {
		cfg.PowerTimeout = 60 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Driver{cfg: cfg, bmcs: map[string]*bmcLane{}}
}

var (
	_ driver.Power      = (*Driver)(nil)
	_ driver.Management = (*Driver)(nil)
)

// Validate checks driver_info without contacting the BMC.
func (d *Driver) Validate(t *driver.Task) error {
	n := t.Node
	_, err := parseInfo(n)
	return err
}

func (d *Driver) lane(target string) *bmcLane {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.bmcs[target]
	if l == nil {
		l = &bmcLane{}
		d.bmcs[target] = l
	}
	return l
}

// A failing IPMI operation is reported as progress once it has failed for
// progressAfter, then every progressEvery while it is retried.
const (
	progressAfter = 3 * time.Second
	progressEvery = 15 * time.Second
)

// run performs op in an IPMI session with the node's BMC, retrying with
// backoff until CommandRetryTimeout. While it retries it reports progress
// on t (a BMC that does not answer would otherwise be a minute of silence).
func (d *Driver) run(ctx context.Context, t *driver.Task, op string, fn func(ctx context.Context, c *client.Client) error) error {
	in, err := parseInfo(t.Node)
	if err != nil {
		return err
	}
	start := time.Now()
	var reported time.Time
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := d.once(ctx, in, fn)
		if err == nil {
			d.record(t.Node, in, op, start, attempt, nil, false)
			return nil
		}
		opened := !errors.Is(err, errSession)
		err = d.describe(in, op, err)
		if errors.Is(err, ErrAuth) || ctx.Err() != nil || errors.Is(err, driver.ErrUnsupported) {
			d.record(t.Node, in, op, start, attempt, err, opened)
			return err
		}
		if time.Since(start)+backoff > d.cfg.CommandRetryTimeout {
			err = fmt.Errorf("%w (gave up after %d attempts in %s)", err, attempt, time.Since(start).Round(time.Millisecond))
			d.record(t.Node, in, op, start, attempt, err, opened)
			return err
		}
		d.cfg.Log.Debug("ipmi operation failed, retrying", "bmc", in.target(), "op", op, "attempt", attempt, "err", err)
		since := time.Since(start)
		if (reported.IsZero() && since >= progressAfter) || (!reported.IsZero() && time.Since(reported) >= progressEvery) {
			reported = time.Now()
			t.Report(fmt.Sprintf("IPMI BMC %s has not completed %s for %s (%d attempts): %v; retrying for up to %s",
				in.target(), op, since.Round(time.Second), attempt, err, d.cfg.CommandRetryTimeout))
		}
		if serr := d.sleep(ctx, backoff); serr != nil {
			return err
		}
		backoff = min(backoff*2, 8*time.Second)
	}
}

// once opens a session (after the BMC's minimum command interval), runs fn
// and closes the session.
func (d *Driver) once(ctx context.Context, in info, fn func(ctx context.Context, c *client.Client) error) error {
	l := d.lane(in.target())
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.cfg.MinCommandInterval > 0 && !l.last.IsZero() {
		if wait := d.cfg.MinCommandInterval - time.Since(l.last); wait > 0 {
			if err := d.sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	defer func() { l.last = time.Now() }()
	c, err := client.NewClient(in.address, in.port, in.username, in.password)
	if err != nil {
		return err
	}
	c.WithCipherSuiteID(in.cipherSuite)
	c.WithMaxPrivilegeLevel(in.privLevel)
	c.WithTimeout(d.cfg.ExchangeTimeout)
	c.WithRetry(1)
	if err := c.Connect(ctx); err != nil {
		c.Close(context.Background()) //nolint:errcheck // the session may not exist
		return &sessionError{err}
	}
	defer c.Close(context.Background()) //nolint:errcheck // best effort
	return fn(ctx, c)
}

// describe names the BMC in err, classifies refused credentials and makes
// sure no password is in the text.
func (d *Driver) describe(in info, op string, err error) error {
	msg := err.Error()
	if len(in.password) >= 3 {
		msg = strings.ReplaceAll(msg, in.password, "******")
	}
	if errors.Is(err, client.ErrRAKPAuthentication) {
		return &opError{msg: fmt.Sprintf("IPMI BMC %s refused the credentials of user %q during %s (RAKP authentication failed)", in.target(), in.username, op), kind: ErrAuth}
	}
	if authFailure(msg) {
		return &opError{msg: fmt.Sprintf("IPMI BMC %s refused the credentials of user %q during %s: %s", in.target(), in.username, op, msg), kind: ErrAuth}
	}
	if errors.Is(err, driver.ErrUnsupported) {
		return &opError{msg: msg, kind: driver.ErrUnsupported}
	}
	return &opError{msg: fmt.Sprintf("IPMI %s on BMC %s failed: %s", op, in.target(), msg)}
}

// authFailure recognises RAKP status codes that mean bad credentials.
func authFailure(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"unauthorized name", "invalid name", "unauthorized role", "invalid integrity check", "rakp"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// errSession marks an error of opening the session (the BMC did not
// answer, or refused): match with errors.Is.
var errSession = errors.New("opening a session")

type sessionError struct{ err error }

func (e *sessionError) Error() string   { return "opening a session: " + e.err.Error() }
func (e *sessionError) Unwrap() []error { return []error{errSession, e.err} }

// record adds op's outcome to the node's BMC calls: an error is "auth"
// when the BMC refused the credentials, "unreachable" when no session
// could be opened for another reason (no answer).
func (d *Driver) record(n *model.Node, in info, op string, start time.Time, attempts int, err error, opened bool) {
	if d.cfg.Calls == nil {
		return
	}
	c := model.BMCCall{Time: start.UTC(), Protocol: "ipmi", BMC: in.target(), Op: op, Attempts: attempts,
		Millis: time.Since(start).Milliseconds()}
	if err != nil {
		c.Error = err.Error() // describe masked the password
		switch {
		case errors.Is(err, ErrAuth):
			c.Kind = "auth"
		case !opened:
			c.Kind = "unreachable"
		}
	}
	d.cfg.Calls.AddOrMerge(n.UUID, c, c.MergeInto)
}

type opError struct {
	msg  string
	kind error
}

func (e *opError) Error() string { return e.msg }
func (e *opError) Unwrap() error { return e.kind }

// Verify opens a session with the node's credentials and reads the chassis status.
func (d *Driver) Verify(ctx context.Context, t *driver.Task) error {
	_, err := d.PowerState(ctx, t)
	return err
}

// PowerState reads the chassis power.
func (d *Driver) PowerState(ctx context.Context, t *driver.Task) (string, error) {
	var state string
	err := d.run(ctx, t, "power status", func(ctx context.Context, c *client.Client) error {
		on, err := chassisOn(ctx, c)
		state = onOff(on)
		return err
	})
	return state, err
}

func onOff(on bool) string {
	if on {
		return fsm.PowerOn
	}
	return fsm.PowerOff
}

func chassisOn(ctx context.Context, c *client.Client) (bool, error) {
	st, err := c.GetChassisStatus(ctx)
	if err != nil {
		return false, fmt.Errorf("get chassis status: %w", err)
	}
	return st.PowerIsOn, nil
}

// SetPowerState performs target and waits until the chassis reports the
// resulting state. Rebooting is power off then on, as Ironic's ipmitool
// driver does; soft variants use the ACPI soft shutdown.
func (d *Driver) SetPowerState(ctx context.Context, t *driver.Task, target string) error {
	return d.run(ctx, t, target, func(ctx context.Context, c *client.Client) error {
		on, err := chassisOn(ctx, c)
		if err != nil {
			return err
		}
		switch target {
		case fsm.PowerOn:
			return d.control(ctx, c, on, true, chassis.ChassisControlPowerUp)
		case fsm.PowerOff:
			return d.control(ctx, c, on, false, chassis.ChassisControlPowerDown)
		case fsm.SoftPowerOff:
			return d.control(ctx, c, on, false, chassis.ChassisControlSoftShutdown)
		case fsm.Rebooting, fsm.SoftRebooting:
			off := chassis.ChassisControlPowerDown
			if target == fsm.SoftRebooting {
				off = chassis.ChassisControlSoftShutdown
			}
			if err := d.control(ctx, c, on, false, off); err != nil {
				return err
			}
			return d.control(ctx, c, false, true, chassis.ChassisControlPowerUp)
		}
		return fmt.Errorf("power target %q: %w", target, driver.ErrUnsupported)
	})
}

// control sends cmd unless the chassis is already in state want, then waits for want.
func (d *Driver) control(ctx context.Context, c *client.Client, on, want bool, cmd chassis.ChassisControl) error {
	if on == want {
		return nil
	}
	if _, err := c.ChassisControl(ctx, cmd); err != nil {
		return fmt.Errorf("chassis control %d: %w", cmd, err)
	}
	deadline := time.Now().Add(d.cfg.PowerTimeout)
	for {
		got, err := chassisOn(ctx, c)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", d.cfg.PowerTimeout, onOff(want))
		}
		if err := d.sleep(ctx, d.cfg.PollInterval); err != nil {
			return err
		}
	}
}

// Boot devices in Ironic's words ↔ IPMI boot device selectors.
var selectors = map[string]types.BootDeviceSelector{
	"pxe":   types.BootDeviceSelectorForcePXE,
	"disk":  types.BootDeviceSelectorForceHardDrive,
	"safe":  types.BootDeviceSelectorForceHardDriveSafe,
	"cdrom": types.BootDeviceSelectorForceCDROM,
	"bios":  types.BootDeviceSelectorForceBIOSSetup,
}

// SupportedBootDevices lists the devices SetBootDevice accepts.
func (d *Driver) SupportedBootDevices(ctx context.Context, t *driver.Task) ([]string, error) {
	return []string{"pxe", "disk", "cdrom", "bios", "safe"}, nil
}

// BootDevice reads boot flags (parameter 5). Like Ironic it reads the device
// selector whatever the valid bit says; "" means no override.
func (d *Driver) BootDevice(ctx context.Context, t *driver.Task) (driver.BootDevice, error) {
	var bd driver.BootDevice
	err := d.run(ctx, t, "get boot device", func(ctx context.Context, c *client.Client) error {
		f := &types.BootOptionParam_BootFlags{}
		if err := c.GetSystemBootOptionsParamFor(ctx, f); err != nil {
			return err
		}
		bd.Persistent = f.Persist
		for dev, sel := range selectors {
			if sel == f.BootDeviceSelector {
				bd.Device = dev
			}
		}
		return nil
	})
	return bd, err
}

// SetBootDevice sets the boot flags: device, next boot or persistent, EFI
// unless the node asks for BIOS boot. It first asks the BMC not to clear the
// flags after 60 s (as Ironic does); BMCs that refuse that are not failed.
func (d *Driver) SetBootDevice(ctx context.Context, t *driver.Task, dev driver.BootDevice) error {
	sel, ok := selectors[dev.Device]
	if !ok {
		return fmt.Errorf("boot device %q is not supported by the ipmitool management interface", dev.Device)
	}
	bootType := types.BIOSBootTypeEFI
	if requestedBootMode(t.Node) == "bios" {
		bootType = types.BIOSBootTypeLegacy
	}
	return d.run(ctx, t, "set boot device", func(ctx context.Context, c *client.Client) error {
		_ = c.SetSystemBootOptionsParamFor(ctx, &types.BootOptionParam_BMCBootFlagValidBitClear{DontClearOnCommandReceivedTimeout: true})
		return c.SetBootDevice(ctx, sel, bootType, dev.Persistent)
	})
}

// requestedBootMode: instance_info deploy_boot_mode, else the boot_mode capability.
func requestedBootMode(n *model.Node) string {
	if s, _ := n.InstanceInfo["deploy_boot_mode"].(string); s != "" {
		return s
	}
	caps, _ := n.Properties["capabilities"].(string)
	for _, c := range strings.Split(caps, ",") {
		if k, v, _ := strings.Cut(strings.TrimSpace(c), ":"); k == "boot_mode" {
			return v
		}
	}
	return ""
}

func (d *Driver) sleep(ctx context.Context, dur time.Duration) error {
	if d.cfg.Sleep != nil {
		return d.cfg.Sleep(ctx, dur)
	}
	return clock.Sleep(ctx, dur)
}
