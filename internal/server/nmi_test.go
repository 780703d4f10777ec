package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// TestInjectNMI: PUT .../management/inject_nmi (gophercloud's InjectNMI)
// reaches the emulated BMC as ComputerSystem.Reset Nmi; Ironic's errors
// for fake-hardware, a refusing BMC and versions before 1.29.
func TestInjectNMI(t *testing.T) {
	e := newVendorEnv(t)
	if err := nodes.InjectNMI(t.Context(), e.gc, e.node).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if got := e.m.Status().NMIs; got != 1 {
		t.Errorf("the BMC saw %d NMIs, want 1", got)
	}
	path := "/v1/nodes/" + e.node + "/management/inject_nmi"
	if code, _ := e.callAt("PUT", path, "{}", "1.28"); code != 404 {
		t.Errorf("inject_nmi at 1.28: %d, want 404", code)
	}
	e.emu.SetKnobs(e.m.ID, func(k *bmcemu.Knobs) { k.RejectAuth = true })
	code, msg := e.call("PUT", path, "{}")
	if code != 500 || !strings.HasPrefix(msg, "Redfish exception occurred. Error: Redfish inject NMI failed for node "+e.node) {
		t.Errorf("refused credentials: %d %s", code, msg)
	}
	e.emu.SetKnobs(e.m.ID, func(k *bmcemu.Knobs) { k.RejectAuth = false })
	if got := e.m.Status().NMIs; got != 1 {
		t.Errorf("the BMC saw %d NMIs, want still 1", got)
	}

	fk := e.do("POST", "/v1/nodes", `{"driver":"fake-hardware"}`, 201)["uuid"].(string)
	code, msg = e.call("PUT", "/v1/nodes/"+fk+"/management/inject_nmi", "")
	if code != 400 || msg != "Driver fake-hardware does not support inject_nmi (disabled or not implemented)." {
		t.Errorf("fake-hardware: %d %s", code, msg)
	}
}

