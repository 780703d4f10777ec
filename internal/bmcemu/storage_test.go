package bmcemu_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

func TestStorageVolumes(t *testing.T) {
	const g = int64(1) << 30
	e := start(t, bmcemu.Config{Count: 1, Hardware: &bmcemu.Hardware{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1,
		Arch: "x86", DIMMs: 1, DIMMMiB: 1024, DisksBytes: []int64{100 * g, 100 * g, 100 * g, 200 * g}}})
	m := e.Machines()[0]
	base := e.URL() + "/redfish/v1/Systems/" + m.ID + "/Storage"
	ctrl := base + "/" + bmcemu.StorageID
	get := func(path string, v any) {
		t.Helper()
		r := do(t, "GET", path, "admin", pw, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		if err := json.Unmarshal([]byte(r.body), v); err != nil {
			t.Fatal(err)
		}
	}
	var st struct {
		StorageControllers []struct{ SupportedRAIDTypes []string }
		Drives             []struct {
			ID string `json:"@odata.id"`
		}
	}
	get(ctrl, &st)
	if len(st.Drives) != 4 || len(st.StorageControllers) != 1 || !strings.Contains(strings.Join(st.StorageControllers[0].SupportedRAIDTypes, ","), "RAID1") {
		t.Fatalf("storage: %+v", st)
	}
	var drive struct {
		CapacityBytes       int64
		MediaType, Protocol string
	}
	get(e.URL()+st.Drives[3].ID, &drive)
	if drive.CapacityBytes != 200*g || drive.MediaType != "SSD" {
		t.Fatalf("drive: %+v", drive)
	}
	drives := func(ids ...int) string {
		var parts []string
		for _, i := range ids {
			parts = append(parts, `{"@odata.id": "`+st.Drives[i].ID+`"}`)
		}
		return `"Links": {"Drives": [` + strings.Join(parts, ",") + `]}`
	}
	for name, tc := range map[string]struct {
		body string
		want int
	}{
		"RAID1 on three drives": {`{"RAIDType": "RAID1", ` + drives(0, 1, 2) + `}`, 400},
		"RAID5 on two drives":   {`{"RAIDType": "RAID5", ` + drives(0, 1) + `}`, 400},
		"unsupported type":      {`{"RAIDType": "RAID60", ` + drives(0, 1, 2, 3) + `}`, 400},
		"too large":             {`{"RAIDType": "RAID1", "CapacityBytes": 107374182401, ` + drives(0, 1) + `}`, 400},
		"unknown drive":         {`{"RAIDType": "RAID0", "Links": {"Drives": [{"@odata.id": "/redfish/v1/Systems/x/Drives/1"}]}}`, 400},
		"OnReset":               {`{"RAIDType": "RAID0", "@Redfish.OperationApplyTime": "OnReset", ` + drives(0) + `}`, 400},
	} {
		if r := do(t, "POST", ctrl+"/Volumes", "admin", pw, tc.body); r.status != tc.want {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if len(m.Volumes()) != 0 {
		t.Fatalf("refused posts created volumes: %+v", m.Volumes())
	}
	r := do(t, "POST", ctrl+"/Volumes", "admin", pw, `{"RAIDType": "RAID1", "CapacityBytes": 53687091200, "@Redfish.OperationApplyTime": "Immediate", `+drives(0, 3)+`}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", ctrl+"/Volumes", "admin", pw, `{"RAIDType": "RAID0", `+drives(3)+`}`); r.status != 400 {
		t.Fatalf("drive in use: %d %s", r.status, r.body)
	}
	r = do(t, "POST", ctrl+"/Volumes", "admin", pw, `{"RAIDType": "RAID0", `+drives(1, 2)+`}`)
	if r.status != 201 {
		t.Fatalf("create MAX: %d %s", r.status, r.body)
	}
	vols := m.Volumes()
	if len(vols) != 2 || vols[0].RAIDType != "RAID1" || vols[0].CapacityBytes != 50*g || strings.Join(vols[0].Drives, ",") != "Disk.1,Disk.4" ||
		vols[1].CapacityBytes != 200*g {
		t.Fatalf("volumes: %+v", vols)
	}
	var col struct {
		Members []struct {
			ID string `json:"@odata.id"`
		}
		Support struct{ SupportedValues []string } `json:"@Redfish.OperationApplyTimeSupport"`
	}
	get(ctrl+"/Volumes", &col)
	if len(col.Members) != 2 || len(col.Support.SupportedValues) != 1 {
		t.Fatalf("collection: %+v", col)
	}
	var vol struct {
		RAIDType, VolumeType string
		CapacityBytes        int64
	}
	get(e.URL()+col.Members[0].ID, &vol)
	if vol.RAIDType != "RAID1" || vol.VolumeType != "Mirrored" || vol.CapacityBytes != 50*g {
		t.Fatalf("volume: %+v", vol)
	}
	if r := do(t, "DELETE", e.URL()+col.Members[0].ID, "admin", pw, ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := do(t, "DELETE", e.URL()+col.Members[0].ID, "admin", pw, ""); r.status != 404 {
		t.Fatalf("delete again: %d", r.status)
	}
	if vols := m.Volumes(); len(vols) != 1 || vols[0].RAIDType != "RAID0" {
		t.Fatalf("after delete: %+v", vols)
	}
}

// A controller that applies volume changes only at reset: the collection
// offers OnReset alone, a create or delete answers 202 with a task monitor
// that stays 202 until the machine boots, and the change happens then.
func TestStorageVolumesOnReset(t *testing.T) {
	const g = int64(1) << 30
	e := start(t, bmcemu.Config{Count: 1, Hardware: &bmcemu.Hardware{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1,
		Arch: "x86", DIMMs: 1, DIMMMiB: 1024, DisksBytes: []int64{100 * g, 100 * g}}})
	m := e.Machines()[0]
	k := m.Knobs()
	k.RAIDOnReset = true
	m.SetKnobs(k)
	sys := e.URL() + "/redfish/v1/Systems/" + m.ID
	ctrl := sys + "/Storage/" + bmcemu.StorageID
	var col struct {
		Support struct{ SupportedValues []string } `json:"@Redfish.OperationApplyTimeSupport"`
	}
	r := do(t, "GET", ctrl+"/Volumes", "admin", pw, "")
	if err := json.Unmarshal([]byte(r.body), &col); err != nil || strings.Join(col.Support.SupportedValues, ",") != "OnReset" {
		t.Fatalf("apply times %+v (%v)", col, err)
	}
	disk := func(i string) string {
		return `{"@odata.id": "` + strings.TrimPrefix(ctrl, e.URL()) + `/Drives/Disk.` + i + `"}`
	}
	if r := do(t, "POST", ctrl+"/Volumes", "admin", pw, `{"RAIDType": "RAID1", "@Redfish.OperationApplyTime": "Immediate", "Links": {"Drives": [`+disk("1")+`,`+disk("2")+`]}}`); r.status != 400 {
		t.Fatalf("Immediate on an OnReset controller: %d %s", r.status, r.body)
	}
	r = do(t, "POST", ctrl+"/Volumes", "admin", pw, `{"RAIDType": "RAID1", "@Redfish.OperationApplyTime": "OnReset", "Links": {"Drives": [`+disk("1")+`,`+disk("2")+`]}}`)
	if r.status != 202 || r.header.Get("Location") == "" {
		t.Fatalf("held create: %d %s", r.status, r.body)
	}
	monitor := e.URL() + r.header.Get("Location")
	if r := do(t, "POST", ctrl+"/Volumes", "admin", pw, `{"RAIDType": "RAID0", "Links": {"Drives": [`+disk("1")+`]}}`); r.status != 400 {
		t.Fatalf("a drive a held create takes: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", monitor, "admin", pw, ""); r.status != 202 || len(m.Volumes()) != 0 {
		t.Fatalf("before the reset: monitor %d, volumes %+v", r.status, m.Volumes())
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "On"}`); r.status != 204 {
		t.Fatalf("power on: %d %s", r.status, r.body)
	}
	r = do(t, "GET", monitor, "admin", pw, "")
	vols := m.Volumes()
	if r.status != 200 || !strings.Contains(r.body, `"Completed"`) || len(vols) != 1 || vols[0].RAIDType != "RAID1" {
		t.Fatalf("after the boot: monitor %d %s, volumes %+v", r.status, r.body, vols)
	}
	r = do(t, "DELETE", ctrl+"/Volumes/"+vols[0].ID, "admin", pw, "")
	if r.status != 202 || len(m.Volumes()) != 1 {
		t.Fatalf("held delete: %d %s, volumes %+v", r.status, r.body, m.Volumes())
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "ForceRestart"}`); r.status != 204 {
		t.Fatalf("restart: %d %s", r.status, r.body)
	}
	if len(m.Volumes()) != 0 {
		t.Fatalf("the held delete did not happen at the reset: %+v", m.Volumes())
	}
}
