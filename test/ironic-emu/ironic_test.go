package ironicemu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

const (
	// python is Debian's interpreter, whose dist-packages hold
	// python3-ironic (a python3 earlier on PATH, e.g. pyenv's, may not).
	python      = "/usr/bin/python3"
	bmcPassword = "emu-ironic-pw1"
	isolinuxBin = "/usr/lib/ISOLINUX/isolinux.bin"
	ldlinuxC32  = "/usr/lib/syslinux/modules/bios/ldlinux.c32"
)

// missing skips the test, or fails it in CI (CI set) or with
// ANVIL_IRONIC_TEST=1, where scripts/test.sh installs everything.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	testbin.Missing(t, fmt.Sprintf(format, args...), "ANVIL_IRONIC_TEST")
}

// TestIronicDrivesEmulator: Debian's OpenStack Ironic (python3-ironic 21.4,
// whose redfish hardware type talks through python3-sushy) manages, powers
// and inspects machines of `anvil bmc-emulator --qemu`, and boots one
// through its redfish-virtual-media boot interface: Ironic builds the
// deploy ISO (isolinux, the kernel and initramfs `anvil ramdisk build`
// makes), the emulator downloads it through InsertMedia, the Cd boot
// override boots it in the machine's qemu VM, and the serial console shows
// the ISO's kernel starting with Ironic's command line and the ramdisk's
// init running.
func TestIronicDrivesEmulator(t *testing.T) {
	if err := exec.Command(python, "-c", "import ironic, sushy").Run(); err != nil {
		missing(t, "python3-ironic / python3-sushy are not installed (apt-get install python3-ironic python3-sushy)")
	}
	for _, tool := range []string{"qemu-system-x86_64", "mkisofs"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "%s not found (apt-get install qemu-system-x86 genisoimage)", tool)
		}
	}
	for _, f := range []string{isolinuxBin, ldlinuxC32} {
		if _, err := os.Stat(f); err != nil {
			missing(t, "%s not found (apt-get install isolinux syslinux-common)", f)
		}
	}
	dir := t.TempDir()
	if strings.ContainsAny(dir, " ,'") {
		t.Skipf("temp dir %q holds a space, comma or quote", dir)
	}
	kernel, initramfs := buildRamdisk(t)

	// Ironic's HTTP boot root, served on loopback: the deploy kernel and
	// ramdisk Ironic downloads, and the ISOs it publishes (redfish/).
	httpRoot := filepath.Join(dir, "httpboot")
	if err := os.MkdirAll(filepath.Join(httpRoot, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{kernel: "vmlinuz", initramfs: "initramfs"} {
		if err := os.Symlink(src, filepath.Join(httpRoot, "agent", dst)); err != nil {
			t.Fatal(err)
		}
	}
	httpURL := serveDir(t, httpRoot)

	// The emulator: two machines, each a qemu VM.
	bmcAddr := testbin.FreeAddr(t)
	emuState := filepath.Join(dir, "emulator")
	emu := testbin.Start(t, "bmc-emulator", anvilBin, "bmc-emulator", "--qemu", "--count", "2",
		"--listen", bmcAddr, "--password", bmcPassword, "--state-dir", emuState,
		"--vm-memory", "1024", "--vm-disk-mib", "8192", "--log-level", "info")
	bmc := "http://" + bmcAddr
	waitHTTP(t, bmc+"/emulator/machines", emu)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node-01 console:\n%s", readTail(filepath.Join(emuState, "node-01", "console.log"), 6000))
			t.Logf("node-01 qemu log:\n%s", readTail(filepath.Join(emuState, "node-01", "qemu.log"), 2000))
		}
	})

	api := startIronic(t, filepath.Join(dir, "ironic"), httpURL, httpRoot)

	// Enrol both machines with the redfish hardware type.
	nodes := map[string]string{} // machine id → node uuid
	for _, id := range []string{"node-01", "node-02"} {
		n := testbin.MustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{
			"name": id, "driver": "redfish",
			"boot_interface": "redfish-virtual-media", "deploy_interface": "direct",
			"inspect_interface": "redfish", "management_interface": "redfish", "power_interface": "redfish",
			"network_interface": "noop",
			"properties":        map[string]any{"capabilities": "boot_mode:bios"},
			"driver_info": map[string]any{
				"redfish_address": bmc, "redfish_system_id": "/redfish/v1/Systems/" + id,
				"redfish_username": "admin", "redfish_password": bmcPassword,
				"deploy_kernel": httpURL + "/agent/vmlinuz", "deploy_ramdisk": httpURL + "/agent/initramfs",
				"kernel_append_params": "console=ttyS0 nofb nomodeset vga=normal",
			}}).JSON(t)
		nodes[id] = n["uuid"].(string)
	}

	// manage: Ironic validates the driver and reads the power state.
	for id, u := range nodes {
		provision(t, api, u, "manage")
		n := testbin.WaitState(t, api, u, "manageable", 60*time.Second)
		if n["power_state"] != "power off" {
			t.Errorf("%s: power_state %v after manage, want power off", id, n["power_state"])
		}
	}

	// inspect (out of band, Ironic's redfish inspect module)
	for id, u := range nodes {
		provision(t, api, u, "inspect")
		n := testbin.WaitState(t, api, u, "manageable", 90*time.Second)
		p := n["properties"].(map[string]any)
		mem, _ := strconv.ParseFloat(fmt.Sprint(p["memory_mb"]), 64)
		if mem != 1024 || fmt.Sprint(p["cpus"]) != "1" || p["cpu_arch"] != "x86_64" || fmt.Sprint(p["local_gb"]) != "7" {
			t.Errorf("%s: inspected properties %v, want memory_mb 1024 (Ironic reads whole GiB), cpus 1, cpu_arch x86_64, local_gb 7 (an 8 GiB disk)", id, p)
		}
		mac := machine(t, bmc, id)["macs"].([]any)[0].(string)
		ports := testbin.MustCall(t, 200, "GET", api+"/v1/ports?node="+u, nil).JSON(t)["ports"].([]any)
		if len(ports) != 1 || !strings.EqualFold(ports[0].(map[string]any)["address"].(string), mac) {
			t.Errorf("%s: ports after inspection %v, want one with the VM's MAC %s", id, ports, mac)
		}
	}
	t.Logf("Ironic managed and inspected %d machines of the emulator", len(nodes))

	// power: Ironic's power on starts the machine's VM, power off kills it.
	u2 := nodes["node-02"]
	power(t, api, u2, "power on")
	m := machine(t, bmc, "node-02")
	pid := int(m["vm_pid"].(float64))
	if m["power_state"] != "On" || pid == 0 || !processAlive(pid) {
		t.Fatalf("after Ironic's power on: %v", m)
	}
	power(t, api, u2, "power off")
	if m := machine(t, bmc, "node-02"); m["power_state"] != "Off" || processAlive(pid) {
		t.Fatalf("after Ironic's power off: %v (qemu %d alive %v)", m, pid, processAlive(pid))
	}
	t.Log("Ironic powered node-02's VM on and off")

	// provide → cleaning: Ironic boots the deploy ramdisk by virtual media.
	u1 := nodes["node-01"]
	start := time.Now()
	provision(t, api, u1, "provide")
	console := filepath.Join(emuState, "node-01", "console.log")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var media map[string]any
	if !poll(ctx, func() bool {
		media = machine(t, bmc, "node-01")["virtual_media"].(map[string]any)
		return media["inserted"] == true
	}) {
		n := testbin.GetNode(t, api, u1)
		t.Fatalf("Ironic inserted no virtual media: node %v / %v, last_error %v; ironic log:\n%s",
			n["provision_state"], n["target_provision_state"], n["last_error"], readTail(filepath.Join(dir, "ironic", "ironic.log"), 6000))
	}
	wantISO := httpURL + "/redfish/boot-" + u1 + ".iso"
	if media["image"] != wantISO {
		t.Errorf("inserted image %v, want Ironic's %s", media["image"], wantISO)
	}
	if !poll(ctx, func() bool {
		lb := lastBoot(console)
		return strings.Contains(lb, "boot device cdrom") && strings.Contains(lb, "anvil-ramdisk: init")
	}) {
		n := testbin.GetNode(t, api, u1)
		t.Fatalf("the VM did not boot Ironic's ISO into the ramdisk (node %v, last_error %v); last boot:\n%s",
			n["provision_state"], n["last_error"], readTail(console, 4000))
	}
	lb := lastBoot(console)
	for _, want := range []string{"Linux version", "Command line:", "boot_method=vmedia", "ipa-agent-token=", "console=ttyS0"} {
		if !strings.Contains(lb, want) {
			t.Errorf("the ISO boot's console lacks %q", want)
		}
	}
	n := testbin.GetNode(t, api, u1)
	if n["provision_state"] != "clean wait" && n["provision_state"] != "cleaning" {
		t.Errorf("node-01 in %v (last_error %v), want cleaning / clean wait", n["provision_state"], n["last_error"])
	}
	t.Logf("provide → Ironic built and inserted %s, the VM booted it: ramdisk init %v after provide; node %v",
		wantISO, time.Since(start).Round(time.Second), n["provision_state"])
	if i := strings.Index(lb, "Command line:"); i >= 0 {
		line := strings.SplitN(lb[i:], "\n", 2)[0]
		if j := strings.Index(line, "ipa-agent-token="); j >= 0 { // a secret: not in the test log
			k := strings.IndexByte(line[j:], ' ')
			if k < 0 {
				k = len(line) - j
			}
			line = line[:j] + "ipa-agent-token=******" + line[j+k:]
		}
		t.Logf("kernel %s", line)
	}

	// abort: Ironic tears cleaning down, ejecting its ISO through the
	// emulator's EjectMedia and powering the VM off.
	if n["provision_state"] == "cleaning" {
		testbin.WaitState(t, api, u1, "clean wait", 2*time.Minute)
	}
	provision(t, api, u1, "abort")
	if !poll(ctx, func() bool {
		m := machine(t, bmc, "node-01")
		return m["virtual_media"].(map[string]any)["inserted"] == false && m["power_state"] == "Off"
	}) {
		t.Fatalf("after abort: %v", machine(t, bmc, "node-01"))
	}
	n = testbin.GetNode(t, api, u1)
	t.Logf("abort → %v: Ironic ejected the ISO and powered the VM off", n["provision_state"])
}

