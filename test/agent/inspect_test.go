package agent_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// writeFixture writes a machine's /proc and /sys (what ReadInventory and the
// agent's MAC discovery read) under a temporary root and returns it.
func writeFixture(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// startAgentRoot runs `anvil agent` reading its NICs and inventory under root.
func startAgentRoot(t *testing.T, api, root, disk string) *process {
	t.Helper()
	return start(t, "anvil agent", "agent", "--api-url", api, "--root-dir", root, "--disk", disk,
		"--listen", testbin.FreeAddr(t), "--heartbeat-interval", "100ms", "--log-level", "debug")
}

// TestAgentInspection: a node with inspect_interface "agent" and a port for
// one of its two NICs; the agent reads a fixture /proc and /sys. manage →
// inspect → manageable with cpus, memory_mb, local_gb and cpu_arch from the
// fixture, a port created for the second NIC, the node powered off, and the
// inventory served by GET /v1/nodes/{node}/inventory (1.81).
func TestAgentInspection(t *testing.T) {
	api := startServer(t)
	const mac1, mac2 = "52:54:00:cc:00:01", "52:54:00:cc:00:02"
	cpuinfo := ""
	for i := range 6 {
		cpuinfo += "processor\t: " + strconv.Itoa(i) + "\nmodel name\t: Anvil Fixture CPU @ 2.00GHz\n\n"
	}
	root := writeFixture(t, map[string]string{
		"proc/cpuinfo":                       cpuinfo,
		"proc/meminfo":                       "MemTotal:       16777216 kB\nMemFree:         1234 kB\n",
		"proc/sys/kernel/arch":               "aarch64\n",
		"sys/block/sda/size":                 strconv.Itoa(200 << 21), // 200 GiB in 512-byte sectors
		"sys/block/sda/queue/rotational":     "1\n",
		"sys/block/sda/device/serial":        "FIXTURE-SDA-1\n",
		"sys/block/nvme0n1/size":             strconv.Itoa(50 << 21),
		"sys/block/nvme0n1/queue/rotational": "0\n",
		"sys/block/loop0/size":               "100",
		"sys/class/net/lo/address":           "00:00:00:00:00:00\n",
		"sys/class/net/eth0/address":         mac1 + "\n",
		"sys/class/net/eth0/carrier":         "1\n",
		"sys/class/net/eth1/address":         strings.ToUpper(mac2) + "\n",
		"sys/class/net/eth1/carrier":         "0\n",
		"sys/class/dmi/id/sys_vendor":        "Anvil Metal\n",
		"sys/class/dmi/id/product_name":      "Fixture 9000\n",
		"sys/class/dmi/id/product_serial":    "SN-42\n",
		"sys/firmware/efi/.keep":             "",
	})
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "inspect-node", "driver": "fake-hardware",
		"inspect_interface": "agent"}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": mac1})
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	// No inventory before inspection.
	if r := call(t, "GET", api+"/v1/nodes/"+node+"/inventory", nil); r.Status != http.StatusNotFound {
		t.Fatalf("inventory before inspection: HTTP %d: %s", r.Status, r.Body)
	}

	startAgentRoot(t, api, root, tempDisk(t, mib, 0))
	provision(t, api, node, "inspect")
	got := waitState(t, api, node, "manageable")
	if got["last_error"] != nil {
		t.Fatalf("last_error after inspection: %v", got["last_error"])
	}
	props := got["properties"].(map[string]any)
	want := map[string]any{"cpus": float64(6), "memory_mb": float64(16384), "local_gb": float64(199), "cpu_arch": "aarch64"}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("properties.%s = %v, want %v (properties %v)", k, props[k], v, props)
		}
	}
	if got["power_state"] != "power off" {
		t.Errorf("power_state after inspection = %v, want power off", got["power_state"])
	}
	if got["inspection_finished_at"] == nil {
		t.Errorf("inspection_finished_at not set")
	}

	ports := mustCall(t, 200, "GET", api+"/v1/ports?node="+node+"&fields=address", nil).JSON(t)["ports"].([]any)
	addrs := map[string]bool{}
	for _, p := range ports {
		addrs[p.(map[string]any)["address"].(string)] = true
	}
	if len(addrs) != 2 || !addrs[mac1] || !addrs[mac2] {
		t.Errorf("ports after inspection = %v, want %s and %s", addrs, mac1, mac2)
	}

	// The inventory has its own endpoint; node documents do not carry it.
	if r := call(t, "GET", api+"/v1/nodes/"+node, nil); strings.Contains(string(r.Body), "inspection_inventory") || strings.Contains(string(r.Body), "system_vendor") {
		t.Errorf("GET /v1/nodes/{node} carries the inventory: %s", r.Body)
	}
	inv := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/inventory", nil).JSON(t)
	if _, ok := inv["plugin_data"].(map[string]any); !ok {
		t.Errorf("inventory response has no plugin_data object: %v", inv)
	}
	body := inv["inventory"].(map[string]any)
	cpu := body["cpu"].(map[string]any)
	if cpu["count"] != float64(6) || cpu["architecture"] != "aarch64" || cpu["model_name"] != "Anvil Fixture CPU @ 2.00GHz" {
		t.Errorf("inventory cpu = %v", cpu)
	}
	if mem := body["memory"].(map[string]any); mem["physical_mb"] != float64(16384) {
		t.Errorf("inventory memory = %v", mem)
	}
	disks := map[string]map[string]any{}
	for _, d := range body["disks"].([]any) {
		dm := d.(map[string]any)
		disks[dm["name"].(string)] = dm
	}
	if sda := disks["/dev/sda"]; sda == nil || sda["size"] != float64(200<<30) || sda["rotational"] != true || sda["serial"] != "FIXTURE-SDA-1" {
		t.Errorf("inventory disk sda = %v (disks %v)", disks["/dev/sda"], disks)
	}
	if nv := disks["/dev/nvme0n1"]; nv == nil || nv["rotational"] != false {
		t.Errorf("inventory disk nvme0n1 = %v", nv)
	}
	if _, ok := disks["/dev/loop0"]; ok {
		t.Errorf("loop device reported as a disk")
	}
	nics := map[string]map[string]any{}
	for _, i := range body["interfaces"].([]any) {
		im := i.(map[string]any)
		nics[im["name"].(string)] = im
	}
	if e0, e1 := nics["eth0"], nics["eth1"]; len(nics) != 2 || e0["mac_address"] != mac1 || e0["has_carrier"] != true || e1["has_carrier"] != false {
		t.Errorf("inventory interfaces = %v", nics)
	}
	if sv := body["system_vendor"].(map[string]any); sv["manufacturer"] != "Anvil Metal" || sv["product_name"] != "Fixture 9000" || sv["serial_number"] != "SN-42" {
		t.Errorf("inventory system_vendor = %v", sv)
	}
	if b := body["boot"].(map[string]any); b["current_boot_mode"] != "uefi" {
		t.Errorf("inventory boot = %v", b)
	}

	// Before 1.81 the endpoint does not exist.
	if r := testbin.Call(t, "1.80", "GET", api+"/v1/nodes/"+node+"/inventory", nil); r.Status != http.StatusNotFound {
		t.Errorf("inventory at 1.80: HTTP %d, want 404", r.Status)
	}
}
