package ipmisim

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// User is the BMC's administrator account (user 2).
const User = "admin"

// ChassisScript is a chassis_control program that keeps the power state
// and the boot device in files of the directory given as its first
// argument (power off and default boot device when none are written).
const ChassisScript = `#!/bin/sh
d=$1
shift
while [ $# -gt 0 ] && [ "$1" != get ] && [ "$1" != set ]; do shift; done
op=$1
shift
if [ "$op" = get ]; then
  for p in "$@"; do
    case $p in
      power) echo "power:$(cat "$d/power" 2>/dev/null || echo 0)" ;;
      boot) echo "boot:$(cat "$d/boot" 2>/dev/null || echo default)" ;;
    esac
  done
  exit 0
fi
while [ $# -ge 2 ]; do
  case $1 in
    power) echo "$2" >"$d/power" ;;
    boot) echo "$2" >"$d/boot" ;;
  esac
  shift 2
done
`

// Config describes one simulated BMC.
type Config struct {
	Name     string // the BMC's name
	Port     int    // UDP port on 127.0.0.1
	Password string // of User
	// ChassisControl is the command ipmi_sim runs for chassis control
	// ("script arg"), without quotes; paths must hold no space or comma.
	ChassisControl string
	// SOL, if set, is the serial device ipmi_sim connects SOL to, e.g.
	// "tcp:127.0.0.1:PORT" (a qemu serial or any TCP peer), at 115200.
	SOL string
}

// LANConf is the text of ipmi_sim's -c file for c.
func LANConf(c Config) string {
	return fmt.Sprintf(`name %q
set_working_mc 0x20
startlan 1
  addr 127.0.0.1 %d
  priv_limit admin
  allowed_auths_callback none md2 md5 straight
  allowed_auths_user none md2 md5 straight
  allowed_auths_operator none md2 md5 straight
  allowed_auths_admin none md2 md5 straight
  guid a123456789abcdefa123456789abcdef
endlan
chassis_control "%s"
user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, c.Name, c.Port, c.ChassisControl, User, c.Password) + solLine(c.SOL)
}

func solLine(dev string) string {
	if dev == "" {
		return ""
	}
	return fmt.Sprintf("sol %q 115200\n", dev)
}

// Emu is the text of ipmi_sim's -f file: one BMC management controller
// with a SEL and no device SDRs.
const Emu = "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nsel_enable 0x20 1000 0x0a\nmc_enable 0x20\n"

// Write writes lan.conf and bmc.emu for c into dir and creates dir/persist,
// and returns the arguments to run ipmi_sim with (-n -c -f -s).
func Write(dir string, c Config) ([]string, error) {
	lanPath, emuPath, persist := filepath.Join(dir, "lan.conf"), filepath.Join(dir, "bmc.emu"), filepath.Join(dir, "persist")
	if err := os.WriteFile(lanPath, []byte(LANConf(c)), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(emuPath, []byte(Emu), 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(persist, 0o755); err != nil {
		return nil, err
	}
	return []string{"-n", "-c", lanPath, "-f", emuPath, "-s", persist}, nil
}

// Start runs ipmi_sim with ChassisScript over a fresh state directory on a
// free loopback port, as BMC name with password, until the test ends, and
// returns the port once it answers. A missing ipmi_sim skips the test, or
// fails it in CI (environment variable CI set).
func Start(t testing.TB, name, password string) int {
	t.Helper()
	return StartSOL(t, name, password, "")
}

// StartSOL is Start with the BMC's SOL connected to the serial device sol
// (see Config.SOL).
func StartSOL(t testing.TB, name, password, sol string) int {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "chassis.sh")
	if err := os.WriteFile(script, []byte(ChassisScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return Run(t, dir, Config{Name: name, Password: password, ChassisControl: script + " " + state, SOL: sol})
}

// Run runs ipmi_sim for c (its Port is chosen here: a free loopback UDP
// port) with its files in dir, until the test ends, and returns the port
// once the BMC answers an RMCP presence ping. The probe never binds the
// port itself, and a port another process took between choosing and
// binding is chosen again (a few times). ipmi_sim and what its chassis
// control started are killed as a process group at the end.
func Run(t testing.TB, dir string, c Config) int {
	t.Helper()
	bin := testbin.Need(t, "ipmi_sim", "openipmi")
	for attempt := 1; ; attempt++ {
		c.Port = testbin.FreeUDPPort(t)
		logs, ok := run(t, bin, dir, c)
		if ok {
			return c.Port
		}
		if !strings.Contains(logs, "Address already in use") || attempt == 5 {
			t.Fatalf("ipmi_sim did not answer on 127.0.0.1:%d\n%s", c.Port, logs)
		}
	}
}

// run starts one ipmi_sim and waits (10 s at most) until it answers a
// presence ping or exits; on failure it returns its output.
func run(t testing.TB, bin, dir string, c Config) (string, bool) {
	args, err := Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testbin.Buffer{}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	addr := fmt.Sprintf("127.0.0.1:%d", c.Port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case <-exited:
			return logs.String(), false
		default:
		}
		if Ping(addr, 100*time.Millisecond) == nil {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("ipmi_sim output:\n%s", logs.String())
				}
			})
			return "", true
		}
	}
	stop()
	return logs.String(), false
}

// Ping sends one RMCP/ASF presence ping to addr and waits up to timeout
// for the pong.
func Ping(addr string, timeout time.Duration) error {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// RMCP v1.0, sequence 0xff (no ack), class ASF; ASF IANA 4542,
	// message type 0x80 (presence ping), tag 0x01, no data.
	ping := []byte{0x06, 0x00, 0xff, 0x06, 0x00, 0x00, 0x11, 0xbe, 0x80, 0x01, 0x00, 0x00}
	if _, err := conn.Write(ping); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if n < 9 || buf[3] != 0x06 || buf[8] != 0x40 {
		return fmt.Errorf("not a presence pong: % x", buf[:n])
	}
	return nil
}
