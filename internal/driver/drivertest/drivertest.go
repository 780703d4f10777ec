// Package drivertest is the conformance suite every power and management
// implementation passes: power on, off, reboot and status, the boot device
// round trip, out-of-band inspection when the driver has it, and clean errors — never containing the password — for bad
// credentials and for a BMC that does not answer. Each driver's tests call
// Run with a Target pointing at a BMC (an emulator, ipmi_sim, or nothing).
package drivertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Target is a driver under test and the nodes that reach its BMC.
type Target struct {
	Power      driver.Power
	Management driver.Management // nil skips the boot device tests

	// Good returns a node whose driver_info reaches a healthy BMC with the
	// right credentials. Each call may return the same BMC.
	Good func(t *testing.T) *model.Node
	// BadCredentials returns a node of the same BMC with a wrong password
	// (nil skips the test).
	BadCredentials func(t *testing.T) *model.Node
	// Unreachable returns a node whose BMC address is a closed loopback port
	// (nil skips the test).
	Unreachable func(t *testing.T) *model.Node
	// Missing returns a node whose driver_info lacks a required field, and
	// the field's name (nil skips the test).
	Missing func(t *testing.T) (*model.Node, string)
	// Secrets must never appear in an error text.
	Secrets []string

	// Inspect, when set, runs out-of-band inspection of a Good node;
	// Inspected judges its outcome (the BMC decides what a right answer is:
	// properties found, or Ironic's failure naming what it lacks).
	Inspect   driver.Inspect
	Inspected func(t *testing.T, task *driver.Task, err error)

	SoftPower          bool          // soft power off and soft reboot are supported
	PersistentReadback bool          // BootDevice reports Persistent as set
	BootDevices        []string      // devices to round-trip (default pxe, disk)
	ErrorTimeout       time.Duration // bound on the error cases (default 30 s)
}

