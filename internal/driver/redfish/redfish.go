// Package redfish is the redfish hardware type's power, management,
// inspect, bios and firmware interfaces (Ironic's "redfish"
// implementations), built on gofish's Redfish models with a small client of
// its own: one context per operation,
// bounded retries of transient failures (connection errors and HTTP 429,
// 500, 502, 503, 504; a busy BMC's 503 or 429 backs off exponentially and
// honours Retry-After), basic or session authentication with one session
// cached per BMC address and user, shared by every node and operation on
// that BMC and logged out by Logout on shutdown; at most MaxCallsPerBMC
// calls in flight to one BMC. Auth type auto (the default) is sushy's SessionOrBasicAuth: a
// session when the service root links one (Links.Sessions) and the login
// works, basic auth otherwise; an expired session is renewed once, and a
// refused re-login is final.
//
// Invariants: Validate never contacts the BMC; no error, log line or node
// field this package writes contains a password (errors pass through Scrub);
// calls are bounded by Config.Attempts × (Config.Timeout + Config.MaxRetryWait).
//
// The redfish-virtual-media boot interface ([VirtualMediaBoot], Ironic's
// RedfishVirtualMediaBoot) boots the agent from an ISO in the BMC's virtual
// CD: deploy_iso/rescue_iso as given, or an ISO of deploy_kernel/
// deploy_ramdisk (rescue_*) that an [ISOPublisher] (internal/boot) builds
// and serves. It looks for VirtualMedia under the system, else under the
// managers (as Ironic), ejects what the CD/DVD devices hold, inserts with the
// InsertMedia action (a PATCH of Image/Inserted on BMCs without it; a device
// answering 400 or 405 is passed over), waits up to Config.MediaTimeout for
// the BMC to report the image inserted, and sets a one-time boot from Cd.
// After deploy, clean, inspect and rescue it ejects and withdraws the ISO; a
// failed insert withdraws it at once. The Driver also implements
// driver.VirtualMediaManager, the management side of Ironic's vmedia API.
//
// Inspection follows Ironic's redfish inspect: summaries first, every
// resource but the system optional. It fills properties cpus (when known),
// cpu_arch, memory_mb and local_gb (0 for a disk-less node), fails with
// Ironic's message when memory_mb or cpu_arch cannot be found, and appends
// the NICs it finds to Task.Ports as new ports (UUID ""): the conductor
// creates them (see Inspect).
//
// The bios interface ([BIOS], Ironic's RedfishBIOS) and the firmware
// interface ([Firmware], RedfishFirmware) run their steps to the end within
// the step: settings are PATCHed to the Bios resource's @Redfish.Settings
// object with apply time OnReset (sushy's set_attributes), the node is
// rebooted so that the BMC applies them (reboot_to_finish_step; a node
// found off is powered off again), then read back, checked (Ironic's
// _get_unapplied_bios_attrs) and cached with the schema of the BMC's
// attribute registry. Firmware images go to UpdateService.SimpleUpdate and
// the Task it answers is followed until it ends (Config.FirmwareTimeout).
// sushy-tools serves Bios (at .../BIOS, settings effective at once) only
// with its libvirt driver, not its fake one; its SimpleUpdate needs Targets
// and bumps BiosVersion's minor number.
// The redfish vendor interface ([Vendor], vendor.go) manages BMC event
// subscriptions on the EventService and ejects virtual media, as Ironic's
// RedfishVendorPassthru. The Driver also injects NMIs (ResetType Nmi) and
// reports Status.Health with the power state (health.go), and inspection
// stores an inventory in IPA's format (inventory.go).
//
// Tests run internal/driver/drivertest against the BMC emulator, against a
// replay of what sushy-tools answered (testdata/sushy-tools: no
// SessionService, no Memory collection) and against DMTF's mockup served
// with sessions.
package redfish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
)

// Name is the hardware type and the power, management and inspect interface
// name this package is registered under (Ironic's).
const Name = "redfish"

