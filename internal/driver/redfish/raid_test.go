package redfish_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

const gib = int64(1) << 30

func raidEmulator(t *testing.T) (*bmcemu.Emulator, *bmcemu.Machine) {
	e := startEmulator(t, bmcemu.Config{Count: 1, Hardware: &bmcemu.Hardware{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1,
		Arch: "x86", DIMMs: 2, DIMMMiB: 4096, DisksBytes: []int64{100 * gib, 100 * gib, 100 * gib, 100 * gib}}})
	return e, e.Machines()[0]
}

func jsonObj(t *testing.T, s string) model.JSON {
	t.Helper()
	var m model.JSON
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRAIDCreateDelete(t *testing.T) {
	e, m := raidEmulator(t)
	r := fastDriver().NewRAID()
	n := node(e, m.ID, testPassword, "auto")
	ctx := context.Background()
	step := func(name string, args model.JSON) error {
		_, err := r.ExecuteStep(ctx, &driver.Task{Node: n}, driver.CleanSteps, driver.Step{Interface: "raid", Step: name, Args: args})
		return err
	}
	if err := step("create_configuration", nil); err == nil || err.Error() != "Node "+n.UUID+" has no target RAID configuration." {
		t.Fatalf("no target: %v", err)
	}
	full := `{"logical_disks": [{"raid_level": "1", "size_gb": 50, "is_root_volume": true},
		{"raid_level": "1", "size_gb": "MAX", "controller": "RAID.Integrated.1-1", "physical_disks": ["Disk.3", "Disk.4"]}]}`
	n.TargetRaidConfig = jsonObj(t, full)
	if err := r.Validate(&driver.Task{Node: n}); err != nil {
		t.Fatal(err)
	}
	// Only the root volume first, on the two smallest free drives.
	if err := step("create_configuration", model.JSON{"create_nonroot_volumes": false}); err != nil {
		t.Fatal(err)
	}
	vols := m.Volumes()
	if len(vols) != 1 || vols[0].RAIDType != "RAID1" || vols[0].CapacityBytes != 50*gib || strings.Join(vols[0].Drives, ",") != "Disk.1,Disk.2" {
		t.Fatalf("volumes after root: %+v", vols)
	}
	lds := n.RaidConfig["logical_disks"].([]any)
	if len(lds) != 1 || n.RaidConfig["last_updated"] == nil {
		t.Fatalf("raid_config %v", n.RaidConfig)
	}
	ld := lds[0].(map[string]any)
	if ld["raid_level"] != "1" || ld["size_gb"] != int64(50) || ld["controller"] != bmcemu.StorageID || ld["id"] != vols[0].ID {
		t.Fatalf("logical disk %v", ld)
	}
	// A configuration the drives cannot hold (the stripe finds no free
	// drive: the MAX mirror keeps Disk.3 and Disk.4) changes nothing, even
	// with delete_existing.
	n.TargetRaidConfig = jsonObj(t, `{"logical_disks": [{"raid_level": "1", "size_gb": 50, "is_root_volume": true},
		{"raid_level": "0", "size_gb": 20}, {"raid_level": "1", "size_gb": "MAX", "controller": "RAID.Integrated.1-1", "physical_disks": ["Disk.3", "Disk.4"]}]}`)
	err := step("create_configuration", model.JSON{"delete_existing": true})
	if err == nil || err.Error() != "Redfish exception occurred. Error: failed to find matching physical disks for all logical disks" {
		t.Fatalf("over-full config: %v", err)
	}
	if v := m.Volumes(); len(v) != 1 || v[0].ID != vols[0].ID {
		t.Fatalf("a failed plan changed the volumes: %+v", v)
	}
	// Without delete_existing the root mirror's drives are taken: no room.
	n.TargetRaidConfig = jsonObj(t, full)
	if err := step("create_configuration", nil); err == nil {
		t.Fatalf("created over the existing volume: %+v", m.Volumes())
	}
	// delete_existing replaces the root mirror with the whole configuration.
	if err := step("create_configuration", model.JSON{"delete_existing": true}); err != nil {
		t.Fatal(err)
	}
	vols = m.Volumes()
	if len(vols) != 2 {
		t.Fatalf("volumes: %+v", vols)
	}
	byDrives := map[string]bmcemu.Volume{}
	for _, v := range vols {
		byDrives[strings.Join(v.Drives, ",")] = v
	}
	if v := byDrives["Disk.3,Disk.4"]; v.RAIDType != "RAID1" || v.CapacityBytes != 100*gib {
		t.Errorf("MAX mirror: %+v", vols)
	}
	if v := byDrives["Disk.1,Disk.2"]; v.RAIDType != "RAID1" || v.CapacityBytes != 50*gib {
		t.Errorf("root mirror: %+v", vols)
	}
	if lds := n.RaidConfig["logical_disks"].([]any); len(lds) != 2 {
		t.Fatalf("raid_config %v", n.RaidConfig)
	}
	if err := step("delete_configuration", nil); err != nil {
		t.Fatal(err)
	}
	if vols := m.Volumes(); len(vols) != 0 {
		t.Fatalf("after delete: %+v", vols)
	}
	if lds := n.RaidConfig["logical_disks"].([]any); len(lds) != 0 {
		t.Fatalf("raid_config after delete %v", n.RaidConfig)
	}
	if err := r.ValidateRAIDConfig(n, jsonObj(t, `{"logical_disks": [{"raid_level": "1", "size_gb": 5, "interface_type": "scsi"}]}`)); err == nil ||
		err.Error() != "interface type `scsi` not supported by Redfish RAID" {
		t.Fatalf("scsi: %v", err)
	}
}

// TestRAIDApplyConfigurationDeployStep: the deploy step takes the
// configuration as an argument, stores it as the target and creates only
// the root volume by default (Ironic's redfish defaults).
func TestRAIDApplyConfigurationDeployStep(t *testing.T) {
	e, m := raidEmulator(t)
	r := fastDriver().NewRAID()
	n := node(e, m.ID, testPassword, "basic")
	cfg := map[string]any(jsonObj(t, `{"logical_disks": [{"raid_level": "5", "size_gb": 150, "is_root_volume": true}, {"raid_level": "0", "size_gb": 10}]}`))
	step := driver.Step{Interface: "raid", Step: "apply_configuration", Args: model.JSON{"raid_config": map[string]any{"logical_disks": "x"}}}
	if _, err := r.ExecuteStep(context.Background(), &driver.Task{Node: n}, driver.DeploySteps, step); err == nil ||
		err.Error() != "RAID config validation error: 'x' is not of type 'array'" || len(n.TargetRaidConfig) != 0 {
		t.Fatalf("bad raid_config: %v (target %v)", err, n.TargetRaidConfig)
	}
	step.Args = model.JSON{"raid_config": cfg}
	if _, err := r.ExecuteStep(context.Background(), &driver.Task{Node: n}, driver.DeploySteps, step); err != nil {
		t.Fatal(err)
	}
	vols := m.Volumes()
	if len(vols) != 1 || vols[0].RAIDType != "RAID5" || len(vols[0].Drives) != 3 || vols[0].CapacityBytes != 150*gib {
		t.Fatalf("volumes %+v", vols)
	}
	if len(n.TargetRaidConfig["logical_disks"].([]any)) != 2 || len(n.RaidConfig["logical_disks"].([]any)) != 1 {
		t.Fatalf("target %v raid_config %v", n.TargetRaidConfig, n.RaidConfig)
	}
}

// TestRAIDTaskMonitor: a BMC answering 202 with a task monitor is
// followed until the task ends (sushy's blocking call).
func TestRAIDTaskMonitor(t *testing.T) {
	e, m := raidEmulator(t)
	var mu sync.Mutex
	var polls int
	inner := e.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/taskmon/1":
			polls++
			if polls < 3 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"TaskState": "Completed"}`))
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Volumes"):
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, r)
			if rec.Code != http.StatusCreated {
				t.Errorf("inner create: %d %s", rec.Code, rec.Body)
			}
			w.Header().Set("Location", "/taskmon/1")
			w.WriteHeader(http.StatusAccepted)
		default:
			inner.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	n := node(e, m.ID, testPassword, "basic")
	n.DriverInfo["redfish_address"] = srv.URL
	n.TargetRaidConfig = jsonObj(t, `{"logical_disks": [{"raid_level": "1", "size_gb": 10}]}`)
	r := fastDriver().NewRAID()
	create := driver.Step{Interface: "raid", Step: "create_configuration"}
	if _, err := r.ExecuteStep(context.Background(), &driver.Task{Node: n}, driver.CleanSteps, create); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if polls != 3 {
		t.Errorf("task monitor polled %d times, want until it ended (3)", polls)
	}
	mu.Unlock()
	if v := m.Volumes(); len(v) != 1 || len(n.RaidConfig["logical_disks"].([]any)) != 1 {
		t.Fatalf("volumes %+v raid_config %v", v, n.RaidConfig)
	}
}

// TestRAIDOnReset: a controller that applies volume changes only at reset
// (the emulator's RAIDOnReset: OnReset alone offered, changes held behind
// task monitors until the machine boots) gets its changes OnReset, the node
// is rebooted and left off as found, and the step ends once the tasks
// completed — for creates, deletes, and delete_existing (two reboots).
func TestRAIDOnReset(t *testing.T) {
	e, m := raidEmulator(t)
	k := m.Knobs()
	k.RAIDOnReset = true
	m.SetKnobs(k)
	r := fastDriver().NewRAID()
	n := node(e, m.ID, testPassword, "basic")
	n.TargetRaidConfig = jsonObj(t, `{"logical_disks": [{"raid_level": "1", "size_gb": 10}]}`)
	step := func(name string, args model.JSON) error {
		_, err := r.ExecuteStep(context.Background(), &driver.Task{Node: n}, driver.CleanSteps,
			driver.Step{Interface: "raid", Step: name, Args: args})
		return err
	}
	boots := m.Status().Boots
	if err := step("create_configuration", nil); err != nil {
		t.Fatal(err)
	}
	v := m.Volumes()
	if len(v) != 1 || v[0].RAIDType != "RAID1" || len(n.RaidConfig["logical_disks"].([]any)) != 1 {
		t.Fatalf("after create: volumes %+v raid_config %v", v, n.RaidConfig)
	}
	if st := m.Status(); st.Boots != boots+1 || st.Power != "Off" {
		t.Fatalf("create: %d boots (want 1), power %s (want Off, as found)", st.Boots-boots, st.Power)
	}
	if err := step("create_configuration", model.JSON{"delete_existing": true}); err != nil {
		t.Fatal(err)
	}
	if v2 := m.Volumes(); len(v2) != 1 || v2[0].ID == v[0].ID {
		t.Fatalf("delete_existing: volumes %+v (was %+v)", v2, v)
	}
	if st := m.Status(); st.Boots != boots+3 {
		t.Fatalf("delete_existing: %d boots in all, want 3", st.Boots-boots)
	}
	if err := step("delete_configuration", nil); err != nil {
		t.Fatal(err)
	}
	if v := m.Volumes(); len(v) != 0 || len(n.RaidConfig["logical_disks"].([]any)) != 0 {
		t.Fatalf("after delete: volumes %+v raid_config %v", v, n.RaidConfig)
	}
}
