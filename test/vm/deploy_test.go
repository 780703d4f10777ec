package vm_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

const (
	mib       = 1 << 20
	vmMAC     = "52:54:00:a4:71:01"
	agentPort = 9999
	password  = "vm-e2e-secret"
	// overall bound for enroll → active (two boots with cleaning, IPMI
	// operations spaced by the driver's 5 s minimum command interval)
	overall = 240 * time.Second
)

// chassisScript is ipmi_sim's chassis_control program. Its first argument is
// a state directory holding power and boot files and vm.sh (which starts
// qemu daemonized, writing qemu.pid). Power on starts the VM, power off kills
// it, reset restarts it.
const chassisScript = `#!/bin/sh
d=$1
shift
while [ $# -gt 0 ] && [ "$1" != get ] && [ "$1" != set ]; do shift; done
op=$1
shift
vm_off() {
  if [ -f "$d/qemu.pid" ]; then
    pid=$(cat "$d/qemu.pid")
    kill -9 "$pid" 2>/dev/null
    i=0
    while [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] && [ $i -lt 100 ]; do
      sleep 0.1
      i=$((i+1))
    done
    rm -f "$d/qemu.pid"
    echo "$(date +%s.%N) off" >>"$d/events"
  fi
}
vm_on() {
  vm_off
  echo "$(date +%s.%N) on" >>"$d/events"
  sh "$d/vm.sh" >>"$d/qemu.log" 2>&1 </dev/null
}
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
    power)
      if [ "$2" = 1 ]; then
        [ "$(cat "$d/power" 2>/dev/null)" = 1 ] || vm_on
      else
        vm_off
      fi
      echo "$2" >"$d/power" ;;
    reset)
      [ "$(cat "$d/power" 2>/dev/null)" = 1 ] && vm_on ;;
    boot) echo "$2" >"$d/boot" ;;
  esac
  shift 2
done
exit 0
`

