// Package ironic_test runs `anvil agent` under real OpenStack Ironic 21.4
// (Debian's python3-ironic, standalone on loopback): Ironic's conductor
// drives the agent with IPA's protocol through agent cleaning and a direct
// deploy, the agent writing to a disk file.
package ironic_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// stepTimeout bounds each provisioning step under Ironic (its periodic
// tasks and the agent's lookup backoff take seconds on a loaded machine).
const stepTimeout = 3 * time.Minute

// TestIronicDrivesAgent: Ironic manages, cleans (provide: the agent's
// erase_devices_metadata, priority 99) and deploys (direct: Ironic's
// write_image deploy step run by the agent, get_partition_uuids, power off)
// a fake-hardware node whose agent is `anvil agent` on a file disk; the node
// reaches active and the disk holds the image byte for byte.
func TestIronicDrivesAgent(t *testing.T) {
	ironic := startIronic(t)
	const mib = 1 << 20
	image := make([]byte, 3*mib+4321)
	_, _ = rand.Read(image)
	sum := sha256.Sum256(image)
	imgs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "disk.img", time.Time{}, bytes.NewReader(image))
	}))
	defer imgs.Close()

	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, bytes.Repeat([]byte{0xAA}, 16*mib), 0o600); err != nil {
		t.Fatal(err)
	}
	const mac = "52:54:00:12:34:56"
	n := call(t, 201, "POST", ironic+"/v1/nodes", map[string]any{"name": "ironic-drives-anvil", "driver": "fake-hardware",
		"deploy_interface": "direct", "boot_interface": "fake", "power_interface": "fake", "management_interface": "noop",
		"properties": map[string]any{"memory_mb": 4096, "cpus": 2, "local_gb": 1, "cpu_arch": "x86_64", "capabilities": "boot_mode:bios"}})
	node := n["uuid"].(string)
	call(t, 201, "POST", ironic+"/v1/ports", map[string]any{"node_uuid": node, "address": mac})
	testbin.Start(t, "anvil agent", anvilBin, "agent", "--api-url", ironic, "--mac", mac, "--disk", disk,
		"--listen", testbin.FreeAddr(t), "--heartbeat-interval", "1s", "--log-level", "debug", "--cmdline", "/nonexistent")

	provision(t, ironic, node, "manage")
	testbin.WaitState(t, ironic, node, "manageable", stepTimeout)
	provision(t, ironic, node, "provide")
	testbin.WaitState(t, ironic, node, "available", stepTimeout)
	d, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d[:mib], make([]byte, mib)) || !bytes.Equal(d[len(d)-mib:], make([]byte, mib)) || d[8*mib] != 0xAA {
		t.Fatal("agent cleaning under Ironic did not erase exactly the first and last MiB (erase_devices_metadata)")
	}

	call(t, 200, "PATCH", ironic+"/v1/nodes/"+node, []map[string]any{
		{"op": "add", "path": "/instance_info/image_source", "value": imgs.URL + "/disk.img"},
		{"op": "add", "path": "/instance_info/image_checksum", "value": hex.EncodeToString(sum[:])},
	})
	provision(t, ironic, node, "active")
	got := testbin.WaitState(t, ironic, node, "active", stepTimeout)
	if got["last_error"] != nil {
		t.Errorf("last_error after the deploy: %v", got["last_error"])
	}
	d, err = os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 16*mib || !bytes.Equal(d[:len(image)], image) {
		t.Fatalf("the disk (%d bytes) does not start with the image", len(d))
	}
}

// call sends a request to Ironic at its latest microversion and checks the
// status.
func call(t *testing.T, want int, method, url string, body any) map[string]any {
	t.Helper()
	r := testbin.Call(t, "latest", method, url, body)
	if r.Status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.Status, want, r.Body)
	}
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(t)
}

func provision(t *testing.T, base, node, target string) {
	t.Helper()
	call(t, 202, "PUT", base+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": target})
}
