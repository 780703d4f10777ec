package ipmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/transport"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// Console interface names: Anvil's Serial-over-LAN console, served over the
// API's WebSocket, and Ironic's ipmitool-socat, whose console_info a
// client expecting socat can use (type "socat", a tcp:// URL: the console
// service listens on ipmi_terminal_port).
const (
	SOLName   = "ipmi-sol"
	SocatName = "ipmitool-socat"
)

// solInstance is the SOL payload instance Anvil activates (the BMC's
// serial port; ipmitool's default).
const solInstance = 1

// Console is the ipmi hardware type's console interface: IPMI v2.0
// Serial-over-LAN (payload type 1 over the RMCP+ session, with the
// session's integrity and confidentiality) through go-ipmi.
type Console struct {
	d    *Driver
	name string
	// SocatHost is the address the socat flavour's console_info names
	// (Ironic's [console]socat_address).
	SocatHost string
	// PollInterval is how often the BMC is polled for output (50 ms).
	PollInterval time.Duration
}

// Console returns the console interface called name (SOLName or SocatName).
func (d *Driver) Console(name string) *Console {
	return &Console{d: d, name: name, SocatHost: "127.0.0.1", PollInterval: 50 * time.Millisecond}
}

var _ driver.Console = (*Console)(nil)

// Validate checks driver_info (the socat flavour needs ipmi_terminal_port).
func (c *Console) Validate(t *driver.Task) error {
	n := t.Node
	if _, err := parseInfo(n); err != nil {
		return err
	}
	if c.name == SocatName {
		if _, err := TerminalPort(n); err != nil {
			return err
		}
	}
	return nil
}

// TerminalPort is driver_info's ipmi_terminal_port: the TCP port the socat
// flavour serves the console on.
func TerminalPort(n *model.Node) (int, error) {
	v, ok := n.DriverInfo[KeyTerminalPort]
	if !ok || v == nil {
		return 0, fmt.Errorf("Missing 'ipmi_terminal_port' parameter in node's driver_info.")
	}
	var p int
	switch x := v.(type) {
	case float64:
		p = int(x)
		if float64(p) != x {
			p = -1
		}
	case int:
		p = x
	case string:
		var err error
		if p, err = strconv.Atoi(x); err != nil {
			p = -1
		}
	default:
		p = -1
	}
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("Invalid port %v in node's driver_info: ipmi_terminal_port must be an integer from 1 to 65535.", v)
	}
	return p, nil
}

// ConsoleInfo is {"type": "websocket", "url": API path} for ipmi-sol, and
// Ironic's {"type": "socat", "url": "tcp://host:port"} for ipmitool-socat.
func (c *Console) ConsoleInfo(n *model.Node) map[string]any {
	if c.name == SocatName {
		p, _ := TerminalPort(n)
		return map[string]any{"type": "socat", "url": "tcp://" + net.JoinHostPort(c.SocatHost, strconv.Itoa(p))}
	}
	return map[string]any{"type": "websocket", "url": driver.ConsoleWSPath(n.UUID)}
}

// OpenConsole opens an RMCP+ session with the node's BMC and activates the
// SOL payload (see OpenSOL).
func (c *Console) OpenConsole(ctx context.Context, n *model.Node) (io.ReadWriteCloser, error) {
	in, err := parseInfo(n)
	if err != nil {
		return nil, err
	}
	return c.d.openSOL(ctx, in, c.PollInterval)
}

// Endpoint is a BMC's IPMI endpoint known from elsewhere than ipmi_*
// driver_info (a Redfish system's SerialConsole): cipher suite 3 and
// ADMINISTRATOR privilege, as the ipmi defaults.
type Endpoint struct {
	Address            string
	Port               int // 623 when 0
	Username, Password string
}

// OpenSOL opens a Serial-over-LAN console on ep (what the redfish
// hardware type's serial console uses when the system offers IPMI), polling
// the BMC every 50 ms. Its errors name the BMC and user, never the password.
func (d *Driver) OpenSOL(ctx context.Context, ep Endpoint) (io.ReadWriteCloser, error) {
	in := info{address: ep.Address, port: ep.Port, username: ep.Username, password: ep.Password,
		cipherSuite: types.CipherSuiteID3, privLevel: types.PrivilegeLevelAdministrator}
	if in.port == 0 {
		in.port = 623
	}
	return d.openSOL(ctx, in, 50*time.Millisecond)
}