func provision(t *testing.T, api, node, target string) {
	t.Helper()
	testbin.MustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": target})
}

// power asks Ironic for a power state and waits until the node reports it.
func power(t *testing.T, api, node, target string) {
	t.Helper()
	testbin.MustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/power", map[string]any{"target": target})
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := testbin.GetNode(t, api, node)
		if n["power_state"] == target && n["target_power_state"] == nil {
			return
		}
		if n["last_error"] != nil && n["target_power_state"] == nil {
			t.Fatalf("%s: %v", target, n["last_error"])
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not %s after 60s: %v", target, n["power_state"])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// machine is the emulator's status of one machine.
func machine(t *testing.T, bmc, id string) map[string]any {
	t.Helper()
	resp, err := http.Get(bmc + "/emulator/machines/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z" && f[2] != "X"
}

// serveDir serves dir on a free loopback port.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// waitHTTP waits until url answers 200, failing if p exits first.
func waitHTTP(t *testing.T, url string, p *testbin.Process) {
	t.Helper()
	deadline := time.Now().Add(testbin.ReadyTimeout)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %s:\n%s", p.Name, url, p.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// poll checks cond every 500 ms until it holds or ctx ends.
func poll(ctx context.Context, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// lastBoot is the console since the emulator's last power-on line.
func lastBoot(console string) string {
	b, _ := os.ReadFile(console)
	s := string(b)
	if i := strings.LastIndex(s, "\n=== "); i >= 0 {
		return s[i+1:]
	}
	return s
}

func readTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
