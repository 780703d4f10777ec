// Package ironicemu_test is the acceptance test "real Ironic drives Anvil's
// emulator": Debian's OpenStack Ironic 21.4 (python3-ironic, its redfish
// hardware type on python3-sushy), started standalone on loopback (free
// ports, SQLite in a temporary directory, noauth, rpc_transport=none),
// manages, powers, inspects and boots by virtual media the qemu VMs of
// `anvil bmc-emulator --qemu`. Needs python3-ironic, python3-sushy,
// qemu-system-x86, genisoimage (mkisofs), isolinux and syslinux-common
// (scripts/test.sh installs them); without them it skips, unless CI or
// ANVIL_IRONIC_TEST=1 is set, where it fails.
package ironicemu_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ramdisk"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// ironicConf is a standalone Ironic 21.4 on loopback: API and conductor in
// one process (ironic.cmd.singleprocess), no RPC bus, no auth, SQLite, only
// the redfish hardware type with redfish-virtual-media boot, direct deploy
// and redfish inspection; ISOs are published under http_root (not Swift)
// and built with Debian's isolinux for BIOS boot.
func ironicConf(state string, port int, httpURL, httpRoot string) string {
	return fmt.Sprintf(`[DEFAULT]
debug = True
log_file = %[1]s/ironic.log
use_stderr = False
auth_strategy = noauth
rpc_transport = none
host = anvil-emulator-test
my_ip = 127.0.0.1
state_path = %[1]s
tempdir = %[1]s/tmp
isolinux_bin = %[5]s
ldlinux_c32 = %[6]s
enabled_hardware_types = redfish
enabled_boot_interfaces = redfish-virtual-media
enabled_deploy_interfaces = direct
enabled_inspect_interfaces = redfish,no-inspect
enabled_management_interfaces = redfish
enabled_power_interfaces = redfish
enabled_network_interfaces = noop
enabled_bios_interfaces = no-bios
enabled_console_interfaces = no-console
enabled_raid_interfaces = no-raid
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor

[api]
host_ip = 127.0.0.1
port = %[2]d
api_workers = 1

[database]
connection = sqlite:///%[1]s/ironic.sqlite

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = %[1]s/locks

[oslo_messaging_notifications]
driver = noop

[agent]
image_download_source = http
deploy_logs_collect = never

[deploy]
http_url = %[3]s
http_root = %[4]s

[redfish]
use_swift = false

[service_catalog]
endpoint_override = http://127.0.0.1:%[2]d
`, state, port, httpURL, httpRoot, isolinuxBin, ldlinuxC32)
}

// startIronic creates Ironic's database and runs it until the test ends;
// it returns the API URL once the conductor has registered the redfish
// hardware type.
func startIronic(t *testing.T, state, httpURL, httpRoot string) string {
	t.Helper()
	for _, d := range []string{state, filepath.Join(state, "tmp"), filepath.Join(state, "locks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := testbin.FreePort(t)
	conf := filepath.Join(state, "ironic.conf")
	if err := os.WriteFile(conf, []byte(ironicConf(state, port, httpURL, httpRoot)), 0o644); err != nil {
		t.Fatal(err)
	}
	py := func(module, argv0 string) []string {
		return []string{"-c", fmt.Sprintf("import sys; sys.argv[0]=%q; from %s import main; sys.exit(main())", argv0, module),
			"--config-file", conf}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, python, append(py("ironic.cmd.dbsync", "ironic-dbsync"), "create_schema")...).CombinedOutput(); err != nil {
		t.Fatalf("ironic-dbsync create_schema: %v\n%s", err, out)
	}
	p := testbin.Start(t, "ironic", python, py("ironic.cmd.singleprocess", "ironic")...)
	log := filepath.Join(state, "ironic.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ironic.log (tail):\n%s", readTail(log, 8000))
		}
	})
	api := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if resp, err := http.Get(api + "/v1/drivers"); err == nil {
			b := make([]byte, 4096)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b[:n]), `"redfish"`) {
				t.Logf("Ironic 21.4 up on %s (pid %d)", api, p.Cmd.Process.Pid)
				return api
			}
		}
		if p.Cmd.ProcessState != nil || syscall.Kill(p.Cmd.Process.Pid, 0) != nil {
			t.Fatalf("ironic exited during start-up:\n%s\n%s", p.Logs.String(), readTail(log, 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("ironic did not list the redfish driver within 90s:\n%s", readTail(log, 4000))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// buildRamdisk runs `anvil ramdisk build` (Debian's kernel and busybox are
// fetched with apt-get download into the user's cache on the first run)
// and returns the kernel and initramfs it wrote.
func buildRamdisk(t *testing.T) (kernel, initramfs string) {
	t.Helper()
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "%s not found: anvil ramdisk build fetches the kernel and busybox with apt-get download", tool)
		}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "anvil-vm-test") // shared with test/vm
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := (ramdisk.Fetcher{CacheDir: cache}).Busybox(ctx); err != nil {
		missing(t, "busybox for the ramdisk: %v", err)
	}
	out := filepath.Join(t.TempDir(), "ramdisk")
	cmd := exec.CommandContext(ctx, anvilBin, "ramdisk", "build", "--output", out, "--cache-dir", cache)
	b, err := cmd.CombinedOutput()
	if err != nil {
		missing(t, "anvil ramdisk build: %v\n%s", err, b)
	}
	kernel, initramfs = filepath.Join(out, "vmlinuz"), filepath.Join(out, "initramfs")
	for _, f := range []string{kernel, initramfs} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("anvil ramdisk build left no %s: %v\n%s", f, err, b)
		}
	}
	return kernel, initramfs
}