// verifier is the optional check "manage" runs (conductor.Verifier).
type verifier interface {
	Verify(ctx context.Context, t *driver.Task) error
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, tg Target) {
	if tg.ErrorTimeout <= 0 {
		tg.ErrorTimeout = 30 * time.Second
	}
	if len(tg.BootDevices) == 0 {
		tg.BootDevices = []string{"pxe", "disk"}
	}
	t.Run("validate", func(t *testing.T) { testValidate(t, tg) })
	t.Run("power", func(t *testing.T) { testPower(t, tg) })
	if tg.SoftPower {
		t.Run("soft power", func(t *testing.T) { testSoftPower(t, tg) })
	}
	if tg.Management != nil {
		t.Run("boot device", func(t *testing.T) { testBootDevice(t, tg) })
	}
	if tg.Inspect != nil {
		t.Run("inspect", func(t *testing.T) { testInspect(t, tg) })
	}
	if tg.BadCredentials != nil {
		t.Run("bad credentials", func(t *testing.T) { testFailing(t, tg, tg.BadCredentials(t)) })
	}
	if tg.Unreachable != nil {
		t.Run("unreachable", func(t *testing.T) { testFailing(t, tg, tg.Unreachable(t)) })
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func testValidate(t *testing.T, tg Target) {
	if err := tg.Power.Validate(&driver.Task{Node: tg.Good(t)}); err != nil {
		t.Fatalf("Validate(good node) = %v", err)
	}
	if tg.Missing == nil {
		return
	}
	n, field := tg.Missing(t)
	err := tg.Power.Validate(&driver.Task{Node: n})
	if err == nil || !strings.Contains(err.Error(), field) {
		t.Fatalf("Validate(node without %s) = %v, want an error naming %s", field, err, field)
	}
	noSecret(t, tg, err)
}

func setAndRead(t *testing.T, tg Target, task *driver.Task, target string) {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	if err := tg.Power.SetPowerState(ctx, task, target); err != nil {
		t.Fatalf("SetPowerState(%s) = %v", target, err)
	}
	want := fsm.PowerResult(target)
	got, err := tg.Power.PowerState(ctx, task)
	if err != nil || got != want {
		t.Fatalf("after %s: PowerState = %q, %v; want %q", target, got, err, want)
	}
}

func testPower(t *testing.T, tg Target) {
	task := &driver.Task{Node: tg.Good(t)}
	if v, ok := tg.Power.(verifier); ok {
		if err := v.Verify(ctxFor(t, time.Minute), task); err != nil {
			t.Fatalf("Verify(good node) = %v", err)
		}
	}
	for _, target := range []string{fsm.PowerOn, fsm.PowerOn, fsm.PowerOff, fsm.PowerOff, fsm.Rebooting, fsm.Rebooting, fsm.PowerOff} {
		setAndRead(t, tg, task, target)
	}
	// rebooting a node that is off leaves it on
	setAndRead(t, tg, task, fsm.Rebooting)
	setAndRead(t, tg, task, fsm.PowerOff)
}

func testSoftPower(t *testing.T, tg Target) {
	task := &driver.Task{Node: tg.Good(t)}
	for _, target := range []string{fsm.PowerOn, fsm.SoftPowerOff, fsm.SoftRebooting, fsm.SoftRebooting, fsm.SoftPowerOff} {
		setAndRead(t, tg, task, target)
	}
}

func testBootDevice(t *testing.T, tg Target) {
	task := &driver.Task{Node: tg.Good(t)}
	ctx := ctxFor(t, 2*time.Minute)
	supported, err := tg.Management.SupportedBootDevices(ctx, task)
	if err != nil {
		t.Fatalf("SupportedBootDevices = %v", err)
	}
	for _, want := range []string{"pxe", "disk"} {
		if !contains(supported, want) {
			t.Errorf("SupportedBootDevices = %v, lacks %s", supported, want)
		}
	}
	for _, dev := range tg.BootDevices {
		for _, persistent := range []bool{false, true} {
			set := driver.BootDevice{Device: dev, Persistent: persistent}
			if err := tg.Management.SetBootDevice(ctx, task, set); err != nil {
				t.Fatalf("SetBootDevice(%+v) = %v", set, err)
			}
			got, err := tg.Management.BootDevice(ctx, task)
			if err != nil {
				t.Fatalf("BootDevice after %+v = %v", set, err)
			}
			if got.Device != dev || (tg.PersistentReadback && got.Persistent != persistent) {
				t.Errorf("BootDevice after SetBootDevice(%+v) = %+v", set, got)
			}
		}
	}
}

func testInspect(t *testing.T, tg Target) {
	if tg.Inspected == nil {
		t.Fatal("Target.Inspect is set without Target.Inspected")
	}
	task := &driver.Task{Node: tg.Good(t)}
	if err := tg.Inspect.Validate(task); err != nil {
		t.Fatalf("inspect Validate(good node) = %v", err)
	}
	res, err := tg.Inspect.Inspect(ctxFor(t, 2*time.Minute), task)
	if err == nil && res != driver.Done {
		t.Errorf("Inspect = %v, want Done (out-of-band inspection is synchronous)", res)
	}
	if err != nil {
		noSecret(t, tg, err)
	}
	tg.Inspected(t, task, err)
}

// testFailing: every call on a node whose BMC refuses or ignores it fails
// within ErrorTimeout, with an error that names no secret.
func testFailing(t *testing.T, tg Target, n *model.Node) {
	if err := tg.Power.Validate(&driver.Task{Node: n}); err != nil {
		t.Fatalf("Validate = %v; the failure must come from the BMC, not from driver_info", err)
	}
	task := &driver.Task{Node: n}
	check := func(what string, call func(ctx context.Context) error) {
		t.Helper()
		start := time.Now()
		err := call(ctxFor(t, tg.ErrorTimeout+30*time.Second))
		if err == nil {
			t.Fatalf("%s succeeded", what)
		}
		if d := time.Since(start); d > tg.ErrorTimeout {
			t.Errorf("%s took %s to fail (bound %s)", what, d, tg.ErrorTimeout)
		}
		noSecret(t, tg, err)
		t.Logf("%s: %v", what, err)
	}
	check("PowerState", func(ctx context.Context) error { _, err := tg.Power.PowerState(ctx, task); return err })
	check("SetPowerState", func(ctx context.Context) error { return tg.Power.SetPowerState(ctx, task, fsm.PowerOn) })
	if v, ok := tg.Power.(verifier); ok {
		check("Verify", func(ctx context.Context) error { return v.Verify(ctx, task) })
	}
	if tg.Management != nil {
		check("BootDevice", func(ctx context.Context) error { _, err := tg.Management.BootDevice(ctx, task); return err })
	}
	if tg.Inspect != nil {
		check("Inspect", func(ctx context.Context) error { _, err := tg.Inspect.Inspect(ctx, task); return err })
	}
}

func noSecret(t *testing.T, tg Target, err error) {
	t.Helper()
	for _, s := range tg.Secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("error text contains a secret: %v", err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