// startBMC runs ipmi_sim on a free loopback UDP port with the chassis
// script over state dir st, and returns the port once it answers.
func startBMC(t *testing.T, dir, st string) int {
	t.Helper()
	script := filepath.Join(dir, "chassis.sh")
	if err := os.WriteFile(script, []byte(chassisScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return ipmisim.Run(t, dir, ipmisim.Config{Name: "anvil-vm", Password: password, ChassisControl: script + " " + st})
}

// TestVMDeployIPMI takes an emulated machine from enroll to active through
// the ipmi hardware type and the direct deploy: ipmi_sim's chassis control
// starts and stops a qemu VM whose initramfs runs the real agent, which
// cleans the disk, then writes the image to it; the disk file must then start
// with the image.
func TestVMDeployIPMI(t *testing.T) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	testbin.Need(t, "ipmi_sim", "openipmi", vmSwitch)
	a := buildRamdisk(t)
	dir, st := vmStateDir(t)

	// The image, on a loopback HTTP server the guest reaches as 10.0.2.101:80.
	image := make([]byte, 16*mib)
	_, _ = rand.Read(image)
	imgPort := serveImage(t, "img.raw", image).Port

	// ipmi_sim, anvil serve and the VM definition.
	bmcPort := startBMC(t, dir, st)
	api := startServe(t, "--sync-power-state-interval", "3600", "--log-level", "debug",
		"--enabled-boot-interfaces", "fake,ipxe,pxe")
	apiPort := api[strings.LastIndex(api, ":")+1:]
	hostfwd := testbin.FreePort(t)

	disk := emptyDisk(t, dir)
	nic := fmt.Sprintf("user,model=virtio-net-pci,mac=%s,restrict=on,"+
		"guestfwd=tcp:10.0.2.100:80-cmd:%s nc 127.0.0.1 %s,"+
		"guestfwd=tcp:10.0.2.101:80-cmd:%s nc 127.0.0.1 %d,"+
		"hostfwd=tcp:127.0.0.1:%d-:%d", vmMAC, a.busybox, apiPort, a.busybox, imgPort, hostfwd, agentPort)
	if !strings.Contains(nic, "restrict=on") {
		t.Fatal("user networking without restrict=on")
	}
	args := []string{qemu, "-accel", "tcg", "-m", "512", "-smp", "1",
		"-kernel", a.kernel, "-initrd", a.initramfs, "-append", "console=ttyS0 panic=-1 " + agentParams(hostfwd),
		"-display", "none", "-serial", "file:" + filepath.Join(st, "console.log"),
		"-drive", "file=" + disk + ",format=raw,if=virtio",
		"-nic", nic,
		"-daemonize", "-pidfile", filepath.Join(st, "qemu.pid")}
	q := make([]string, len(args))
	for i, s := range args {
		q[i] = "'" + s + "'"
	}
	if err := os.WriteFile(filepath.Join(st, "vm.sh"), []byte("exec "+strings.Join(q, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Enroll.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), overall)
	defer cancel()
	// The VM boots the ramdisk by -kernel/-initrd, so the boot interface is
	// "fake" (enabled by name above; it only sets the boot device);
	// TestVMNetbootIPMI covers ipxe.
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "vm-node", "driver": "ipmi",
		"boot_interface": "fake", "deploy_interface": "direct", "driver_info": map[string]any{
			"ipmi_address": "127.0.0.1", "ipmi_port": bmcPort, "ipmi_username": "admin",
			"ipmi_password": password, "ipmi_cipher_suite": 3,
		}}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": vmMAC})

	w := &watcher{t: t, api: api, node: node, st: st, ctx: ctx}
	w.provide("automated cleaning through the agent, one VM boot")
	n = w.deploy("power on, boot, lookup, heartbeat, write 16 MiB, reboot to disk", "http://10.0.2.101/img.raw", image)
	t.Logf("enroll to active: %v", time.Since(start).Round(time.Millisecond))
	if n["power_state"] != "power on" {
		t.Errorf("power_state after deploy = %v", n["power_state"])
	}
	got, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 64*mib {
		t.Fatalf("disk file is %d bytes, want %d", len(got), 64*mib)
	}
	assertDiskHolds(t, disk, image)
	if b, _ := os.ReadFile(filepath.Join(st, "boot")); !hasPrefixAny(strings.TrimSpace(string(b)), "default", "disk") {
		t.Errorf("BMC boot device after deploy = %q, want default (disk)", b)
	}
}

// agentParams are the kernel parameters that configure the ramdisk's agent
// (IPA's names): the API through the guestfwd, the boot MAC, the address the
// conductor reaches the agent at (the hostfwd), a minimum install disk size
// below the test's 64 MiB disk.
func agentParams(hostfwd int) string {
	return fmt.Sprintf("ipa-api-url=http://10.0.2.100:80 BOOTIF=01-%s %s",
		strings.ReplaceAll(vmMAC, ":", "-"), nodeParams(hostfwd))
}

// nodeParams are the parameters a node's kernel_append_params carries
// when it network-boots (the boot endpoint adds ipa-api-url and BOOTIF).
func nodeParams(hostfwd int) string {
	return fmt.Sprintf("ipa-advertise-host=127.0.0.1 ipa-advertise-port=%d anvil.min-disk-size=32MiB", hostfwd)
}

func provision(t *testing.T, api, node, target string) {
	t.Helper()
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": target})
}

// watcher polls the node, logging provision state changes and noting when
// the agent's first heartbeat arrives (the node leaves "clean wait" or
// "wait call-back").
type watcher struct {
	t             *testing.T
	api, node, st string
	ctx           context.Context
	since         time.Time
	heartbeat     time.Time
}

func (w *watcher) reset() { w.since, w.heartbeat = time.Now(), time.Time{} }

func (w *watcher) wait(want string) map[string]any {
	w.t.Helper()
	if w.since.IsZero() {
		w.since = time.Now()
	}
	last := ""
	for {
		n := mustCall(w.t, 200, "GET", w.api+"/v1/nodes/"+w.node, nil).JSON(w.t)
		ps, _ := n["provision_state"].(string)
		if ps != last {
			w.t.Logf("  %7.2fs %s", time.Since(w.since).Seconds(), ps)
			last = ps
		}
		if dii, _ := n["driver_internal_info"].(map[string]any); dii != nil && dii["agent_url"] != nil && w.heartbeat.IsZero() {
			w.heartbeat = time.Now()
			w.t.Logf("  %7.2fs first heartbeat (agent_url %v)", time.Since(w.since).Seconds(), dii["agent_url"])
		}
		if ps == want && n["reservation"] == nil {
			w.since = time.Time{}
			return n
		}
		if strings.HasSuffix(ps, "failed") || ps == "enroll" && want != "enroll" {
			w.t.Fatalf("node went to %q (last_error %v) waiting for %q", ps, n["last_error"], want)
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("node still %q (last_error %v) after the overall %v, waiting for %q", ps, n["last_error"], overall, want)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// bootToHeartbeat is the time from the last VM start the chassis script
// recorded to the first heartbeat seen.
func (w *watcher) bootToHeartbeat() time.Duration {
	if w.heartbeat.IsZero() {
		return 0
	}
	b, _ := os.ReadFile(filepath.Join(w.st, "events"))
	var on float64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == "on" {
			v, _ := strconv.ParseFloat(f[0], 64)
			if float64(w.heartbeat.UnixNano())/1e9 > v {
				on = v
			}
		}
	}
	if on == 0 {
		return 0
	}
	return time.Duration((float64(w.heartbeat.UnixNano())/1e9 - on) * 1e9).Round(time.Millisecond)
}
