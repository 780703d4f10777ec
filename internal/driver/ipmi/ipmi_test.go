package ipmi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/drivertest"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/model"
)

const testPassword = "s3cret-IPMI-pw"

// fastDriver keeps the error cases short: no spacing, 2 s of retries.
func fastDriver() *ipmi.Driver {
	return ipmi.New(ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: 2 * time.Second,
		ExchangeTimeout: 300 * time.Millisecond, PowerTimeout: 10 * time.Second, PollInterval: 20 * time.Millisecond})
}

func ipmiNode(addr string, port int, password string) *model.Node {
	return &model.Node{UUID: "7b1d6f8e-2c2a-4f44-9d53-1f2e3d4c5b6a", Driver: "ipmi", DriverInfo: model.JSON{
		"ipmi_address": addr, "ipmi_port": float64(port), "ipmi_username": "admin", "ipmi_password": password,
		"ipmi_cipher_suite": "3",
	}}
}

// closedUDPPort returns a loopback UDP port nothing listens on.
func closedUDPPort(t *testing.T) int {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	return port
}

func startEmulator(t *testing.T, n int) *bmcemu.Emulator {
	t.Helper()
	e, err := bmcemu.Start(context.Background(), bmcemu.Config{Count: n, IPMI: true, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestConformanceEmulator(t *testing.T) {
	e := startEmulator(t, 1)
	port := e.Machine("node-01").Status().IPMIPort
	d := fastDriver()
	drivertest.Run(t, drivertest.Target{
		Power: d, Management: d,
		Good:           func(*testing.T) *model.Node { return ipmiNode("127.0.0.1", port, testPassword) },
		BadCredentials: func(*testing.T) *model.Node { return ipmiNode("127.0.0.1", port, "wrong-password") },
		Unreachable:    func(t *testing.T) *model.Node { return ipmiNode("127.0.0.1", closedUDPPort(t), testPassword) },
		Missing: func(*testing.T) (*model.Node, string) {
			n := ipmiNode("127.0.0.1", port, testPassword)
			delete(n.DriverInfo, "ipmi_address")
			return n, "ipmi_address"
		},
		Secrets:            []string{testPassword, "wrong-password"},
		SoftPower:          true,
		PersistentReadback: true,
		BootDevices:        []string{"pxe", "disk", "cdrom", "bios"},
		ErrorTimeout:       10 * time.Second,
	})
}

func TestBadCredentialsAreNotRetried(t *testing.T) {
	e := startEmulator(t, 1)
	port := e.Machine("node-01").Status().IPMIPort
	d := ipmi.New(ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: time.Minute})
	start := time.Now()
	err := d.Verify(context.Background(), &driver.Task{Node: ipmiNode("127.0.0.1", port, "wrong-password")})
	if !errors.Is(err, ipmi.ErrAuth) {
		t.Fatalf("Verify = %v, want ErrAuth", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("refused credentials took %s: they must not be retried for a minute", time.Since(start))
	}
}

func TestMinCommandIntervalSpacesCalls(t *testing.T) {
	e := startEmulator(t, 1)
	port := e.Machine("node-01").Status().IPMIPort
	d := ipmi.New(ipmi.Config{MinCommandInterval: 150 * time.Millisecond})
	task := &driver.Task{Node: ipmiNode("127.0.0.1", port, testPassword)}
	start := time.Now()
	for i := 0; i < 3; i++ {
		if _, err := d.PowerState(context.Background(), task); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("3 calls took %s, want at least 2 intervals of 150ms", el)
	}
}

func TestRetriesUntilTheBMCAnswers(t *testing.T) {
	e := startEmulator(t, 1)
	port := e.Machine("node-01").Status().IPMIPort
	e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = true })
	go func() {
		time.Sleep(700 * time.Millisecond)
		e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = false })
	}()
	d := ipmi.New(ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: 20 * time.Second, ExchangeTimeout: 200 * time.Millisecond})
	if _, err := d.PowerState(context.Background(), &driver.Task{Node: ipmiNode("127.0.0.1", port, testPassword)}); err != nil {
		t.Fatalf("BMC back after 0.7 s: %v", err)
	}
}

func TestValidate(t *testing.T) {
	d := ipmi.New(ipmi.Config{})
	cases := []struct {
		name string
		di   model.JSON
		want string
	}{
		{"minimal", model.JSON{"ipmi_address": "10.0.0.5"}, ""},
		{"full", model.JSON{"ipmi_address": "bmc1", "ipmi_port": "6230", "ipmi_username": "admin", "ipmi_password": "pw-x",
			"ipmi_cipher_suite": 17.0, "ipmi_priv_level": "operator", "ipmi_terminal_port": 9000.0}, ""},
		{"missing address", model.JSON{"ipmi_username": "admin"}, "Missing the following IPMI credentials in node's driver_info: ['ipmi_address']."},
		{"bad port", model.JSON{"ipmi_address": "x", "ipmi_port": "http"}, "ipmi_port"},
		{"port range", model.JSON{"ipmi_address": "x", "ipmi_port": 70000.0}, "out of range"},
		{"bad suite", model.JSON{"ipmi_address": "x", "ipmi_cipher_suite": 99.0}, "ipmi_cipher_suite"},
		{"bad priv", model.JSON{"ipmi_address": "x", "ipmi_priv_level": "ROOT"}, "Invalid privilege level"},
		{"long password", model.JSON{"ipmi_address": "x", "ipmi_password": strings.Repeat("p", 21)}, "ipmi_password"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := d.Validate(&driver.Task{Node: &model.Node{UUID: "n1", DriverInfo: c.di}})
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate = %v, want %q", err, c.want)
			}
		})
	}
}

// TestReportsProgressWhileRetrying: a BMC that does not answer is reported
// on the task while the call still retries (not only in the error at the
// end of the retry time), naming the BMC and the operation, never the
// password; a BMC that comes back ends the call without an error.
func TestReportsProgressWhileRetrying(t *testing.T) {
	e := startEmulator(t, 1)
	port := e.Machine("node-01").Status().IPMIPort
	e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = true })
	var mu sync.Mutex
	var reports []string
	back := make(chan struct{})
	task := &driver.Task{Node: ipmiNode("127.0.0.1", port, testPassword), Progress: func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, msg)
		if len(reports) == 1 {
			close(back)
		}
	}}
	go func() {
		select {
		case <-back:
		case <-time.After(30 * time.Second):
		}
		e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = false })
	}()
	d := ipmi.New(ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: time.Minute, ExchangeTimeout: 200 * time.Millisecond})
	if _, err := d.PowerState(context.Background(), task); err != nil {
		t.Fatalf("BMC back after the first report: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) == 0 {
		t.Fatal("no progress reported while the BMC was silent")
	}
	want := fmt.Sprintf("IPMI BMC 127.0.0.1:%d has not completed power status", port)
	if !strings.Contains(reports[0], want) || !strings.Contains(reports[0], "retrying for up to 1m0s") {
		t.Errorf("report %q, want it to contain %q and the retry time", reports[0], want)
	}
	for _, r := range reports {
		if strings.Contains(r, testPassword) {
			t.Errorf("a report shows the password: %q", r)
		}
	}
}
