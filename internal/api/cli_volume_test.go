package api

import (
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBaremetalCLIVolumes drives /v1/volume with the real `baremetal
// volume connector` and `baremetal volume target` commands
// (python-ironicclient): create, list, show, set, unset, delete, and
// Ironic's refusals as the CLI reports them.
func TestBaremetalCLIVolumes(t *testing.T) {
	bin := testbin.BaremetalCLI(t)
	e := newEnv(t)
	off, on, _ := volumeNodes(e)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--os-endpoint", srv.URL, "--os-auth-type", "none", "--max-retries", "0"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("baremetal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	show := func(args ...string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(mustRun(append(args, "-f", "json")...)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}

	const iqn = "iqn.2017-07.org.openstack:01:d9a51732c3f"
	conn := strings.TrimSpace(mustRun("volume", "connector", "create", "--node", off.UUID, "--type", "iqn",
		"--connector-id", iqn, "--extra", "rack=a", "-f", "value", "-c", "uuid"))
	if out := mustRun("volume", "connector", "list", "--node", "vol-off", "-f", "value", "-c", "Connector ID"); strings.TrimSpace(out) != iqn {
		t.Errorf("connector list: %q", out)
	}
	mustRun("volume", "connector", "set", conn, "--connector-id", "iqn.new", "--extra", "row=2")
	mustRun("volume", "connector", "unset", conn, "--extra", "rack")
	if c := show("volume", "connector", "show", conn); c["connector_id"] != "iqn.new" || c["node_uuid"] != off.UUID || len(c["extra"].(map[string]any)) != 1 {
		t.Errorf("connector show: %v", c)
	}
	out, err := run("volume", "connector", "create", "--node", on.UUID, "--type", "iqn", "--connector-id", "iqn.new")
	if err == nil || !strings.Contains(out, "A volume connector with type iqn and connector ID iqn.new already exists. (HTTP 409)") {
		t.Errorf("duplicate connector: %v %s", err, out)
	}
	onConn := strings.TrimSpace(mustRun("volume", "connector", "create", "--node", on.UUID, "--type", "wwpn",
		"--connector-id", "50:00:00:00:00:00:00:01", "-f", "value", "-c", "uuid"))
	out, err = run("volume", "connector", "set", onConn, "--connector-id", "x")
	if err == nil || !strings.Contains(out, `"volume connector update" can not be performed on node "`+on.UUID+`" while it is in state "power on". (HTTP 400)`) {
		t.Errorf("update on a powered on node: %v %s", err, out)
	}

	target := strings.TrimSpace(mustRun("volume", "target", "create", "--node", off.UUID, "--type", "iscsi",
		"--boot-index", "0", "--volume-id", "04452bed-5367-4202-8bf5-de4335ac56d2",
		"--property", "target_lun=0", "--property", "auth_password=s3cret", "-f", "value", "-c", "uuid"))
	if out := mustRun("volume", "target", "list", "--node", off.UUID, "-f", "value", "-c", "Boot Index"); strings.TrimSpace(out) != "0" {
		t.Errorf("target list: %q", out)
	}
	mustRun("volume", "target", "set", target, "--boot-index", "2", "--type", "fibre_channel")
	mustRun("volume", "target", "unset", target, "--property", "target_lun")
	tg := show("volume", "target", "show", target)
	if tg["boot_index"] != 2.0 || tg["volume_type"] != "fibre_channel" || strings.Contains(mustRun("volume", "target", "show", target), "s3cret") {
		t.Errorf("target show: %v", tg)
	}
	// (The CLI takes --boot-index 0 for "nothing to set".)
	mustRun("volume", "target", "create", "--node", off.UUID, "--type", "iscsi", "--boot-index", "5", "--volume-id", "v")
	out, err = run("volume", "target", "set", target, "--boot-index", "5")
	if err == nil || !strings.Contains(out, "A volume target with boot index '5' for the same node already exists. (HTTP 409)") {
		t.Errorf("duplicate boot index: %v %s", err, out)
	}

	mustRun("volume", "connector", "delete", conn)
	mustRun("volume", "target", "delete", target)
	out, err = run("volume", "connector", "show", conn)
	if err == nil || !strings.Contains(out, "Volume connector "+conn+" could not be found. (HTTP 404)") {
		t.Errorf("deleted connector: %v %s", err, out)
	}
	if out := mustRun("volume", "target", "list", "-f", "value", "-c", "UUID"); strings.Contains(out, target) {
		t.Errorf("deleted target listed: %q", out)
	}
}