// TestInjectNMIIPMI: the ipmi driver sends Chassis Control "pulse
// diagnostic interrupt"; the emulator's IPMI BMC (go-ipmi's server, like
// BMCs without an NMI line) refuses it, which is Ironic's IPMIFailure.
func TestInjectNMIIPMI(t *testing.T) {
	emu, err := bmcemu.Start(t.Context(), bmcemu.Config{Count: 1, IPMI: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	s := serve(t)
	nf, err := emu.Nodes(bmcemu.DriverIPMI)
	if err != nil {
		t.Fatal(err)
	}
	di, _ := json.Marshal(nf.Nodes[0].DriverInfo)
	n := s.do("POST", "/v1/nodes", `{"driver":"ipmi","driver_info":`+string(di)+`}`, 201)["uuid"].(string)
	code, msg := s.call("PUT", "/v1/nodes/"+n+"/management/inject_nmi", "")
	if code != 500 || msg != "IPMI call failed: power diag." {
		t.Errorf("ipmi inject_nmi: %d %s", code, msg)
	}
}

// TestHealthFromPowerSync: the power sync records the BMC's Status.Health
// in the node's health (1.109) with a history entry; ipmi nodes keep null.
func TestHealthFromPowerSync(t *testing.T) {
	e := newVendorEnv(t)
	path := "/v1/nodes/" + e.node
	e.pollHealth(path, "OK")
	e.emu.SetKnobs(e.m.ID, func(k *bmcemu.Knobs) { k.Health = "Critical" })
	e.pollHealth(path, "Critical")
	if n := e.getAt(path, "1.108"); n["health"] != nil {
		t.Errorf("health shown at 1.108: %v", n["health"])
	}
	hist := e.do("GET", path+"/history", "", 200)
	if !strings.Contains(mustJSON(t, hist), "Node health status changed: health='Critical' (previously 'OK')") {
		t.Errorf("history lacks the change: %s", mustJSON(t, hist))
	}
}

// pollHealth polls the node until its health is want (bounded).
func (e *vendorEnv) pollHealth(path, want string) {
	e.t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n := e.do("GET", path, "", 200)
		if n["health"] == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("health stayed %v, want %s", n["health"], want)
		}
		<-tick.C
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRedfishInspectionInventory: after a redfish (out-of-band)
// inspection GET /v1/nodes/{node}/inventory answers the inventory in IPA's
// format, read with gophercloud as Metal3 reads it. (Disks come from the
// Storage drives, as Ironic prefers them to SimpleStorage.)
func TestRedfishInspectionInventory(t *testing.T) {
	e := newVendorEnv(t)
	if code, msg := e.call("GET", "/v1/nodes/"+e.node+"/inventory", ""); code != 404 {
		t.Fatalf("inventory before inspection: %d %s", code, msg)
	}
	e.do("PUT", "/v1/nodes/"+e.node+"/states/provision", `{"target":"manage"}`, 202)
	e.wait(e.node, "manageable")
	e.do("PUT", "/v1/nodes/"+e.node+"/states/provision", `{"target":"inspect"}`, 202)
	e.wait(e.node, "manageable")
	data, err := nodes.GetInventory(t.Context(), e.gc, e.node).Extract()
	if err != nil {
		t.Fatal(err)
	}
	inv, hw := data.Inventory, e.m.HW
	if inv.CPU.Count != hw.Sockets*hw.CoresPerSocket*hw.ThreadsPerCore || inv.CPU.Architecture != "x86_64" ||
		inv.CPU.ModelName != "Emulated CPU" || string(inv.CPU.RealFrequency) != "3000" {
		t.Errorf("cpu = %+v", inv.CPU)
	}
	if inv.Memory.PhysicalMb != hw.DIMMs*hw.DIMMMiB {
		t.Errorf("memory = %+v, want %d MiB", inv.Memory, hw.DIMMs*hw.DIMMMiB)
	}
	if len(inv.Disks) != len(hw.DisksBytes) || len(inv.Disks) == 0 || inv.Disks[0].Size != hw.DisksBytes[0] || inv.Disks[0].Name == "" {
		t.Errorf("disks = %+v, want sizes %v", inv.Disks, hw.DisksBytes)
	}
	if len(inv.Interfaces) != len(hw.MACs) || !strings.EqualFold(inv.Interfaces[0].MACAddress, hw.MACs[0]) || inv.Interfaces[0].SpeedMbps != 10000 {
		t.Errorf("interfaces = %+v, want MACs %v", inv.Interfaces, hw.MACs)
	}
	if v := inv.SystemVendor; v.Manufacturer != "Anvil" || v.ProductName != "Emulated 1U" || v.SerialNumber == "" {
		t.Errorf("system_vendor = %+v", v)
	}
	if inv.Boot.CurrentBootMode == "" {
		t.Errorf("boot = %+v", inv.Boot)
	}
	if node := e.do("GET", "/v1/nodes/"+e.node, "", 200); strings.Contains(mustJSON(t, node), "system_vendor") {
		t.Errorf("the node document shows the inventory")
	}
}

// TestRedfishBootModeChange: PUT .../states/boot_mode (1.76) changes the
// emulated system's boot mode in a worker and records boot_mode.
func TestRedfishBootModeChange(t *testing.T) {
	e := newVendorEnv(t)
	e.do("PUT", "/v1/nodes/"+e.node+"/states/boot_mode", `{"target":"bios"}`, 202)
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		n := e.do("GET", "/v1/nodes/"+e.node, "", 200)
		if n["boot_mode"] == "bios" {
			break
		}
		if time.Now().After(deadline) || n["last_error"] != nil {
			t.Fatalf("boot_mode %v, last_error %v", n["boot_mode"], n["last_error"])
		}
		<-tick.C
	}
	if got := e.m.Status().BootMode; got != bmcemu.ModeLegacy {
		t.Errorf("the BMC's boot mode is %s, want Legacy", got)
	}
}
