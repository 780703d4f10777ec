package ironic_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// python is Debian's interpreter, where python3-ironic lives (a pyenv or
// venv python3 first on PATH would not see it).
const python = "/usr/bin/python3"

// ironicReady bounds Ironic's start-up (schema creation included) on a
// loaded machine.
const ironicReady = 3 * time.Minute

// ironicConf is a standalone Ironic 21.4 on loopback: one process (API and
// conductor, rpc_transport none), no auth, SQLite, fake-hardware with the
// direct deploy and agent rescue interfaces, the API URL handed to agents
// (no Keystone catalog), short agent heartbeats, Ironic's default boot mode
// (UEFI; a node asks for BIOS with capabilities boot_mode:bios), and no
// 30 s wait for the fake power interface to report the agent's soft
// power-off.
// Facts from the project workspace's shared/tools/ironic-reference (IRONIC_AGENT=1), copied.
const ironicConf = `[DEFAULT]
debug = True
log_file = {{dir}}/ironic.log
use_stderr = False
auth_strategy = noauth
rpc_transport = none
host = anvil-ironic-test
my_ip = 127.0.0.1
state_path = {{dir}}
tempdir = {{dir}}/tmp
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = no-console
enabled_deploy_interfaces = fake,direct
enabled_inspect_interfaces = no-inspect
enabled_management_interfaces = fake,noop
enabled_network_interfaces = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = no-raid
enabled_rescue_interfaces = no-rescue,agent
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor
default_boot_interface = fake
default_deploy_interface = direct
default_management_interface = noop
default_network_interface = noop
default_power_interface = fake

[api]
host_ip = 127.0.0.1
port = {{port}}
api_workers = 1
ramdisk_heartbeat_timeout = 30

[agent]
image_download_source = http
deploy_logs_collect = never
post_deploy_get_power_state_retries = 0

[database]
connection = sqlite:///{{dir}}/ironic.sqlite

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = {{dir}}/locks

[oslo_messaging_notifications]
driver = noop

[service_catalog]
endpoint_override = http://127.0.0.1:{{port}}
`

// haveIronic reports whether Debian's python3-ironic is importable; without
// it the test is skipped, or failed in CI (environment variable CI set:
// scripts/test.sh installs python3-ironic).
func haveIronic(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import ironic.cmd.singleprocess").Run(); err != nil {
		testbin.Missing(t, fmt.Sprintf("python3-ironic is not installed (apt-get install python3-ironic): %v", err))
	}
}

// startIronic runs Ironic 21.4 with ironicConf on a free loopback port,
// state in a temporary directory, until the test ends, and returns its URL
// once its conductor has registered fake-hardware.
func startIronic(t *testing.T) string {
	t.Helper()
	haveIronic(t)
	dir := t.TempDir()
	for _, d := range []string{"tmp", "locks"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := testbin.FreePort(t)
	conf := filepath.Join(dir, "ironic.conf")
	body := strings.NewReplacer("{{dir}}", dir, "{{port}}", fmt.Sprint(port)).Replace(ironicConf)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	dbsync := exec.Command(python, "-c", `import sys; sys.argv[0]="ironic-dbsync"; from ironic.cmd.dbsync import main; sys.exit(main())`,
		"--config-file", conf, "create_schema")
	if out, err := dbsync.CombinedOutput(); err != nil {
		t.Fatalf("ironic-dbsync create_schema: %v\n%s", err, out)
	}
	logs := &testbin.Buffer{}
	cmd := exec.Command(python, "-c", `import sys; sys.argv[0]="ironic"; from ironic.cmd.singleprocess import main; main()`,
		"--config-file", conf)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers die with it
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ironic: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "ironic.log"))
			t.Logf("ironic output:\n%s\nironic.log (last 30000 bytes):\n%s", logs.String(), tail(b, 30000))
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(ironicReady)
	for {
		select {
		case <-exited:
			t.Fatalf("ironic exited during start-up:\n%s", logs.String())
		default:
		}
		if r, err := http.Get(base + "/v1/drivers"); err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if strings.Contains(string(b), `"fake-hardware"`) {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ironic did not answer in %s:\n%s", ironicReady, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
