package redfish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/drivertest"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/testbin"
)

const testPassword = "s3cret-Redfish-pw"

func startEmulator(t *testing.T, cfg bmcemu.Config) *bmcemu.Emulator {
	t.Helper()
	if cfg.Password == "" {
		cfg.Password = testPassword
	}
	e, err := bmcemu.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// fastDriver retries quickly so error cases stay short.
func fastDriver() *redfish.Driver {
	return redfish.New(redfish.Config{Attempts: 3, RetryInterval: 20 * time.Millisecond, Timeout: 5 * time.Second,
		PowerTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond, MediaTimeout: 300 * time.Millisecond})
}

func node(e *bmcemu.Emulator, id, password, auth string) *model.Node {
	return &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Driver: "redfish", DriverInfo: model.JSON{
		"redfish_address": e.URL(), "redfish_system_id": "/redfish/v1/Systems/" + id,
		"redfish_username": "admin", "redfish_password": password, "redfish_auth_type": auth,
	}}
}

// closedPort returns a loopback address where connections are refused
// (testbin.RefusedAddr holds the port while the test runs).
func closedPort(t *testing.T) string { return testbin.RefusedAddr(t) }

func TestConformance(t *testing.T) {
	for _, auth := range []string{"basic", "session", "auto"} {
		t.Run(auth, func(t *testing.T) {
			e := startEmulator(t, bmcemu.Config{Count: 2})
			d := fastDriver()
			drivertest.Run(t, drivertest.Target{
				Power: d, Management: d,
				Good:           func(*testing.T) *model.Node { return node(e, "node-01", testPassword, auth) },
				BadCredentials: func(*testing.T) *model.Node { return node(e, "node-01", "wrong-password", auth) },
				Unreachable: func(t *testing.T) *model.Node {
					n := node(e, "node-01", testPassword, auth)
					n.DriverInfo["redfish_address"] = "http://" + closedPort(t)
					return n
				},
				Missing: func(*testing.T) (*model.Node, string) {
					n := node(e, "node-01", testPassword, auth)
					delete(n.DriverInfo, "redfish_address")
					return n, "redfish_address"
				},
				Secrets:            []string{testPassword, "wrong-password"},
				SoftPower:          true,
				PersistentReadback: true,
				BootDevices:        []string{"pxe", "disk", "cdrom", "bios"},
				ErrorTimeout:       10 * time.Second,
			})
		})
	}
}

func TestErrorsAreClassified(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1})
	d := fastDriver()
	ctx := context.Background()
	_, err := d.PowerState(ctx, &driver.Task{Node: node(e, "node-01", "nope", "basic")})
	if !errors.Is(err, redfish.ErrAuth) {
		t.Errorf("wrong password: %v, want ErrAuth", err)
	}
	_, err = d.PowerState(ctx, &driver.Task{Node: node(e, "node-99", testPassword, "basic")})
	if !errors.Is(err, redfish.ErrNotFound) || !strings.Contains(err.Error(), "node-99") {
		t.Errorf("unknown system: %v, want ErrNotFound naming node-99", err)
	}
	n := node(e, "node-01", testPassword, "basic")
	n.DriverInfo["redfish_address"] = "http://" + closedPort(t)
	_, err = d.PowerState(ctx, &driver.Task{Node: n})
	if !errors.Is(err, redfish.ErrUnreachable) {
		t.Errorf("closed port: %v, want ErrUnreachable", err)
	}
}

func TestTransientFailuresAreRetried(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1, Seed: 42})
	d := redfish.New(redfish.Config{Attempts: 10, RetryInterval: time.Millisecond, Timeout: 5 * time.Second})
	task := &driver.Task{Node: node(e, "node-01", testPassword, "basic")}
	e.SetKnobs("", func(k *bmcemu.Knobs) { k.FailureRate = 0.5 })
	for i := 0; i < 20; i++ {
		if _, err := d.PowerState(context.Background(), task); err != nil {
			t.Fatalf("read %d with 50%% transient failures: %v", i, err)
		}
	}
	e.SetKnobs("", func(k *bmcemu.Knobs) { k.FailureRate = 1 })
	before := e.Machine("node-01").Status().Calls
	_, err := d.PowerState(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("always failing BMC: %v, want the 503", err)
	}
	if calls := e.Machine("node-01").Status().Calls - before; calls != 10 {
		t.Errorf("always failing BMC was called %d times, want 10 (Attempts)", calls)
	}
}