// Config tunes the driver. Zero values take Ironic's defaults.
type Config struct {
	Attempts      int           // tries of one call ([redfish]connection_attempts: 5)
	RetryInterval time.Duration // between tries ([redfish]connection_retry_interval: 4 s)
	Timeout       time.Duration // one HTTP request (60 s)
	// MaxRetryWait caps the back-off from a busy BMC (503, 429): the wait
	// doubles from RetryInterval with each try, and honours Retry-After, up
	// to this (30 s).
	MaxRetryWait time.Duration
	// MaxCallsPerBMC is how many calls may be in flight to one BMC address
	// at a time, whatever the node or operation (4).
	MaxCallsPerBMC int
	PowerTimeout   time.Duration // wait for a power change to show ([conductor]power_state_change_timeout: 60 s)
	PollInterval   time.Duration // between power reads while waiting (1 s)
	MediaTimeout   time.Duration // wait for inserted virtual media to show (60 s)
	// FirmwareTimeout bounds one firmware update's Task (30 min).
	FirmwareTimeout time.Duration
	// Transport replaces the HTTP transport (tests); nil builds one per TLS setting.
	Transport http.RoundTripper
	Sleep     func(ctx context.Context, d time.Duration) error // nil: real time
	Log       *slog.Logger
	// Calls, if set, records each call's outcome under the node's UUID (a
	// failed node's diagnosis shows them).
	Calls *recent.Log[model.BMCCall]
}

// Driver implements driver.Power (with Verify), driver.Management and
// driver.Inspect for Redfish BMCs. It is safe for concurrent use.
type Driver struct {
	cfg      Config
	mu       sync.Mutex
	clients  map[string]*http.Client
	sessions map[sessionKey]authState
	logins   map[sessionKey]*sync.Mutex // one login at a time per account
	gates    map[string]chan struct{}   // calls in flight per BMC address (bmc.go)
	closed   bool                       // Logout has run: no new session
}

// New returns a driver with cfg's settings.
func New(cfg Config) *Driver {
	if cfg.Attempts <= 0 {
		cfg.Attempts = 5
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 4 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = 30 * time.Second
	}
	if cfg.MaxCallsPerBMC <= 0 {
		cfg.MaxCallsPerBMC = 4
	}
	if cfg.PowerTimeout <= 0 {
		cfg.PowerTimeout = 60 * time.Second
	}
	if cfg.MediaTimeout <= 0 {
		cfg.MediaTimeout = 60 * time.Second
	}
	if cfg.FirmwareTimeout <= 0 {
		cfg.FirmwareTimeout = 30 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Driver{cfg: cfg, clients: map[string]*http.Client{}, sessions: map[sessionKey]authState{}, logins: map[sessionKey]*sync.Mutex{}, gates: map[string]chan struct{}{}}
}

var (
	_ driver.Power      = (*Driver)(nil)
	_ driver.Management = (*Driver)(nil)
	_ driver.Inspect    = (*Driver)(nil)

	_ driver.VirtualMediaManager = (*Driver)(nil)
)

// Validate checks driver_info without contacting the BMC.
func (d *Driver) Validate(t *driver.Task) error {
	n := t.Node
	_, err := parseInfo(n)
	return err
}

// system fetches the node's ComputerSystem.
func (d *Driver) system(ctx context.Context, n *model.Node) (*redfish.ComputerSystem, error) {
	in, err := parseInfo(n)
	if err != nil {
		return nil, err
	}
	c, err := d.conn(ctx, in)
	if err != nil {
		return nil, err
	}
	path := in.systemID
	if path == "" {
		if path, err = onlySystem(c); err != nil {
			return nil, err
		}
	}
	sys, err := redfish.GetComputerSystem(c, path)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("Redfish system %s was not found on BMC %s: %w", path, in.address, err)
		}
		return nil, err
	}
	return sys, nil
}

// onlySystem returns the path of the BMC's only system.
func onlySystem(c *conn) (string, error) {
	col, err := common.GetCollection(c, "/redfish/v1/Systems")
	if err != nil {
		return "", err
	}
	if len(col.ItemLinks) != 1 {
		return "", fmt.Errorf("BMC %s manages %d systems: set %s to choose one", c.in.address, len(col.ItemLinks), KeySystemID)
	}
	return col.ItemLinks[0], nil
}

// Verify checks the BMC answers with the node's credentials and knows its
// system (what "manage" runs in verifying).
func (d *Driver) Verify(ctx context.Context, t *driver.Task) error {
	_, err := d.system(ctx, t.Node)
	return err
}

