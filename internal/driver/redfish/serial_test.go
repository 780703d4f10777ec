package redfish_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
)

// solCall is what the serial console asked the SOL opener for.
type solCall struct {
	host       string
	port       int
	user, pass string
}

type pipeRWC struct {
	io.Reader
	io.Writer
}

func (pipeRWC) Close() error { return nil }

// TestSerialConsoleUsesTheSystemsIPMI: redfish-serial reads the system's
// SerialConsole and opens SOL at its IPMI port on the BMC's host with the
// Redfish account; a system without IPMI, a password IPMI cannot carry and
// a failing SOL each give an error that says so without the password.
func TestSerialConsoleUsesTheSystemsIPMI(t *testing.T) {
	var got []solCall
	solErr := error(nil)
	sol := func(_ context.Context, host string, port int, user, pass string) (io.ReadWriteCloser, error) {
		got = append(got, solCall{host, port, user, pass})
		if solErr != nil {
			return nil, solErr
		}
		return pipeRWC{strings.NewReader("boot"), io.Discard}, nil
	}
	sc := fastDriver().SerialConsole(sol)
	ctx := context.Background()

	e := startEmulator(t, bmcemu.Config{Count: 2, IPMI: true})
	n := node(e, "node-02", testPassword, "")
	if err := sc.Validate(&driver.Task{Node: n}); err != nil {
		t.Fatal(err)
	}
	if info := sc.ConsoleInfo(n); info["type"] != "websocket" || info["url"] != "/v1/nodes/"+n.UUID+"/console/ws" {
		t.Errorf("console_info %v", info)
	}
	rw, err := sc.OpenConsole(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rw); string(b) != "boot" {
		t.Errorf("read %q from the opened console", b)
	}
	want := solCall{"127.0.0.1", e.Machine("node-02").Status().IPMIPort, "admin", testPassword}
	if len(got) != 1 || got[0] != want {
		t.Errorf("SOL opened with %+v, want %+v", got, want)
	}

	solErr = errors.New("RAKP failed for password " + testPassword)
	if _, err := sc.OpenConsole(ctx, n); err == nil || strings.Contains(err.Error(), testPassword) || !strings.Contains(err.Error(), "IPMI Serial-over-LAN") {
		t.Errorf("a failing SOL: %v", err)
	}

	noIPMI := startEmulator(t, bmcemu.Config{Count: 1})
	got = nil
	if _, err := sc.OpenConsole(ctx, node(noIPMI, "node-01", testPassword, "")); err == nil ||
		!strings.Contains(err.Error(), "offers no serial console") || len(got) != 0 {
		t.Errorf("a system without IPMI: %v (SOL calls %v)", err, got)
	}

	long := "a-Redfish-password-of-30-bytes"
	longPW := startEmulator(t, bmcemu.Config{Count: 1, IPMI: true, Password: long})
	if _, err := sc.OpenConsole(ctx, node(longPW, "node-01", long, "")); err == nil ||
		!strings.Contains(err.Error(), "longer than IPMI's 20 bytes") || strings.Contains(err.Error(), long) || len(got) != 0 {
		t.Errorf("a password IPMI cannot carry: %v (SOL calls %v)", err, got)
	}

	if err := sc.Validate(&driver.Task{Node: node(e, "node-02", testPassword, "kerberos")}); err == nil {
		t.Error("Validate accepted a bad redfish_auth_type")
	}
}