func TestDeadAndRejectingBMC(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 2})
	d := fastDriver()
	e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = true })
	e.SetKnobs("node-02", func(k *bmcemu.Knobs) { k.RejectAuth = true })
	_, err := d.PowerState(context.Background(), &driver.Task{Node: node(e, "node-01", testPassword, "basic")})
	if !errors.Is(err, redfish.ErrUnreachable) {
		t.Errorf("dead BMC: %v, want ErrUnreachable", err)
	}
	err = d.Verify(context.Background(), &driver.Task{Node: node(e, "node-02", testPassword, "session")})
	if !errors.Is(err, redfish.ErrAuth) || strings.Contains(err.Error(), testPassword) {
		t.Errorf("rejecting BMC: %v, want ErrAuth without the password", err)
	}
}

func TestSessionIsReusedAndRenewed(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1})
	d := fastDriver()
	task := &driver.Task{Node: node(e, "node-01", testPassword, "session")}
	for i := 0; i < 3; i++ {
		if _, err := d.PowerState(context.Background(), task); err != nil {
			t.Fatal(err)
		}
	}
	// the BMC forgets sessions when it stops accepting the account; once it
	// accepts it again the driver logs in anew
	e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.RejectAuth = true })
	if _, err := d.PowerState(context.Background(), task); !errors.Is(err, redfish.ErrAuth) {
		t.Fatalf("rejected: %v", err)
	}
	e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.RejectAuth = false })
	if _, err := d.PowerState(context.Background(), task); err != nil {
		t.Fatalf("accepted again: %v", err)
	}
}

func TestOnlySystemNeedsNoSystemID(t *testing.T) {
	one := startEmulator(t, bmcemu.Config{Count: 1})
	d := fastDriver()
	n := node(one, "node-01", testPassword, "auto")
	delete(n.DriverInfo, "redfish_system_id")
	if err := d.SetPowerState(context.Background(), &driver.Task{Node: n}, fsm.PowerOn); err != nil {
		t.Fatal(err)
	}
	if !one.Machine("node-01").PoweredOn() {
		t.Error("machine is off")
	}
	two := startEmulator(t, bmcemu.Config{Count: 2})
	n = node(two, "node-01", testPassword, "auto")
	delete(n.DriverInfo, "redfish_system_id")
	if _, err := d.PowerState(context.Background(), &driver.Task{Node: n}); err == nil || !strings.Contains(err.Error(), "redfish_system_id") {
		t.Errorf("two systems, no id: %v, want an error naming redfish_system_id", err)
	}
}

func TestBootModeFollowsTheNode(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1})
	d := fastDriver()
	n := node(e, "node-01", testPassword, "basic")
	n.Properties = model.JSON{"capabilities": "boot_mode:bios"}
	task := &driver.Task{Node: n}
	if err := d.SetBootDevice(context.Background(), task, driver.BootDevice{Device: "pxe"}); err != nil {
		t.Fatal(err)
	}
	if m, err := d.BootMode(context.Background(), task); err != nil || m != "bios" {
		t.Fatalf("BootMode = %q, %v; want bios", m, err)
	}
	if err := d.SetBootMode(context.Background(), task, "uefi"); err != nil {
		t.Fatal(err)
	}
	st := e.Machine("node-01").Status()
	if st.BootMode != "UEFI" || st.BootTarget != "Pxe" || st.BootEnabled != "Once" {
		t.Errorf("machine boot = %+v", st)
	}
}

func TestOnceOverrideIsConsumedByBoot(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1})
	d := fastDriver()
	task := &driver.Task{Node: node(e, "node-01", testPassword, "basic")}
	ctx := context.Background()
	if err := d.SetBootDevice(ctx, task, driver.BootDevice{Device: "pxe"}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPowerState(ctx, task, fsm.PowerOn); err != nil {
		t.Fatal(err)
	}
	bd, err := d.BootDevice(ctx, task)
	if err != nil || bd.Device != "" {
		t.Errorf("after booting once from pxe: %+v, %v; want no override", bd, err)
	}
}
