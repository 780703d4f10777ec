package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	ipmitransport "github.com/bougou/go-ipmi/pkg/command/transport"
	ipmitypes "github.com/bougou/go-ipmi/pkg/types"
	"github.com/coder/websocket"
	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/bmcemu/emutest"
	"github.com/anvil-metal/anvil/internal/cli"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// waitFor polls cond (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// waitWithin polls cond for d at most.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// wsViewer is a console WebSocket client collecting what it receives.
type wsViewer struct {
	conn     *websocket.Conn
	out      syncBuffer
	mu       sync.Mutex
	statuses []bool // read_only of each status message
	end      string
	closed   chan struct{}
}

func dialConsole(t *testing.T, url string) *wsViewer {
	t.Helper()
	var conn *websocket.Conn
	waitFor(t, "the console WebSocket", func() bool {
		c, _, err := websocket.Dial(t.Context(), url, nil)
		conn = c
		return err == nil
	})
	v := &wsViewer{conn: conn, closed: make(chan struct{})}
	t.Cleanup(func() { conn.CloseNow() })
	go func() {
		defer close(v.closed)
		for {
			typ, p, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				v.out.Write(p)
				continue
			}
			var m struct {
				Type     string `json:"type"`
				ReadOnly bool   `json:"read_only"`
				Reason   string `json:"reason"`
			}
			_ = json.Unmarshal(p, &m)
			v.mu.Lock()
			switch m.Type {
			case "status":
				v.statuses = append(v.statuses, m.ReadOnly)
			case "end":
				v.end = m.Reason
			}
			v.mu.Unlock()
		}
	}()
	return v
}

func (v *wsViewer) readOnly() (bool, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.statuses) == 0 {
		return false, false
	}
	return v.statuses[len(v.statuses)-1], true
}