// PowerState reads the system's power state.
func (d *Driver) PowerState(ctx context.Context, t *driver.Task) (string, error) {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return "", err
	}
	return powerState(sys.PowerState), nil
}

func powerState(p redfish.PowerState) string {
	switch p {
	case redfish.OnPowerState, redfish.PoweringOnPowerState:
		return fsm.PowerOn
	case redfish.OffPowerState, redfish.PoweringOffPowerState:
		return fsm.PowerOff
	}
	return ""
}

// SetPowerState performs target and waits (Config.PowerTimeout) until the
// BMC reports the resulting state.
func (d *Driver) SetPowerState(ctx context.Context, t *driver.Task, target string) error {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return err
	}
	on := powerState(sys.PowerState) == fsm.PowerOn
	var reset redfish.ResetType
	switch target {
	case fsm.PowerOn:
		reset = redfish.OnResetType
	case fsm.PowerOff:
		reset = redfish.ForceOffResetType
	case fsm.SoftPowerOff:
		reset = redfish.GracefulShutdownResetType
	case fsm.Rebooting:
		reset = redfish.ForceRestartResetType
	case fsm.SoftRebooting:
		reset = redfish.GracefulRestartResetType
	default:
		return fmt.Errorf("power target %q is not supported by the redfish power interface", target)
	}
	if !on && (target == fsm.Rebooting || target == fsm.SoftRebooting) {
		reset = redfish.OnResetType // Ironic: rebooting a node that is off powers it on
	}
	want := fsm.PowerResult(target)
	if (reset == redfish.OnResetType && on) || (want == fsm.PowerOff && !on) {
		return nil // already there
	}
	if err := sys.Reset(reset); err != nil {
		return fmt.Errorf("Redfish %s of system %s failed: %w", reset, sys.ID, err)
	}
	return d.waitPower(ctx, t, want)
}

// waitPower polls until the power state is want or Config.PowerTimeout passes.
func (d *Driver) waitPower(ctx context.Context, t *driver.Task, want string) error {
	deadline := time.Now().Add(d.cfg.PowerTimeout)
	for {
		got, err := d.PowerState(ctx, t)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("timed out waiting for power state %s: %w", want, err)
			}
			return fmt.Errorf("timed out after %s waiting for power state %s (BMC reports %s)", d.cfg.PowerTimeout, want, got)
		}
		if err := d.sleep(ctx, d.cfg.PollInterval); err != nil {
			return err
		}
	}
}

// Boot devices in Ironic's words ↔ Redfish BootSourceOverrideTarget.
var bootTargets = map[string]redfish.BootSourceOverrideTarget{
	"pxe":   redfish.PxeBootSourceOverrideTarget,
	"disk":  redfish.HddBootSourceOverrideTarget,
	"cdrom": redfish.CdBootSourceOverrideTarget,
	"bios":  redfish.BiosSetupBootSourceOverrideTarget,
	// UEFI HTTP boot (Ironic's boot_devices.UEFIHTTP), of
	// BootDevice.HTTPBootURI when set.
	"uefihttp": redfish.UefiHTTPBootSourceOverrideTarget,
}

// SupportedBootDevices lists the devices SetBootDevice accepts.
func (d *Driver) SupportedBootDevices(ctx context.Context, t *driver.Task) ([]string, error) {
	return []string{"pxe", "disk", "cdrom", "bios"}, nil
}

// BootDevice reads the boot override: device "" when none is set.
func (d *Driver) BootDevice(ctx context.Context, t *driver.Task) (driver.BootDevice, error) {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return driver.BootDevice{}, err
	}
	bd := driver.BootDevice{Persistent: sys.Boot.BootSourceOverrideEnabled == redfish.ContinuousBootSourceOverrideEnabled}
	if sys.Boot.BootSourceOverrideEnabled == redfish.DisabledBootSourceOverrideEnabled {
		return bd, nil
	}
	for dev, tgt := range bootTargets {
		if tgt == sys.Boot.BootSourceOverrideTarget {
			bd.Device = dev
		}
	}
	return bd, nil
}

