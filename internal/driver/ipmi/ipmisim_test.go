package ipmi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/drivertest"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// startIPMISim runs ipmi_sim as one BMC (internal/testbin/ipmisim) and
// returns its port once the driver gets an answer from it.
func startIPMISim(t *testing.T) int {
	t.Helper()
	port := ipmisim.Start(t, "anvil-test", testPassword)
	d := fastDriver()
	n := ipmiNode("127.0.0.1", port, testPassword)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := d.PowerState(context.Background(), &driver.Task{Node: n})
		if err == nil {
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("ipmi_sim did not answer on 127.0.0.1:%d: %v", port, err)
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
}

func TestConformanceIPMISim(t *testing.T) {
	port := startIPMISim(t)
	d := fastDriver()
	drivertest.Run(t, drivertest.Target{
		Power: d, Management: d,
		Good:           func(*testing.T) *model.Node { return ipmiNode("127.0.0.1", port, testPassword) },
		BadCredentials: func(*testing.T) *model.Node { return ipmiNode("127.0.0.1", port, "wrong-password") },
		Unreachable:    func(t *testing.T) *model.Node { return ipmiNode("127.0.0.1", closedUDPPort(t), testPassword) },
		Secrets:        []string{testPassword, "wrong-password"},
		// ipmi_sim reports boot flags as "next boot only" whatever was set
		PersistentReadback: false,
		BootDevices:        []string{"pxe", "disk"},
		ErrorTimeout:       10 * time.Second,
	})
}

// TestInjectNMIIPMISim: ipmi_sim refuses Chassis Control "pulse
// diagnostic interrupt" (ipmitool power diag) with completion code 0xcc;
// the driver answers Ironic's IPMIFailure at once, without retrying.
func TestInjectNMIIPMISim(t *testing.T) {
	port := startIPMISim(t)
	d := fastDriver()
	err := d.InjectNMI(context.Background(), &driver.Task{Node: ipmiNode("127.0.0.1", port, testPassword)})
	var ce *driver.CallError
	if !errors.As(err, &ce) || ce.Msg != "IPMI call failed: power diag." || !strings.Contains(errors.Unwrap(err).Error(), "0xcc") {
		t.Fatalf("ipmi_sim inject NMI: %v (cause: %v)", err, errors.Unwrap(err))
	}
}

// TestCallsRecorded: with Config.Calls, each operation's outcome is kept
// under the node: a refused password as "auth" (ipmi_sim), a BMC that does
// not answer as "unreachable" (a repeated failure in one slot), a success
// without an error; never the password.
func TestCallsRecorded(t *testing.T) {
	port := startIPMISim(t)
	calls := recent.New[model.BMCCall](8, 10)
	// ipmi_sim answers in its own time on a loaded machine: the calls to
	// it are patient; the dead BMC's give up fast.
	d := ipmi.New(ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: 20 * time.Second, ExchangeTimeout: time.Second, Calls: calls})
	fast := ipmi.New(ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: time.Second, ExchangeTimeout: 200 * time.Millisecond, Calls: calls})
	ctx := context.Background()
	good := ipmiNode("127.0.0.1", port, testPassword)
	if _, err := d.PowerState(ctx, &driver.Task{Node: good}); err != nil {
		t.Fatal(err)
	}
	wrong := ipmiNode("127.0.0.1", port, "wrong-password-1")
	wrong.UUID = "node-wrong"
	if _, err := d.PowerState(ctx, &driver.Task{Node: wrong}); !errors.Is(err, ipmi.ErrAuth) {
		t.Fatalf("wrong password: %v", err)
	}
	dead := ipmiNode("127.0.0.1", closedUDPPort(t), testPassword)
	dead.UUID = "node-dead"
	for range 2 {
		if _, err := fast.PowerState(ctx, &driver.Task{Node: dead}); err == nil {
			t.Fatal("a dead BMC answered")
		}
	}
	if got := calls.Get(good.UUID); len(got) != 1 || got[0].Error != "" || got[0].Op == "" || got[0].Protocol != "ipmi" {
		t.Errorf("success: %+v", got)
	}
	if got := calls.Get("node-wrong"); len(got) != 1 || got[0].Kind != "auth" || strings.Contains(got[0].Error, "wrong-password-1") {
		t.Errorf("refused password: %+v", got)
	}
	if got := calls.Get("node-dead"); len(got) != 1 || got[0].Kind != "unreachable" || got[0].Repeated != 1 || got[0].Attempts < 1 {
		t.Errorf("dead BMC twice: %+v", got)
	}
}
