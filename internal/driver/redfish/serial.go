package redfish

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// SerialName is the redfish hardware type's serial console interface
// (Anvil's: Ironic master's redfish consoles are redfish-graphical, a VNC
// one, and ipmitool-socat).
const SerialName = "redfish-serial"

// SOLFunc opens an IPMI Serial-over-LAN console on host:port with the
// given account (internal/driver/ipmi's, passed in by the wiring so that
// the two drivers stay apart).
type SOLFunc func(ctx context.Context, host string, port int, username, password string) (io.ReadWriteCloser, error)

// SerialConsole is the redfish-serial console interface: it reads the
// system's SerialConsole (DMTF ComputerSystem v1.13+: IPMI, SSH and Telnet,
// each with ServiceEnabled and Port) each time it connects and, when the
// IPMI service is enabled, opens Serial-over-LAN on the BMC's host (the
// host of redfish_address) at that port (623 when the BMC gives none),
// with the Redfish account (a BMC's accounts serve both protocols). Else,
// when SSH is enabled, it opens an SSH session there (port 22 when none is
// given) with a terminal, types the ConsoleEntryCommand, if any, and
// checks the BMC's host key against driver_info's KeySSHHostKey (required:
// the password is never sent to an unknown key). Telnet is not spoken: a
// system offering only that fails to connect, and says so.
type SerialConsole struct {
	d   *Driver
	sol SOLFunc
}

// SerialConsole returns the redfish-serial console interface opening SOL
// sessions with sol.
func (d *Driver) SerialConsole(sol SOLFunc) *SerialConsole {
	return &SerialConsole{d: d, sol: sol}
}

var _ driver.Console = (*SerialConsole)(nil)

// Validate checks driver_info without contacting the BMC.
func (c *SerialConsole) Validate(t *driver.Task) error {
	n := t.Node
	if _, err := parseInfo(n); err != nil {
		return err
	}
	_, _, err := sshHostKey(n)
	return err
}

// ConsoleInfo is {"type": "websocket", "url": the API's console path}:
// Anvil's console service holds the session and serves it.
func (c *SerialConsole) ConsoleInfo(n *model.Node) map[string]any {
	return map[string]any{"type": "websocket", "url": driver.ConsoleWSPath(n.UUID)}
}

// ipmiPasswordMax is IPMI v2.0's longest password (20 bytes).
const ipmiPasswordMax = 20

// OpenConsole reads the system's SerialConsole and opens IPMI SOL on it, or
// SSH when that is all it offers.
func (c *SerialConsole) OpenConsole(ctx context.Context, n *model.Node) (io.ReadWriteCloser, error) {
	in, err := parseInfo(n)
	if err != nil {
		return nil, err
	}
	sys, err := c.d.system(ctx, n)
	if err != nil {
		return nil, err
	}
	sc := sys.SerialConsole
	u, err := url.Parse(in.address)
	if err != nil {
		return nil, err // parseInfo has checked it
	}
	if !sc.IPMI.ServiceEnabled && sc.SSH.ServiceEnabled {
		port := sc.SSH.Port
		if port <= 0 || port > 65535 {
			port = 22
		}
		rw, err := c.openSSH(ctx, in, n, u.Hostname(), sshConsole{port: port, entry: sc.SSH.ConsoleEntryCommand})
		if err != nil {
			return nil, fmt.Errorf("Redfish system %s: %w", sys.ODataID, err)
		}
		return rw, nil
	}
	if !sc.IPMI.ServiceEnabled {
		if sc.Telnet.ServiceEnabled {
			return nil, fmt.Errorf("Redfish system %s on BMC %s offers its serial console over Telnet only; the %s console interface speaks IPMI Serial-over-LAN and SSH: enable one of them on the BMC",
				sys.ODataID, in.address, SerialName)
		}
		return nil, fmt.Errorf("Redfish system %s on BMC %s offers no serial console (SerialConsole.IPMI and SSH are not enabled): enable IPMI Serial-over-LAN or the SSH serial console on the BMC", sys.ODataID, in.address)
	}
	if len(in.password) > ipmiPasswordMax {
		return nil, fmt.Errorf("the Redfish password of user %q is longer than IPMI's %d bytes: IPMI Serial-over-LAN on BMC %s cannot use it", in.username, ipmiPasswordMax, in.address)
	}
	port := sc.IPMI.Port
	if port <= 0 || port > 65535 {
		port = 623
	}
	rw, err := c.sol(ctx, u.Hostname(), port, in.username, in.password)
	if err != nil {
		return nil, fmt.Errorf("Redfish system %s: IPMI Serial-over-LAN: %s", sys.ODataID, Scrub(err.Error(), in.password))
	}
	return rw, nil
}