func (v *wsViewer) typeIn(t *testing.T, s string) {
	t.Helper()
	if err := v.conn.Write(t.Context(), websocket.MessageBinary, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleIPMISOL: an ipmi node with the ipmi-sol console interface on
// OpenIPMI's ipmi_sim, whose SOL is a serial peer on TCP. Enabling the
// console gives a ws:// console_info; the first WebSocket viewer sees the
// machine's output and types into it; `anvil node console` attaches as a
// second, read-only viewer and leaves with ~.; `anvil node console-log`
// prints what was recorded; disabling the console ends the viewer.
func TestConsoleIPMISOL(t *testing.T) {
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-console", "sol-pw-123", "tcp:"+serial.Addr)
	s := serve(t)
	drv := s.do("GET", "/v1/drivers/ipmi", "", 200)
	if fmt.Sprint(drv["enabled_console_interfaces"]) != "[no-console ipmitool-socat ipmi-sol]" || drv["default_console_interface"] != "no-console" {
		t.Errorf("GET /v1/drivers/ipmi: console %v, default %v", drv["enabled_console_interfaces"], drv["default_console_interface"])
	}
	di := fmt.Sprintf(`{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123"}`, port, ipmisim.User)
	node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmi-sol","driver_info":`+di+`}`, 201)["uuid"].(string)
	path := "/v1/nodes/" + node + "/states/console"
	if st := s.do("GET", path, "", 200); st["console_enabled"] != false || st["console_info"] != nil {
		t.Fatalf("before enabling: %v", st)
	}
	s.do("PUT", path, `{"enabled": true}`, 202)
	st := s.do("GET", path, "", 200)
	info, _ := st["console_info"].(map[string]any)
	wantURL := "ws://" + strings.TrimPrefix(s.base, "http://") + "/v1/nodes/" + node + "/console/ws"
	if st["console_enabled"] != true || info["type"] != "websocket" || info["url"] != wantURL {
		t.Fatalf("console state %v, want a websocket at %s", st, wantURL)
	}

	a := dialConsole(t, wantURL)
	waitFor(t, "the first viewer's status", func() bool { ro, ok := a.readOnly(); return ok && !ro })
	// The machine prints until the output reaches the viewer (the BMC's
	// SOL may still be connecting to the serial).
	waitFor(t, "the machine's output", func() bool {
		serial.Write([]byte("Booting Linux\r\n"))
		return strings.Contains(a.out.String(), "Booting Linux")
	})
	a.typeIn(t, "root\r")
	waitFor(t, "the echo of what was typed", func() bool { return strings.Contains(a.out.String(), "echo: root") })

	// The CLI attaches as a second viewer: read-only.
	stdinR, stdinW := io.Pipe()
	var stdout, stderr syncBuffer
	root := &cobra.Command{Use: "anvil", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(cli.Commands(cli.Env{Stdout: &stdout, Stderr: &stderr, Stdin: stdinR,
		Getenv: func(k string) string { return map[string]string{"ANVIL_URL": s.base}[k] }})...)
	root.SetArgs([]string{"node", "console", node})
	cliDone := make(chan error, 1)
	go func() { cliDone <- root.ExecuteContext(t.Context()) }()
	waitFor(t, "the CLI's read-only notice", func() bool { return strings.Contains(stderr.String(), "read-only") })
	waitFor(t, "output at the CLI", func() bool {
		serial.Write([]byte("second line\r\n"))
		return strings.Contains(stdout.String(), "second line")
	})
	if _, err := stdinW.Write([]byte("intruder\r")); err != nil {
		t.Fatal(err)
	}
	a.typeIn(t, "owner\r")
	waitFor(t, "the read-write viewer's line", func() bool { return strings.Contains(a.out.String(), "echo: owner") })
	for _, l := range serial.Lines() {
		if strings.Contains(l, "intruder") {
			t.Fatalf("a read-only viewer's keystrokes reached the machine: %q", serial.Lines())
		}
	}
	if _, err := stdinW.Write([]byte("~.")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cliDone:
		if err != nil {
			t.Fatalf("anvil node console: %v (stderr %q)", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("~. did not end anvil node console")
	}

	out, _, err := runCLI(t, map[string]string{"ANVIL_URL": s.base}, "node", "console-log", node)
	if err != nil || !strings.Contains(out, "Booting Linux") || !strings.Contains(out, "echo: root") {
		t.Fatalf("console-log: %q %v", out, err)
	}
	if out, _, err := runCLI(t, map[string]string{"ANVIL_URL": s.base}, "node", "console-log", node, "--tail", "5"); err != nil || len(out) != 5 {
		t.Fatalf("console-log --tail 5: %q %v", out, err)
	}

	s.do("PUT", path, `{"enabled": false}`, 202)
	select {
	case <-a.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("disabling the console did not end the viewer")
	}
	a.mu.Lock()
	end := a.end
	a.mu.Unlock()
	if !strings.Contains(end, "disabled") {
		t.Errorf("end reason %q", end)
	}
	if code, msg := s.call("GET", "/v1/nodes/"+node+"/console/ws", ""); code != 400 || !strings.Contains(msg, "not enabled") {
		t.Errorf("attach to a disabled console: %d %s", code, msg)
	}
	if code, msg := s.call("GET", "/v1/nodes/"+node+"/console/log?tail=x", ""); code != 400 {
		t.Errorf("tail=x: %d %s", code, msg)
	}
	// The log outlives the session.
	if code, _ := s.call("GET", "/v1/nodes/"+node+"/console/log", ""); code != 200 {
		t.Errorf("console log after disabling: %d", code)
	}
}

// TestConsoleRecordedWhileInspecting: a node whose console is not enabled
// has its console recorded while it is inspected (nobody attached), the
// output stays readable after the inspection is aborted, and the BMC
// session is released when the node leaves the recorded states.
func TestConsoleRecordedWhileInspecting(t *testing.T) {
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-console", "sol-pw-123", "tcp:"+serial.Addr)
	// boot "fake": the node waits for an agent that never comes (in
	// "inspect wait") without a network boot service.
	s := serveWith(t, func(c *Config) {
		c.Interfaces = driver.Enablement{Interfaces: map[string][]string{"boot": {"fake", "ipxe"}}}
	})
	di := fmt.Sprintf(`{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123","deploy_kernel":"http://127.0.0.1:1/k","deploy_ramdisk":"http://127.0.0.1:1/r"}`, port, ipmisim.User)
	node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmi-sol","boot_interface":"fake","inspect_interface":"agent","driver_info":`+di+`}`, 201)["uuid"].(string)
	logPath := "/v1/nodes/" + node + "/console/log"
	if code, _ := s.call("GET", logPath, ""); code != 404 {
		t.Fatalf("a log before anything was recorded: %d", code)
	}
	s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"manage"}`, 202)
	s.wait(node, "manageable")
	s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"inspect"}`, 202)
	waitFor(t, "the recorded boot output", func() bool {
		serial.Write([]byte("PXE boot attempt\r\n"))
		code, body := s.call("GET", logPath, "")
		return code == 200 && strings.Contains(body, "PXE boot attempt")
	})
	if n := s.do("GET", "/v1/nodes/"+node, "", 200); n["console_enabled"] != false {
		t.Fatalf("console_enabled %v: recording must not enable the console", n["console_enabled"])
	}
	// ipmi spaces its commands to one BMC by 5 s (Ironic's
	// min_command_interval): the power changes take a while.
	waitWithin(t, testTimeout, "inspect wait", func() bool {
		return s.do("GET", "/v1/nodes/"+node, "", 200)["provision_state"] == "inspect wait"
	})
	// The conductor may still hold the node's lock just after it entered
	// inspect wait (409 locked): retried, as Ironic's clients do.
	waitWithin(t, testTimeout, "the abort accepted", func() bool {
		code, body := s.call("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"abort"}`)
		if code != 202 && !(code == 409 && strings.Contains(body, "is locked by host")) {
			t.Fatalf("abort: %d %s", code, body)
		}
		return code == 202
	})
	// The abort moves the node at once; the conductor then powers the
	// machine off (ipmi's 5 s command spacing, stretched on a loaded
	// machine) before it lets go of the node, which is not what this test
	// is about: it reads the state rather than waiting for the node to rest.
	if st := s.do("GET", "/v1/nodes/"+node, "", 200)["provision_state"]; st != "inspect failed" {
		t.Fatalf("provision_state %v after the abort, want inspect failed", st)
	}
	code, body := s.call("GET", logPath, "")
	if code != 200 || !strings.Contains(body, "PXE boot attempt") {
		t.Fatalf("the log after the failure: %d %q", code, body)
	}
	// Released: the BMC lets another client activate SOL.
	waitWithin(t, 3*testTimeout, "the SOL session's release", func() bool { return solFree(t, port, "sol-pw-123") })
}

// solFree reports whether the BMC activates SOL for a new session (no
// other session holds it), and deactivates it again.
func solFree(t *testing.T, port int, password string) bool {
	ctx := t.Context()
	c, err := ipmiclient.NewClient("127.0.0.1", port, ipmisim.User, password)
	if err != nil {
		t.Fatal(err)
	}
	c.WithTimeout(time.Second)
	if err := c.Connect(ctx); err != nil {
		return false
	}
	defer c.Close(ctx)
	req := &ipmitransport.ActivatePayloadRequest{PayloadType: ipmitypes.PayloadTypeSOL, PayloadInstance: 1}
	if _, err := c.ActivatePayload(ctx, req); err != nil {
		return false
	}
	_, _ = c.DeactivatePayload(ctx, &ipmitransport.DeactivatePayloadRequest{PayloadType: ipmitypes.PayloadTypeSOL, PayloadInstance: 1})
	return true
}

// TestConsoleEmulatorVM: the BMC emulator's VM behind its IPMI endpoint's
// SOL. With the console enabled and a viewer attached while the machine is
// off, powering it on through the API shows the VM's boot output (its
// disk's boot sector printing a marker on the serial port).
func TestConsoleEmulatorVM(t *testing.T) { testConsoleEmulatorVM(t, bmcemu.DriverIPMI, ipmi.SOLName) }

// TestConsoleRedfishEmulatorVM: the same through the redfish hardware
// type's redfish-serial console: the emulated system's SerialConsole
// advertises IPMI, and the console is SOL on that port with the Redfish
// account.
func TestConsoleRedfishEmulatorVM(t *testing.T) {
	testConsoleEmulatorVM(t, bmcemu.DriverRedfish, redfish.SerialName)
}

func testConsoleEmulatorVM(t *testing.T, drv, iface string) {
	emu, m := emutest.VM(t, bmcemu.Config{}, "VM-SERIAL-OK")
	st := m.Status()
	di, _ := json.Marshal(emutest.Node(t, emu, drv).DriverInfo)
	s := serve(t)
	if drv == bmcemu.DriverRedfish {
		d := s.do("GET", "/v1/drivers/redfish", "", 200)
		if fmt.Sprint(d["enabled_console_interfaces"]) != "[no-console redfish-serial ipmitool-socat]" || d["default_console_interface"] != "no-console" {
			t.Errorf("GET /v1/drivers/redfish: console %v, default %v", d["enabled_console_interfaces"], d["default_console_interface"])
		}
	}
	node := s.do("POST", "/v1/nodes", `{"driver":"`+drv+`","console_interface":"`+iface+`","driver_info":`+string(di)+`}`, 201)["uuid"].(string)
	s.do("PUT", "/v1/nodes/"+node+"/states/console", `{"enabled": true}`, 202)
	info := s.do("GET", "/v1/nodes/"+node+"/states/console", "", 200)["console_info"].(map[string]any)
	a := dialConsole(t, info["url"].(string))
	waitFor(t, "the viewer's status", func() bool { _, ok := a.readOnly(); return ok })
	s.do("PUT", "/v1/nodes/"+node+"/states/power", `{"target": "power on"}`, 202)
	for deadline := time.Now().Add(testTimeout); !strings.Contains(a.out.String(), "VM-SERIAL-OK"); {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(st.Console)
			t.Fatalf("no boot output on the console (got %q); power %v; console.log %q", a.out.String(),
				s.do("GET", "/v1/nodes/"+node, "", 200)["power_state"], log)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	if code, body := s.call("GET", "/v1/nodes/"+node+"/console/log", ""); code != 200 || !strings.Contains(body, "VM-SERIAL-OK") {
		t.Errorf("console log: %d %q", code, body)
	}
}

// TestConsoleIPMISimQEMU: OpenIPMI's ipmi_sim with its SOL on a qemu VM's
// serial port (lan.conf `sol "tcp:127.0.0.1:PORT"`, qemu's serial a TCP
// server): with the console enabled, the VM's boot output (reset from
// qemu's monitor until it comes: ipmi_sim drops what the serial port sends
// before SOL is active) is recorded and replayed to a WebSocket viewer.
func TestConsoleIPMISimQEMU(t *testing.T) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86")
	dir := t.TempDir()
	disk := filepath.Join(dir, "disk.img")
	img := make([]byte, 1<<20)
	copy(img, bmcemu.BootSector("QEMU-SOL-OK"))
	if err := os.WriteFile(disk, img, 0o644); err != nil {
		t.Fatal(err)
	}
	port := testbin.FreePort(t)
	cmd := exec.Command(qemu, "-accel", "tcg", "-m", "64", "-display", "none", "-nodefaults", "-nic", "none",
		"-serial", fmt.Sprintf("tcp:127.0.0.1:%d,server=on,wait=off", port), "-monitor", "stdio",
		"-drive", "file="+disk+",format=raw,if=none,id=d0", "-device", "virtio-blk-pci,drive=d0,bootindex=1")
	var qlog syncBuffer
	cmd.Stdout, cmd.Stderr = &qlog, &qlog
	monitor, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("qemu output:\n%s", qlog.String())
		}
	})
	waitFor(t, "qemu's serial port", func() bool { return tcpListening(port) })
	bmc := ipmisim.StartSOL(t, "anvil-qemu", "sol-pw-123", fmt.Sprintf("tcp:127.0.0.1:%d", port))
	s := serve(t)
	di := fmt.Sprintf(`{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123"}`, bmc, ipmisim.User)
	node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmi-sol","driver_info":`+di+`}`, 201)["uuid"].(string)
	s.do("PUT", "/v1/nodes/"+node+"/states/console", `{"enabled": true}`, 202)
	info := s.do("GET", "/v1/nodes/"+node+"/states/console", "", 200)["console_info"].(map[string]any)
	last := time.Time{}
	waitWithin(t, testTimeout, "the VM's boot output in the console log", func() bool {
		if time.Since(last) > 2*time.Second {
			_, _ = io.WriteString(monitor, "system_reset\n")
			last = time.Now()
		}
		code, body := s.call("GET", "/v1/nodes/"+node+"/console/log", "")
		return code == 200 && strings.Contains(body, "QEMU-SOL-OK")
	})
	a := dialConsole(t, info["url"].(string)+"?replay=4096")
	waitFor(t, "the boot output replayed to a viewer", func() bool { return strings.Contains(a.out.String(), "QEMU-SOL-OK") })
}

// tcpListening reports whether a socket listens on 127.0.0.1:port
// (/proc/net/tcp), without connecting to it.
func tcpListening(port int) bool {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[1] == want && f[3] == "0A" {
			return true
		}
	}
	return false
}

