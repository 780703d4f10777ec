package ipmisim

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
`, c.Name, c.Port, c.ChassisControl, User, c.Password)
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
// returns the port once it is bound. A missing ipmi_sim skips the test, or
// fails it in CI (environment variable CI set).
func Start(t testing.TB, name, password string) int {
	t.Helper()
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ipmi_sim not found: scripts/test.sh installs Debian's openipmi")
		}
		t.Skip("ipmi_sim not installed (apt-get install openipmi)")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "chassis.sh")
	if err := os.WriteFile(script, []byte(ChassisScript), 0o755); err != nil {
		t.Fatal(err)
	}
	port := testbin.FreeUDPPort(t)
	args, err := Write(dir, Config{Name: name, Port: port, Password: password, ChassisControl: script + " " + state})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testbin.Buffer{}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("ipmi_sim output:\n%s", logs.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return port // bound by ipmi_sim
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("ipmi_sim did not bind %s\n%s", addr, logs.String())
		}
	}
}