// SetBootDevice sets BootSourceOverrideTarget with BootSourceOverrideEnabled
// Once or Continuous, and the boot mode the node asks for (BootMode), if any.
func (d *Driver) SetBootDevice(ctx context.Context, t *driver.Task, dev driver.BootDevice) error {
	tgt, ok := bootTargets[dev.Device]
	if !ok {
		return fmt.Errorf("boot device %q is not supported by the redfish management interface", dev.Device)
	}
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return err
	}
	b := redfish.Boot{BootSourceOverrideTarget: tgt, BootSourceOverrideEnabled: redfish.OnceBootSourceOverrideEnabled}
	if dev.Persistent {
		b.BootSourceOverrideEnabled = redfish.ContinuousBootSourceOverrideEnabled
	}
	if m := RequestedBootMode(t.Node); m != "" {
		b.BootSourceOverrideMode = redfishMode(m)
	}
	if tgt == redfish.UefiHTTPBootSourceOverrideTarget {
		b.BootSourceOverrideMode = redfish.UEFIBootSourceOverrideMode // HTTP boot is UEFI's
		b.HTTPBootURI = dev.HTTPBootURI
	}
	if err := sys.SetBoot(b); err != nil {
		return fmt.Errorf("Redfish boot override of system %s failed: %w", sys.ID, err)
	}
	return nil
}

// Boot modes in Ironic's words.
const (
	BootModeUEFI = driver.BootModeUEFI
	BootModeBIOS = driver.BootModeBIOS
)

func redfishMode(m string) redfish.BootSourceOverrideMode {
	if m == BootModeBIOS {
		return redfish.LegacyBootSourceOverrideMode
	}
	return redfish.UEFIBootSourceOverrideMode
}

// BootMode reads the system's boot mode: "uefi", "bios" or "" (unknown).
func (d *Driver) BootMode(ctx context.Context, t *driver.Task) (string, error) {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return "", err
	}
	switch sys.Boot.BootSourceOverrideMode {
	case redfish.UEFIBootSourceOverrideMode:
		return BootModeUEFI, nil
	case redfish.LegacyBootSourceOverrideMode:
		return BootModeBIOS, nil
	}
	return "", nil
}

// SetBootMode sets the system's boot mode ("uefi" or "bios"), keeping the
// current boot override.
func (d *Driver) SetBootMode(ctx context.Context, t *driver.Task, mode string) error {
	if mode != BootModeUEFI && mode != BootModeBIOS {
		return fmt.Errorf("boot mode %q is not uefi or bios", mode)
	}
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return err
	}
	b := redfish.Boot{BootSourceOverrideMode: redfishMode(mode),
		BootSourceOverrideEnabled: sys.Boot.BootSourceOverrideEnabled, BootSourceOverrideTarget: sys.Boot.BootSourceOverrideTarget}
	if err := sys.SetBoot(b); err != nil {
		return fmt.Errorf("Redfish boot mode change of system %s failed: %w", sys.ID, err)
	}
	return nil
}

// RequestedBootMode is the boot mode a node asks for, Ironic's way:
// instance_info deploy_boot_mode, else the boot_mode capability in
// properties; "" when it asks for none.
func RequestedBootMode(n *model.Node) string {
	if s, _ := n.InstanceInfo["deploy_boot_mode"].(string); s == BootModeUEFI || s == BootModeBIOS {
		return s
	}
	caps, _ := n.Properties["capabilities"].(string)
	for _, c := range strings.Split(caps, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(c), ":")
		if k == "boot_mode" && (v == BootModeUEFI || v == BootModeBIOS) {
			return v
		}
	}
	return ""
}

// rebootToApply reboots the node so that the BMC applies pending changes
// (what: "its BIOS settings", ...; Ironic's reboot_to_finish_step). A node that was off is powered off
// again afterwards, so the step leaves power as it found it (unless it has
// disable_power_off, which forbids powering it off).
func (d *Driver) rebootToApply(ctx context.Context, t *driver.Task, what string) error {
	was, err := d.PowerState(ctx, t)
	if err != nil {
		return err
	}
	if err := d.SetPowerState(ctx, t, fsm.Rebooting); err != nil {
		return fmt.Errorf("rebooting node %s to apply %s: %w", t.Node.UUID, what, err)
	}
	t.Node.PowerState = fsm.PowerOn
	if was == fsm.PowerOff && !t.Node.DisablePowerOff {
		if err := d.SetPowerState(ctx, t, fsm.PowerOff); err != nil {
			return err
		}
		t.Node.PowerState = fsm.PowerOff
	}
	return nil
}