// TestConsoleSocatIPMISim: Ironic's ipmitool-socat answers
// {"type": "socat", "url": "tcp://127.0.0.1:<ipmi_terminal_port>"}, as
// Nova's serial console proxy expects, and that port carries the SOL
// console both ways until the console is disabled.
func TestConsoleSocatIPMISim(t *testing.T) {
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-socat", "sol-pw-123", "tcp:"+serial.Addr)
	tport := testbin.FreePort(t)
	s := serve(t)
	di := fmt.Sprintf(`{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123","ipmi_terminal_port":%d}`, port, ipmisim.User, tport)
	node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmitool-socat","driver_info":`+di+`}`, 201)["uuid"].(string)
	s.do("PUT", "/v1/nodes/"+node+"/states/console", `{"enabled": true}`, 202)
	info := s.do("GET", "/v1/nodes/"+node+"/states/console", "", 200)["console_info"].(map[string]any)
	want := fmt.Sprintf("tcp://127.0.0.1:%d", tport)
	if info["type"] != "socat" || info["url"] != want {
		t.Fatalf("console_info %v, want socat at %s", info, want)
	}
	var c net.Conn
	waitFor(t, "the console's TCP port", func() bool {
		var err error
		c, err = net.Dial("tcp", strings.TrimPrefix(want, "tcp://"))
		return err == nil
	})
	defer c.Close()
	var out syncBuffer
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(&out, c); close(closed) }()
	waitFor(t, "output on the TCP console", func() bool {
		serial.Write([]byte("socat-line\r\n"))
		return strings.Contains(out.String(), "socat-line")
	})
	if _, err := c.Write([]byte("typed\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the echo on the TCP console", func() bool { return strings.Contains(out.String(), "echo: typed") })
	s.do("PUT", "/v1/nodes/"+node+"/states/console", `{"enabled": false}`, 202)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the TCP console stayed open after disabling")
	}
	// Without ipmi_terminal_port the socat console cannot be enabled.
	n2 := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmitool-socat","driver_info":{"ipmi_address":"127.0.0.1"}}`, 201)["uuid"].(string)
	if code, msg := s.call("PUT", "/v1/nodes/"+n2+"/states/console", `{"enabled": true}`); code != 400 || !strings.Contains(msg, "ipmi_terminal_port") {
		t.Errorf("socat without ipmi_terminal_port: %d %s", code, msg)
	}
}
