package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
)

// TestRAIDEndToEnd: `anvil serve` and the BMC emulator, driven by
// gophercloud as Metal3 does. A target RAID configuration that fails
// Ironic's schema is a 400 that changes nothing; no-raid is Ironic's 404;
// a manual clean running raid.delete_configuration then
// raid.create_configuration deletes the volume already on the BMC and
// creates the configured ones, which the emulator holds and the node's
// raid_config shows.
func TestRAIDEndToEnd(t *testing.T) {
	const g = int64(1) << 30
	emu, err := bmcemu.Start(context.Background(), bmcemu.Config{Count: 1, Password: "emu-pw-7781",
		Hardware: &bmcemu.Hardware{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1, Arch: "x86", DIMMs: 2, DIMMMiB: 4096,
			DisksBytes: []int64{100 * g, 100 * g, 100 * g, 100 * g}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	m := emu.Machines()[0]
	// The operator lets redfish nodes take the fake deploy and boot: the
	// emulated machine has no agent to run and RAID needs none.
	s := serveWith(t, func(c *Config) {
		c.Interfaces = driver.Enablement{Interfaces: map[string][]string{"deploy": {"fake", "direct"}, "boot": {"fake", "ipxe"}}}
	})
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: s.base + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	client.Microversion = "1.89"
	ctx := t.Context()
	info := map[string]any{"redfish_address": emu.URL(), "redfish_system_id": "/redfish/v1/Systems/" + m.ID,
		"redfish_username": "admin", "redfish_password": "emu-pw-7781"}
	n, err := nodes.Create(ctx, client, nodes.CreateOpts{Driver: "redfish", Name: "raid-1", DeployInterface: "fake",
		BootInterface: "fake", DriverInfo: info}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if n.RAIDInterface != "redfish" {
		t.Fatalf("raid_interface %q, want redfish (the redfish hardware type's default)", n.RAIDInterface)
	}
	noRAID, err := nodes.Create(ctx, client, nodes.CreateOpts{Driver: "redfish", Name: "raid-none", RAIDInterface: "no-raid",
		DeployInterface: "fake", BootInterface: "fake", DriverInfo: info}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	size := func(gb int) *int { return &gb }
	yes := true
	good := nodes.RAIDConfigOpts{LogicalDisks: []nodes.LogicalDisk{
		{RAIDLevel: nodes.RAID1, SizeGB: size(50), IsRootVolume: &yes},
		{RAIDLevel: nodes.RAID1, Controller: bmcemu.StorageID, PhysicalDisks: []any{"Disk.3", "Disk.4"}}, // size_gb MAX
	}}
	status := func(err error) int {
		var e gophercloud.ErrUnexpectedResponseCode
		if errors.As(err, &e) {
			return e.Actual
		}
		return 0
	}
	bad := nodes.RAIDConfigOpts{LogicalDisks: []nodes.LogicalDisk{{RAIDLevel: "7", SizeGB: size(10)}}}
	err = nodes.SetRAIDConfig(ctx, client, n.UUID, bad).ExtractErr()
	if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "RAID config validation error: '7' is not one of") {
		t.Fatalf("bad config: %v", err)
	}
	err = nodes.SetRAIDConfig(ctx, client, noRAID.UUID, good).ExtractErr()
	if status(err) != http.StatusNotFound || !strings.Contains(err.Error(), "Driver redfish does not support raid (disabled or not implemented).") {
		t.Fatalf("no-raid: %v", err)
	}
	if got, _ := nodes.Get(ctx, client, n.UUID).Extract(); len(got.TargetRAIDConfig) != 0 {
		t.Fatalf("a refused config was stored: %v", got.TargetRAIDConfig)
	}
	if err := nodes.SetRAIDConfig(ctx, client, n.UUID, good).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	// A volume left on the BMC from before, for delete_configuration.
	s.do("PUT", "/v1/nodes/raid-1/states/provision", `{"target": "manage"}`, 202)
	s.wait("raid-1", "manageable")
	stale, err := http.NewRequest("POST", emu.URL()+"/redfish/v1/Systems/"+m.ID+"/Storage/"+bmcemu.StorageID+"/Volumes",
		strings.NewReader(`{"RAIDType": "RAID0", "Links": {"Drives": [{"@odata.id": "/redfish/v1/Systems/`+m.ID+`/Storage/`+bmcemu.StorageID+`/Drives/Disk.1"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	stale.SetBasicAuth("admin", "emu-pw-7781")
	if resp, err := http.DefaultClient.Do(stale); err != nil || resp.StatusCode != 201 {
		t.Fatalf("stale volume: %v %v", resp, err)
	}
	err = nodes.ChangeProvisionState(ctx, client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetClean,
		CleanSteps: []nodes.CleanStep{{Interface: nodes.InterfaceRAID, Step: "delete_configuration"},
			{Interface: nodes.InterfaceRAID, Step: "create_configuration"}}}).ExtractErr()
	if err != nil {
		t.Fatal(err)
	}
	s.wait("raid-1", "manageable")
	got, err := nodes.Get(ctx, client, n.UUID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if got.LastError != "" || got.Maintenance {
		t.Fatalf("clean failed: %q", got.LastError)
	}
	vols := m.Volumes()
	if len(vols) != 2 {
		t.Fatalf("volumes on the BMC: %+v", vols)
	}
	byDrives := map[string]bmcemu.Volume{}
	for _, v := range vols {
		byDrives[strings.Join(v.Drives, ",")] = v
	}
	if v := byDrives["Disk.1,Disk.2"]; v.RAIDType != "RAID1" || v.CapacityBytes != 50*g {
		t.Errorf("root mirror: %+v", vols)
	}
	if v := byDrives["Disk.3,Disk.4"]; v.RAIDType != "RAID1" || v.CapacityBytes != 100*g {
		t.Errorf("MAX mirror: %+v", vols)
	}
	lds, _ := got.RAIDConfig["logical_disks"].([]any)
	if len(lds) != 2 || got.RAIDConfig["last_updated"] == nil {
		t.Fatalf("raid_config %v", got.RAIDConfig)
	}
	sizes := map[float64]bool{}
	for _, l := range lds {
		ld := l.(map[string]any)
		if ld["raid_level"] != "1" || ld["controller"] != bmcemu.StorageID {
			t.Errorf("logical disk %v", ld)
		}
		sizes[ld["size_gb"].(float64)] = true
	}
	if !sizes[50] || !sizes[100] {
		t.Errorf("raid_config sizes %v", lds)
	}
}
