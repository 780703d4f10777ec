package ipmi_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/drivertest"
	"github.com/anvil-metal/anvil/internal/model"
)

// chassisScript is ipmi_sim's chassis_control program: it keeps power and
// boot device in files of the directory given as its first argument.
const chassisScript = `#!/bin/sh
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

// startIPMISim runs OpenIPMI's ipmi_sim (Debian openipmi) as one BMC on a
// free loopback port and returns the port. Outside CI a missing ipmi_sim
// skips the test; scripts/test.sh installs it.
func startIPMISim(t *testing.T) int {
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
	for _, d := range []string{state, filepath.Join(dir, "persist")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "chassis.sh")
	if err := os.WriteFile(script, []byte(chassisScript), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	lan := fmt.Sprintf(`name "anvil-test"
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
chassis_control "%s %s"
user 2 true "admin" "%s" admin 10 none md2 md5 straight
`, port, script, state, testPassword)
	emu := "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nsel_enable 0x20 1000 0x0a\nmc_enable 0x20\n"
	lanPath, emuPath := filepath.Join(dir, "lan.conf"), filepath.Join(dir, "bmc.emu")
	if err := os.WriteFile(lanPath, []byte(lan), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(emuPath, []byte(emu), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-n", "-c", lanPath, "-f", emuPath, "-s", filepath.Join(dir, "persist"))
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	// wait until it answers
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
		time.Sleep(100 * time.Millisecond)
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
