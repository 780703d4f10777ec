package emulator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/demo"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestDemoQEMU runs `anvil demo --qemu` with one machine, as a user would:
// the demo builds the deploy ramdisk, its machine is a qemu VM; through the
// API the node goes manageable → available (cleaning in the network-booted
// ramdisk) → active, the VM then boots the deployed image from its disk (the
// marker on its serial console), the progress lines show it, and Ctrl-C
// stops the VM. Skips without qemu (fails in CI).
func TestDemoQEMU(t *testing.T) { demoQEMU(t, false) }

// TestDemoQEMUVirtualMedia is the virtual media path end to end: with
// --virtual-media the VM has no network boot; for cleaning and deploy
// Anvil builds an ISO of the ramdisk, the emulator (a Redfish BMC) inserts
// it and the VM boots it from its CD, the agent deploys, the VM then boots
// the deployed disk; undeploy cleans through the CD again → available, and
// the ISO is ejected each time.
func TestDemoQEMUVirtualMedia(t *testing.T) { demoQEMU(t, true) }

func demoQEMU(t *testing.T, vmedia bool) {
	testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86")
	dir := filepath.Join(t.TempDir(), "demo")
	args := []string{"demo", "--qemu", "-n", "1", "--listen", testbin.FreeAddr(t), "--dir", dir}
	bootDev := "pxe"
	if vmedia {
		args, bootDev = append(args, "--virtual-media"), "cdrom"
	}
	p := testbin.Start(t, "anvil demo", anvilBin, args...)
	re := regexp.MustCompile(`OS_ENDPOINT=(http://\S+)`)
	var api string
	deadline := time.Now().Add(5 * time.Minute) // the first run downloads Debian's kernel and busybox
	for api == "" {
		if m := re.FindStringSubmatch(p.Logs.String()); m != nil {
			api = m[1]
			break
		}
		if strings.Contains(p.Logs.String(), "building the deploy ramdisk") && strings.Contains(p.Logs.String(), "anvil: ") {
			testbin.Missing(t, "the demo could not build its ramdisk (apt-get download):\n"+p.Logs.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo printed no API within 5 minutes:\n%s", p.Logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	bmc := regexp.MustCompile(`BMC emulator\s+(http://\S+)/redfish/v1`).FindStringSubmatch(p.Logs.String())
	if bmc == nil {
		t.Fatalf("no BMC emulator URL printed:\n%s", p.Logs.String())
	}
	console := filepath.Join(dir, "machines", "node-01", "console.log")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(console)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("VM console:\n%s", b)
		}
	})

	start := time.Now()
	call(t, 202, "PUT", api+"/v1/nodes/node-01/states/provision", map[string]any{"target": "manage"})
	waitAll(t, api, []string{"node-01"}, "manageable", time.Minute)
	call(t, 202, "PUT", api+"/v1/nodes/node-01/states/provision", map[string]any{"target": "provide"})
	waitAll(t, api, []string{"node-01"}, "available", 4*time.Minute)
	t.Logf("available (cleaning in the VM booted from %s) after %v", bootDev, time.Since(start).Round(time.Second))
	call(t, 202, "PUT", api+"/v1/nodes/node-01/states/provision", map[string]any{"target": "active"})
	waitAll(t, api, []string{"node-01"}, "active", 4*time.Minute)
	t.Logf("active after %v", time.Since(start).Round(time.Second))
	deadline = time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(console)
		s := string(b)
		last := s[strings.LastIndex(s, "\n=== ")+1:]
		if strings.Contains(last, "boot device disk") && strings.Contains(last, demo.DiskMarker) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the VM did not boot the deployed image from its disk; last boot:\n%s", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := strings.Count(readFile(console), "boot device "+bootDev); n < 2 {
		t.Errorf("%d boots from %s on the console, want 2 (cleaning, deploy)", n, bootDev)
	}
	if vmedia {
		if n := strings.Count(readFile(console), "boot device pxe"); n != 0 {
			t.Errorf("%d network boots of a VM without network boot", n)
		}
		if inserted := emulatorMedia(t, bmc[1]); inserted {
			t.Error("the ISO is still inserted after the deploy")
		}
	}
	// the progress reporter polls the API every second
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Logs.String(), "→ active") && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	out := p.Logs.String()
	for _, want := range []string{"node-01: VM powered on, booting from " + bootDev, "node-01: VM powered on, booting from disk", "→ active"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's progress lacks %q:\n%s", want, out)
		}
	}
	var m struct {
		Pid int `json:"vm_pid"`
	}
	resp, err := http.Get(bmc[1] + "/emulator/machines/node-01")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if m.Pid == 0 {
		t.Fatal("the active machine has no VM")
	}
	if vmedia {
		// undeploy: tear down, then cleaning boots the ISO once more
		boots := strings.Count(readFile(console), "boot device cdrom")
		call(t, 202, "PUT", api+"/v1/nodes/node-01/states/provision", map[string]any{"target": "deleted"})
		waitAll(t, api, []string{"node-01"}, "available", 4*time.Minute)
		t.Logf("available again (undeployed) after %v", time.Since(start).Round(time.Second))
		if n := strings.Count(readFile(console), "boot device cdrom"); n <= boots {
			t.Errorf("undeploy's cleaning did not boot the ISO (%d CD boots before, %d after)", boots, n)
		}
		if emulatorMedia(t, bmc[1]) {
			t.Error("the ISO is still inserted after the undeploy")
		}
	}
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	if err := p.Stop(t); err != nil {
		t.Errorf("the demo exited with %v", err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.Pid)); err == nil && !strings.Contains(string(b), ") Z") {
		t.Errorf("qemu %d survives the demo", m.Pid)
	}
}

// emulatorMedia reports whether node-01's virtual CD holds an image.
func emulatorMedia(t *testing.T, bmc string) bool {
	t.Helper()
	resp, err := http.Get(bmc + "/emulator/machines/node-01")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Media struct {
			Inserted bool `json:"inserted"`
		} `json:"virtual_media"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m.Media.Inserted
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
