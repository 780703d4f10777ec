package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// cliTimeout bounds one `baremetal` invocation.
const cliTimeout = 60 * time.Second

// cli runs the real `baremetal` CLI (python3-ironicclient 5.0.1) against one
// server, the way an operator does: OS_ENDPOINT + OS_AUTH_TYPE=none. Every
// call passes --max-retries 0 so a 409 fails at once instead of being
// retried for ~10 s; the tests wait for the node to settle (lock released)
// before each action, like the guide's polling loops.
type cli struct {
	t    *testing.T
	base string
}

type cliResult struct {
	stdout, stderr string
	code           int
}

func newCLI(t *testing.T, base string) cli { return cli{t: t, base: base} }

func (c cli) run(args ...string) cliResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), cliTimeout)
	defer cancel()
	full := append([]string{"--os-baremetal-api-version", "1.78", "--max-retries", "0"}, args...)
	cmd := exec.CommandContext(ctx, "baremetal", full...)
	env := []string{"OS_ENDPOINT=" + c.base, "OS_AUTH_TYPE=none"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	c.t.Logf("baremetal %s (%.1fs)", strings.Join(args, " "), time.Since(began).Seconds())
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		res.code = exit.ExitCode()
	default:
		c.t.Fatalf("baremetal %s: %v\nstderr: %s", strings.Join(args, " "), err, res.stderr)
	}
	return res
}