// openSOL opens an RMCP+ session with the BMC and activates the SOL payload
// (deactivating a stale one left by an earlier session, as ipmitool's "sol
// deactivate" before "sol activate").
func (d *Driver) openSOL(ctx context.Context, in info, poll time.Duration) (io.ReadWriteCloser, error) {
	cl, err := client.NewClient(in.address, in.port, in.username, in.password)
	if err != nil {
		return nil, d.describe(in, "sol activate", err)
	}
	cl.WithInterface(client.InterfaceLanplus)
	cl.WithCipherSuiteID(in.cipherSuite)
	cl.WithMaxPrivilegeLevel(in.privLevel)
	cl.WithTimeout(d.cfg.ExchangeTimeout)
	cl.WithRetry(1)
	if err := cl.Connect(ctx); err != nil {
		cl.Close(context.Background()) //nolint:errcheck // the session may not exist
		return nil, d.describe(in, "sol activate", fmt.Errorf("opening a session: %w", err))
	}
	req := &transport.ActivatePayloadRequest{PayloadType: types.PayloadTypeSOL, PayloadInstance: solInstance}
	_, err = cl.ActivatePayload(ctx, req)
	if re, ok := types.IsResponseError(err); ok && re.CompletionCode() == types.CodeActivatePayloadAlreadyActive {
		_, _ = cl.DeactivatePayload(ctx, &transport.DeactivatePayloadRequest{PayloadType: types.PayloadTypeSOL, PayloadInstance: solInstance})
		_, err = cl.ActivatePayload(ctx, req)
	}
	if err != nil {
		cl.Close(context.Background()) //nolint:errcheck // best effort
		return nil, d.describe(in, "sol activate", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &solConn{cl: cl, cancel: cancel, done: make(chan struct{}), timeout: d.cfg.ExchangeTimeout}
	s.outR, s.outW = io.Pipe()
	s.inR, s.inW = io.Pipe()
	go func() {
		defer close(s.done)
		err := cl.SOLStream(sctx, s.inR, s.outW, &client.SOLStreamOptions{PollInterval: poll})
		if err == nil || sctx.Err() != nil {
			err = io.EOF
		} else {
			err = d.describe(in, "sol", err)
		}
		_ = s.outW.CloseWithError(err)
		dctx, dcancel := context.WithTimeout(context.Background(), 3*s.timeout)
		defer dcancel()
		_, _ = cl.DeactivatePayload(dctx, &transport.DeactivatePayloadRequest{PayloadType: types.PayloadTypeSOL, PayloadInstance: solInstance})
		_ = cl.Close(dctx)
	}()
	return s, nil
}

// solConn is an active SOL payload as a byte stream.
type solConn struct {
	cl        *client.Client
	cancel    context.CancelFunc
	done      chan struct{}
	timeout   time.Duration
	outR, inR *io.PipeReader
	outW, inW *io.PipeWriter
	once      sync.Once
}

func (s *solConn) Read(p []byte) (int, error) { return s.outR.Read(p) }

func (s *solConn) Write(p []byte) (int, error) {
	n, err := s.inW.Write(p)
	if errors.Is(err, io.ErrClosedPipe) {
		err = io.EOF
	}
	return n, err
}

// Close ends the stream, deactivates the payload and closes the session
// (waiting for that a few exchange timeouts at most).
func (s *solConn) Close() error {
	s.once.Do(func() {
		s.cancel()
		_ = s.inR.CloseWithError(io.EOF)
		_ = s.outR.Close()
	})
	select {
	case <-s.done:
	case <-time.After(5 * s.timeout):
	}
	return nil
}

// ConsoleListen is the TCP address the console service serves the socat
// flavour's console on (SocatHost:ipmi_terminal_port), "" for ipmi-sol.
func (c *Console) ConsoleListen(n *model.Node) string {
	if c.name != SocatName {
		return ""
	}
	p, err := TerminalPort(n)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(c.SocatHost, strconv.Itoa(p))
}
