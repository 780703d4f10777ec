package raid

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

func drives(n int, size int64, media, proto string) []Drive {
	var out []Drive
	for i := 0; i < n; i++ {
		id := string(rune('A' + i))
		out = append(out, Drive{ID: id, Path: "/d/" + id, Storage: "RAID.1", CapacityBytes: size, MediaType: media, Protocol: proto})
	}
	return out
}

func cfgOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	if err := Validate(m); err != nil {
		t.Fatalf("test config invalid: %v", err)
	}
	return m
}

func TestPlan(t *testing.T) {
	const g = int64(1) << 30
	four := drives(4, 100*g, "SSD", "SATA")
	mixed := append(drives(2, 100*g, "HDD", "SAS"), Drive{ID: "S1", Storage: "RAID.1", CapacityBytes: 50 * g, MediaType: "SSD", Protocol: "SATA"},
		Drive{ID: "S2", Storage: "RAID.1", CapacityBytes: 50 * g, MediaType: "SSD", Protocol: "SATA"})
	tests := []struct {
		name          string
		drives        []Drive
		inUse         map[string]bool
		cfg           string
		root, nonroot bool
		want          []Volume
		err           string
	}{
		{name: "root mirror and a stripe on the rest", drives: four, root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "1", "size_gb": 50, "is_root_volume": true}, {"raid_level": "0", "size_gb": 20}]}`,
			want: []Volume{{RAIDLevel: "0", SizeBytes: 20 * g, Controller: "RAID.1", Drives: []string{"C"}},
				{RAIDLevel: "1", SizeBytes: 50 * g, Controller: "RAID.1", Drives: []string{"A", "B"}, IsRootVolume: true}}},
		{name: "root only", drives: four, root: true, nonroot: false,
			cfg:  `{"logical_disks": [{"raid_level": "1", "size_gb": 50, "is_root_volume": true}, {"raid_level": "0", "size_gb": 20}]}`,
			want: []Volume{{RAIDLevel: "1", SizeBytes: 50 * g, Controller: "RAID.1", Drives: []string{"A", "B"}, IsRootVolume: true}}},
		{name: "MAX on given drives", drives: four, root: true, nonroot: true,
			cfg:  `{"logical_disks": [{"raid_level": "1", "size_gb": "MAX", "controller": "RAID.1", "physical_disks": ["B", "D"]}]}`,
			want: []Volume{{RAIDLevel: "1", SizeBytes: 100 * g, Controller: "RAID.1", Drives: []string{"B", "D"}}}},
		{name: "RAID 5 takes three drives", drives: four, root: true, nonroot: true,
			cfg:  `{"logical_disks": [{"raid_level": "5", "size_gb": 150}]}`,
			want: []Volume{{RAIDLevel: "5", SizeBytes: 150 * g, Controller: "RAID.1", Drives: []string{"A", "B", "C"}}}},
		{name: "RAID 1+0 takes four drives", drives: four, root: true, nonroot: true,
			cfg:  `{"logical_disks": [{"raid_level": "1+0", "size_gb": 100}]}`,
			want: []Volume{{RAIDLevel: "1+0", SizeBytes: 100 * g, Controller: "RAID.1", Drives: []string{"A", "B", "C", "D"}}}},
		{name: "disk type selects the SSDs", drives: mixed, root: true, nonroot: true,
			cfg:  `{"logical_disks": [{"raid_level": "1", "size_gb": 10, "disk_type": "ssd"}]}`,
			want: []Volume{{RAIDLevel: "1", SizeBytes: 10 * g, Controller: "RAID.1", Drives: []string{"S1", "S2"}}}},
		{name: "interface type selects the SAS drives", drives: mixed, root: true, nonroot: true,
			cfg:  `{"logical_disks": [{"raid_level": "0", "size_gb": 10, "interface_type": "sas", "number_of_physical_disks": 2}]}`,
			want: []Volume{{RAIDLevel: "0", SizeBytes: 10 * g, Controller: "RAID.1", Drives: []string{"A", "B"}}}},
		{name: "drives in use are skipped", drives: four, inUse: map[string]bool{"A": true, "B": true}, root: true, nonroot: true,
			cfg:  `{"logical_disks": [{"raid_level": "1", "size_gb": 10}]}`,
			want: []Volume{{RAIDLevel: "1", SizeBytes: 10 * g, Controller: "RAID.1", Drives: []string{"C", "D"}}}},
		{name: "shared drives", drives: drives(2, 100*g, "SSD", "SATA"), root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "1", "size_gb": 30, "share_physical_disks": true}, {"raid_level": "1", "size_gb": 60, "share_physical_disks": true}]}`,
			want: []Volume{{RAIDLevel: "1", SizeBytes: 60 * g, Controller: "RAID.1", Drives: []string{"A", "B"}},
				{RAIDLevel: "1", SizeBytes: 30 * g, Controller: "RAID.1", Drives: []string{"A", "B"}}}},
		{name: "shared drives overfull", drives: drives(2, 100*g, "SSD", "SATA"), root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "1", "size_gb": 30, "share_physical_disks": true}, {"raid_level": "1", "size_gb": 80, "share_physical_disks": true}]}`,
			err: "Redfish exception occurred. Error: failed to find matching physical disks for all logical disks"},
		{name: "too big", drives: four, root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "1", "size_gb": 101}]}`,
			err: "Redfish exception occurred. Error: failed to find matching physical disks for all logical disks"},
		{name: "RAID 6 needs four free drives", drives: four, inUse: map[string]bool{"A": true}, root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "6", "size_gb": 10}]}`,
			err: "Redfish exception occurred. Error: failed to find matching physical disks for all logical disks"},
		{name: "MAX without drives", drives: four, root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "1", "size_gb": "MAX"}]}`,
			err: "create_configuration called with invalid target_raid_configuration for node N. 'physical_disks' is missing from logical_disk while 'size_gb'='MAX' was requested: {'raid_level': '1', 'size_gb': 'MAX'}"},
		{name: "JBOD", drives: four, root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "JBOD", "size_gb": 10}]}`,
			err: `Redfish exception occurred. Error: Cannot calculate spans for RAID level "JBOD"`},
		{name: "given drives too small", drives: four, root: true, nonroot: true,
			cfg: `{"logical_disks": [{"raid_level": "0", "size_gb": 300, "controller": "RAID.1", "physical_disks": ["A", "B"]}]}`,
			err: "Redfish exception occurred. Error: The physical disk space (214748364800 bytes) is not enough for the size of the logical disk (322122547200 bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgOf(t, tc.cfg)
			before, _ := json.Marshal(cfg)
			got, err := Plan("N", cfg, tc.drives, tc.inUse, tc.root, tc.nonroot)
			if after, _ := json.Marshal(cfg); string(after) != string(before) {
				t.Errorf("Plan changed its input: %s", after)
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v (%+v), want error %q", err, got, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestFilterAndApply(t *testing.T) {
	n := &model.Node{UUID: "N", Properties: model.JSON{"capabilities": "boot_mode:uefi"}}
	if _, err := Filter(n, true, true); err == nil || err.Error() != "Node N has no target RAID configuration." {
		t.Fatalf("empty target: %v", err)
	}
	n.TargetRaidConfig = cfgOf(t, `{"logical_disks": [{"raid_level": "0", "size_gb": 20}]}`)
	if _, err := Filter(n, true, false); err == nil || err.Error() != "Node N has empty target RAID configuration after skipping non-root volumes." {
		t.Fatalf("filtered to nothing: %v", err)
	}
	now := time.Date(2026, 12, 3, 1, 2, 3, 4000, time.UTC)
	err := Apply(n, []map[string]any{{"raid_level": "1", "size_gb": float64(50), "is_root_volume": true,
		"root_device_hint": map[string]any{"name": "/dev/sda"}}, {"raid_level": "0", "size_gb": float64(20)}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if n.RaidConfig["last_updated"] != "2026-12-03 01:02:03.000004" || len(n.RaidConfig["logical_disks"].([]any)) != 2 {
		t.Errorf("raid_config %v", n.RaidConfig)
	}
	if n.Properties["local_gb"] != float64(50) || n.Properties["capabilities"] != "boot_mode:uefi,raid_level:1" ||
		!reflect.DeepEqual(n.Properties["root_device"], map[string]any{"name": "/dev/sda"}) {
		t.Errorf("properties %v", n.Properties)
	}
}