// ok runs a command that must succeed and returns its stdout.
func (c cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("baremetal %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// silent runs an action command, which prints nothing on acceptance.
func (c cli) silent(args ...string) {
	c.t.Helper()
	if out := c.ok(args...); out != "" {
		c.t.Errorf("baremetal %s printed %q, want nothing", strings.Join(args, " "), out)
	}
}

// fails runs a command that must exit 1 with want in its error output.
func (c cli) fails(want string, args ...string) {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 1 {
		c.t.Fatalf("baremetal %s: exit %d, want 1\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		c.t.Errorf("baremetal %s: error output does not contain\n  %q\ngot:\n%s", strings.Join(args, " "), want, r.stderr)
	}
}

// expect runs a command that must succeed and print exactly want.
func (c cli) expect(want string, args ...string) {
	c.t.Helper()
	if got := c.ok(args...); got != want {
		c.t.Errorf("baremetal %s = %q, want %q", strings.Join(args, " "), got, want)
	}
}

// showState asserts what `node show <node> -f value -c provision_state` prints.
func (c cli) showState(node, want string) {
	c.t.Helper()
	c.expect(want+"\n", "node", "show", node, "-f", "value", "-c", "provision_state")
}

func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// TestCLIOperatorLifecycle runs the operator guide's lifecycle script (seed
// 003) with the real `baremetal` CLI, asserting every step's output the way
// Ironic 21.4 answers it. Checks whose output format does not matter poll
// the API directly: each CLI call costs about a second of Python start-up.
func TestCLIOperatorLifecycle(t *testing.T) {
	requireCLI(t)
	t.Parallel()
	base := startServer(t)
	bm := newCLI(t, base)

	// Step 1: create (enroll). The CLI JSON-decodes each key=value value,
	// so the numbers arrive as numbers.
	created := mustJSON[map[string]any](t, "node create -f json", bm.ok("node", "create",
		"--driver", "fake-hardware", "--name", "node-01",
		"--driver-info", "fake_x=1",
		"--property", "cpus=24", "--property", "memory_mb=65536",
		"--property", "local_gb=500", "--property", "cpu_arch=x86_64",
		"-f", "json"))
	uuid, _ := created["uuid"].(string)
	if len(uuid) != 36 {
		t.Fatalf("node create: uuid = %v", created["uuid"])
	}
	jsonEqual(t, "created name", created["name"], "node-01")
	jsonEqual(t, "created driver", created["driver"], "fake-hardware")
	jsonEqual(t, "created provision_state", created["provision_state"], "enroll")
	jsonEqual(t, "created driver_info", created["driver_info"], map[string]any{"fake_x": float64(1)})
	bm.showState("node-01", "enroll")
	props := mustJSON[map[string]any](t, "node show -c properties", bm.ok("node", "show", "node-01", "-f", "json", "-c", "properties"))
	jsonEqual(t, "properties", props, map[string]any{"properties": map[string]any{
		"cpus": float64(24), "memory_mb": float64(65536), "local_gb": float64(500), "cpu_arch": "x86_64",
	}})

	// Step 2: manage (enroll → verifying → manageable).
	bm.silent("node", "manage", "node-01")
	waitState(t, base, uuid, "manageable")
	bm.showState("node-01", "manageable")

	// Step 3: ports. The guide passes the node *name* to --node; Ironic
	// only accepts a UUID in node_uuid.
	bm.fails("Expected UUID for node_uuid: node-01 (HTTP 400)",
		"port", "create", "--node", "node-01", "--pxe-enabled", "true", "00:11:22:33:44:55")
	port := mustJSON[map[string]any](t, "port create -f json", bm.ok("port", "create",
		"--node", uuid, "--pxe-enabled", "true", "00:11:22:33:44:55", "-f", "json"))
	portUUID, _ := port["uuid"].(string)
	jsonEqual(t, "port address", port["address"], "00:11:22:33:44:55")
	jsonEqual(t, "port node_uuid", port["node_uuid"], uuid)
	jsonEqual(t, "port pxe_enabled", port["pxe_enabled"], true)
	ports := mustJSON[[]map[string]any](t, "port list -f json", bm.ok("port", "list", "-f", "json"))
	jsonEqual(t, "port list", ports, []map[string]any{{"UUID": portUUID, "Address": "00:11:22:33:44:55"}})
	shown := mustJSON[map[string]any](t, "port show -f json", bm.ok("port", "show", portUUID, "-f", "json"))
	jsonEqual(t, "port show node_uuid", shown["node_uuid"], uuid)
	jsonEqual(t, "port show pxe_enabled", shown["pxe_enabled"], true)
	bm.expect(portUUID+"\n", "port", "show", "--address", "00:11:22:33:44:55", "-f", "value", "-c", "uuid")
	bm.fails("A port with MAC address 00:11:22:33:44:55 already exists. (HTTP 409)",
		"port", "create", "--node", uuid, "00:11:22:33:44:55")

	// Step 4: validate.
	validation := mustJSON[[]map[string]any](t, "node validate -f json", bm.ok("node", "validate", "node-01", "-f", "json"))
	results := map[string]any{}
	for _, row := range validation {
		iface, _ := row["Interface"].(string)
		results[iface] = row["Result"]
	}
	for _, iface := range []string{"boot", "deploy", "management", "power"} {
		if results[iface] != true {
			t.Errorf("node validate: %s result = %v, want True (all rows: %v)", iface, results[iface], validation)
		}
	}

	// Step 5: provide (manageable → cleaning → available).
	bm.silent("node", "provide", "node-01")
	waitState(t, base, uuid, "available")
	bm.showState("node-01", "available")

	// Deploy (available → deploying → active).
	bm.silent("node", "set", "node-01", "--instance-info", "image_source=http://127.0.0.1:1/img.raw")
	jsonEqual(t, "instance_info", getNode(t, base, uuid)["instance_info"], map[string]any{"image_source": "http://127.0.0.1:1/img.raw"})
	bm.silent("node", "deploy", "node-01")
	waitState(t, base, uuid, "active")
	bm.showState("node-01", "active")

	// Monitoring queries from the guide.
	bm.expect(uuid+"\n", "node", "list", "--provision-state", "active", "-f", "value", "-c", "UUID")
	bm.expect("", "node", "list", "--maintenance", "-f", "value", "-c", "Name")
	list := mustJSON[[]map[string]any](t, "node list -f json", bm.ok("node", "list", "-f", "json"))
	jsonEqual(t, "node list -f json", list, []map[string]any{{
		"UUID": uuid, "Name": "node-01", "Instance UUID": nil, "Power State": nil,
		"Provisioning State": "active", "Maintenance": false,
	}})

	// What Ironic refuses on an active node.
	bm.fails(invalidState("manage", uuid, "active")+" (HTTP 400)", "node", "manage", "node-01")
	bm.fails(invalidState("provide", uuid, "active")+" (HTTP 400)", "node", "provide", "node-01")
	bm.fails("Failed to delete node node-01: "+cannotDeleteActive(uuid)+" (HTTP 409)", "node", "delete", "node-01")
	if st := getNode(t, base, uuid)["provision_state"]; st != "active" {
		t.Fatalf("refused requests changed the node: provision_state %v", st)
	}

	// Rescue, unrescue, rebuild.
	bm.silent("node", "rescue", "node-01", "--rescue-password", "mypassword")
	waitState(t, base, uuid, "rescue")
	bm.silent("node", "unrescue", "node-01")
	waitState(t, base, uuid, "active")
	bm.silent("node", "rebuild", "node-01")
	waitState(t, base, uuid, "active")

	// Undeploy and delete.
	bm.silent("node", "undeploy", "node-01")
	waitState(t, base, uuid, "available")
	jsonEqual(t, "instance_info after undeploy", getNode(t, base, uuid)["instance_info"], map[string]any{})
	bm.expect("Deleted node node-01\n", "node", "delete", "node-01")
	bm.fails("Node node-01 could not be found. (HTTP 404)", "node", "show", "node-01")
	if r := api(t, base, "latest", http.MethodGet, "/v1/ports/"+portUUID, nil); r.Status != http.StatusNotFound {
		t.Errorf("port of the deleted node: GET /v1/ports/%s = HTTP %d, want 404", portUUID, r.Status)
	}
}

// TestCLIMaintenancePowerBoot covers the guide's maintenance, power and
// boot device commands on a deployed node (brought there over the API).
func TestCLIMaintenancePowerBoot(t *testing.T) {
	requireCLI(t)
	t.Parallel()
	base := startServer(t)
	bm := newCLI(t, base)

	created := api(t, base, "1.78", http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware", "name": "node-01"})
	if created.Status != http.StatusCreated {
		t.Fatalf("POST /v1/nodes = HTTP %d %s", created.Status, created.Body)
	}
	uuid, _ := mustJSON[map[string]any](t, "POST /v1/nodes", string(created.Body))["uuid"].(string)
	for _, step := range []struct{ target, want string }{{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}} {
		if r := api(t, base, "1.78", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", map[string]any{"target": step.target}); r.Status != http.StatusAccepted {
			t.Fatalf("provision %s = HTTP %d %s", step.target, r.Status, r.Body)
		}
		waitState(t, base, uuid, step.want)
	}

	// Maintenance.
	bm.silent("node", "maintenance", "set", "node-01", "--reason", "Hardware upgrade")
	maint := mustJSON[map[string]any](t, "node show -c maintenance", bm.ok("node", "show", "node-01", "-f", "json", "-c", "maintenance", "-c", "maintenance_reason"))
	jsonEqual(t, "maintenance set", maint, map[string]any{"maintenance": true, "maintenance_reason": "Hardware upgrade"})
	bm.expect("node-01\n", "node", "list", "--maintenance", "-f", "value", "-c", "Name")
	bm.silent("node", "maintenance", "unset", "node-01")
	if n := getNode(t, base, uuid); n["maintenance"] != false || n["maintenance_reason"] != nil {
		t.Errorf("after maintenance unset: maintenance %v reason %v", n["maintenance"], n["maintenance_reason"])
	}

	// Power. (`node power show`, used by the guide, does not exist in the
	// 5.0.1 CLI; `node show -c power_state` is how operators read it.)
	bm.silent("node", "power", "off", "node-01")
	waitPower(t, base, uuid, "power off")
	bm.expect("power off\n", "node", "show", "node-01", "-f", "value", "-c", "power_state")
	bm.silent("node", "power", "on", "node-01")
	waitPower(t, base, uuid, "power on")
	bm.silent("node", "reboot", "node-01")
	waitPower(t, base, uuid, "power on")
	bm.expect("power on\n", "node", "show", "node-01", "-f", "value", "-c", "power_state")

	// Boot device.
	bm.silent("node", "boot", "device", "set", "node-01", "pxe")
	boot := mustJSON[map[string]any](t, "node boot device show", bm.ok("node", "boot", "device", "show", "node-01", "-f", "json"))
	jsonEqual(t, "boot device", boot, map[string]any{"boot_device": "pxe", "persistent": false})
}

// TestCLIInspectAndClean covers the guide's inspection and cleaning
// commands, including a manual clean with an unknown step, which Ironic
// accepts and then fails asynchronously.
func TestCLIInspectAndClean(t *testing.T) {
	requireCLI(t)
	t.Parallel()
	base := startServer(t)
	bm := newCLI(t, base)

	uuid := strings.TrimSpace(bm.ok("node", "create", "--driver", "fake-hardware", "--name", "node-02", "-f", "value", "-c", "uuid"))
	bm.silent("node", "manage", "node-02")
	waitState(t, base, uuid, "manageable")
	bm.silent("node", "provide", "node-02")
	waitState(t, base, uuid, "available")
	bm.fails(invalidState("inspect", uuid, "available")+" (HTTP 400)", "node", "inspect", "node-02")

	// available → manageable is direct, then inspect.
	bm.silent("node", "manage", "node-02")
	waitState(t, base, uuid, "manageable")
	bm.silent("node", "inspect", "node-02")
	waitState(t, base, uuid, "manageable")

	// Manual clean with the guide's step. Anvil's fake deploy interface
	// offers deploy.erase_devices; Ironic's fake-hardware does not (there it
	// fails like the unknown step below; bios.cache_bios_settings works).
	bm.silent("node", "clean", "node-02", "--clean-steps", `[{"interface": "deploy", "step": "erase_devices"}]`)
	waitState(t, base, uuid, "manageable")

	// Manual clean with an unknown step: accepted (202), then clean failed.
	bm.silent("node", "clean", "node-02", "--clean-steps", `[{"interface": "deploy", "step": "no_such_step"}]`)
	waitState(t, base, uuid, "clean failed")
	bm.expect("Cannot clean node "+uuid+": node does not support this clean step: {'interface': 'deploy', 'step': 'no_such_step'}\n",
		"node", "show", "node-02", "-f", "value", "-c", "last_error")
	states := mustJSON[map[string]any](t, "node show -c provision_state -c target_provision_state",
		bm.ok("node", "show", "node-02", "-f", "json", "-c", "provision_state", "-c", "target_provision_state", "-c", "maintenance"))
	jsonEqual(t, "after unknown clean step", states, map[string]any{
		"provision_state": "clean failed", "target_provision_state": "manageable", "maintenance": false,
	})
	history := mustJSON[[]map[string]any](t, "node history list -f json", bm.ok("node", "history", "list", "node-02", "-f", "json"))
	if i := slices.IndexFunc(history, func(e map[string]any) bool {
		return e["Severity"] == "ERROR" && strings.HasPrefix(fmt.Sprint(e["Description of the event"]), "Cannot clean node "+uuid+": ")
	}); i < 0 {
		t.Errorf("node history list has no ERROR event for the failed clean: %v", history)
	}
	bm.fails(invalidState("clean", uuid, "clean failed")+" (HTTP 400)",
		"node", "clean", "node-02", "--clean-steps", `[{"interface": "deploy", "step": "erase_devices"}]`)

	// The guide's recovery: manage, then provide. Ironic's manage from
	// clean failed is a bare state change (no worker), which leaves
	// last_error alone; starting the provide clears it.
	bm.silent("node", "manage", "node-02")
	managed := waitState(t, base, uuid, "manageable")
	if le, _ := managed["last_error"].(string); !strings.HasPrefix(le, "Cannot clean node "+uuid) {
		t.Errorf("last_error after manage from clean failed = %v, want the clean failure kept", managed["last_error"])
	}
	bm.silent("node", "provide", "node-02")
	if provided := waitState(t, base, uuid, "available"); provided["last_error"] != nil {
		t.Errorf("last_error after provide = %v, want null", provided["last_error"])
	}
}

// TestCLISecretsMasked checks that neither a driver_info password nor the
// rescue password ever appears in CLI output: Ironic shows "******".
func TestCLISecretsMasked(t *testing.T) {
	requireCLI(t)
	t.Parallel()
	base := startServer(t)
	bm := newCLI(t, base)
	const ipmiPassword, rescuePassword = "s3cr3t-pw", "mypassword"

	noSecret := func(what, out string) {
		t.Helper()
		for _, s := range []string{ipmiPassword, rescuePassword} {
			if strings.Contains(out, s) {
				t.Errorf("%s leaks %q:\n%s", what, s, out)
			}
		}
	}

	out := bm.ok("node", "create", "--driver", "fake-hardware", "--name", "node-sec",
		"--driver-info", "ipmi_username=admin", "--driver-info", "ipmi_password="+ipmiPassword, "-f", "json")
	noSecret("node create", out)
	created := mustJSON[map[string]any](t, "node create -f json", out)
	uuid, _ := created["uuid"].(string)
	jsonEqual(t, "driver_info on create", created["driver_info"], map[string]any{"ipmi_username": "admin", "ipmi_password": "******"})

	out = bm.ok("node", "show", "node-sec", "-f", "json")
	noSecret("node show", out)
	shown := mustJSON[map[string]any](t, "node show -f json", out)
	var keys []string
	for k := range shown {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := nodeShowKeys178(); !slices.Equal(keys, want) {
		t.Errorf("node show -f json keys at 1.78:\n got %v\nwant %v", keys, want)
	}
	jsonEqual(t, "driver_info on show", shown["driver_info"], map[string]any{"ipmi_username": "admin", "ipmi_password": "******"})

	bm.silent("node", "manage", "node-sec")
	waitState(t, base, uuid, "manageable")
	bm.silent("node", "provide", "node-sec")
	waitState(t, base, uuid, "available")
	// A config drive may carry secrets too; Ironic shows it as "******".
	bm.silent("node", "deploy", "node-sec", "--config-drive",
		`{"meta_data": {"hostname": "node-sec"}, "user_data": "#cloud-config\npassword: `+rescuePassword+`"}`)
	active := waitState(t, base, uuid, "active")
	if ii, _ := active["instance_info"].(map[string]any); ii["configdrive"] != "******" {
		t.Errorf("instance_info after deploy with a config drive = %v, want configdrive \"******\"", active["instance_info"])
	}
	bm.silent("node", "rescue", "node-sec", "--rescue-password", rescuePassword)
	waitState(t, base, uuid, "rescue")

	out = bm.ok("node", "show", "node-sec", "-f", "json")
	noSecret("node show in rescue", out)
	shown = mustJSON[map[string]any](t, "node show -f json", out)
	ii, _ := shown["instance_info"].(map[string]any)
	if ii["rescue_password"] != "******" {
		t.Errorf("instance_info in rescue = %v, want rescue_password \"******\"", shown["instance_info"])
	}
	noSecret("node list --long", bm.ok("node", "list", "--long", "-f", "json"))
	for _, path := range []string{"/v1/nodes/" + uuid, "/v1/nodes/detail", "/v1/nodes?detail=True"} {
		r := api(t, base, "latest", http.MethodGet, path, nil)
		noSecret("GET "+path, string(r.Body))
	}

	bm.silent("node", "unrescue", "node-sec")
	waitState(t, base, uuid, "active")
	noSecret("node show after unrescue", bm.ok("node", "show", "node-sec", "-f", "json"))
}

// nodeShowKeys178 are the fields `baremetal node show -f json` prints at
// 1.78 against Ironic: the node's 63 fields at 1.82 minus the link lists the
// CLI drops and shard (1.82), sorted.
func nodeShowKeys178() []string {
	keys := []string{
		"uuid", "created_at", "updated_at", "automated_clean", "bios_interface",
		"boot_interface", "boot_mode", "clean_step", "conductor_group", "console_enabled",
		"console_interface", "deploy_interface", "deploy_step", "description", "driver",
		"driver_info", "driver_internal_info", "extra", "fault", "inspection_finished_at",
		"inspection_started_at", "inspect_interface", "instance_info", "instance_uuid", "last_error",
		"lessee", "maintenance", "maintenance_reason", "management_interface", "name",
		"network_data", "network_interface", "owner", "power_interface", "power_state",
		"properties", "protected", "protected_reason", "provision_state", "provision_updated_at",
		"raid_config", "raid_interface", "rescue_interface", "reservation", "resource_class",
		"retired", "retired_reason", "secure_boot", "storage_interface", "target_power_state",
		"target_provision_state", "target_raid_config", "traits", "vendor_interface", "conductor",
		"allocation_uuid", "chassis_uuid",
	}
	slices.Sort(keys)
	return keys
}
