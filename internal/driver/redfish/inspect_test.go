package redfish_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// mockupDir is DMTF's public-rackmount1 mockup (testdata/redfish, BSD-3).
const mockupDir = "../../../testdata/redfish/public-rackmount1"

// serveMockup serves a DMTF mockup (index.json at each resource path).
func serveMockup(t *testing.T) *httptest.Server {
	t.Helper()
	root, err := filepath.Abs(mockupDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "index.json")); err != nil {
		t.Fatalf("DMTF mockup missing from testdata: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "read-only mockup", http.StatusMethodNotAllowed)
			return
		}
		rel := strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/redfish/v1")
		if strings.Contains(rel, "..") {
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel), "index.json"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestInspectDMTFMockup(t *testing.T) {
	srv := serveMockup(t)
	d := fastDriver()
	n := &model.Node{UUID: "8c4e5b3a-1111-4222-8333-444455556666", DriverInfo: model.JSON{
		"redfish_address": srv.URL, "redfish_system_id": "/redfish/v1/Systems/437XR1138R2",
		"redfish_auth_type": "basic",
	}}
	existing := &model.Port{UUID: "p1", Address: "12:44:6a:3b:04:11", NodeUUID: n.UUID}
	task := &driver.Task{Node: n, Ports: []*model.Port{existing}}
	res, err := d.Inspect(context.Background(), task)
	if err != nil || res != driver.Done {
		t.Fatalf("Inspect = %v, %v", res, err)
	}
	// CPU1 has 16 threads, CPU2 is absent and the FPGA has none; 96 GiB;
	// disks of 8 TB and 4 TB: the smallest of at least 4 GiB is 3725 GiB.
	want := model.JSON{"cpus": 16, "cpu_arch": "x86_64", "memory_mb": 98304, "local_gb": 3724}
	if !reflect.DeepEqual(n.Properties, want) {
		t.Errorf("properties = %v, want %v", n.Properties, want)
	}
	var added []string
	for _, p := range task.Ports[1:] {
		if p.UUID != "" || p.NodeUUID != n.UUID || !p.PXEEnabled {
			t.Errorf("new port %+v", p)
		}
		added = append(added, p.Address)
	}
	// VLAN1 repeats NIC 1's MAC, which is already a port.
	if wantMACs := []string{"aa:bb:cc:dd:ee:00", "aa:bb:cc:dd:ee:fe"}; !reflect.DeepEqual(added, wantMACs) {
		t.Errorf("new ports %v, want %v", added, wantMACs)
	}
}

func TestInspectEmulator(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 1, Hardware: &bmcemu.Hardware{Sockets: 1, CoresPerSocket: 8, ThreadsPerCore: 2,
		Arch: "ARM", DIMMs: 2, DIMMMiB: 16384, DisksBytes: []int64{2 << 30, 500 << 30, 250 << 30}}})
	d := fastDriver()
	n := node(e, "node-01", testPassword, "auto")
	task := &driver.Task{Node: n}
	if _, err := d.Inspect(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	want := model.JSON{"cpus": 16, "cpu_arch": "aarch64", "memory_mb": 32768, "local_gb": 249}
	if !reflect.DeepEqual(n.Properties, want) {
		t.Errorf("properties = %v, want %v", n.Properties, want)
	}
	macs := e.Machine("node-01").HW.MACs
	if len(task.Ports) != len(macs) || task.Ports[0].Address != macs[0] {
		t.Errorf("ports %v, want %v", task.Ports, macs)
	}
	// a second inspection adds nothing new
	if _, err := d.Inspect(context.Background(), task); err != nil || len(task.Ports) != len(macs) {
		t.Errorf("re-inspection: %v, %d ports", err, len(task.Ports))
	}
}

func TestValidate(t *testing.T) {
	d := redfish.New(redfish.Config{})
	base := func() model.JSON {
		return model.JSON{"redfish_address": "https://bmc.example.test", "redfish_username": "u", "redfish_password": "hunter2-pw"}
	}
	cases := []struct {
		name   string
		change func(model.JSON)
		want   string // "" = valid
	}{
		{"minimal", func(model.JSON) {}, ""},
		{"bare host", func(m model.JSON) { m["redfish_address"] = "10.0.0.1:8443" }, ""},
		{"system id as id", func(m model.JSON) { m["redfish_system_id"] = "abc" }, ""},
		{"verify string", func(m model.JSON) { m["redfish_verify_ca"] = "False" }, ""},
		{"auth session", func(m model.JSON) { m["redfish_auth_type"] = "Session" }, ""},
		{"missing address", func(m model.JSON) { delete(m, "redfish_address") }, "Missing the following Redfish properties in node n1 driver_info: redfish_address"},
		{"bad scheme", func(m model.JSON) { m["redfish_address"] = "ftp://x" }, "must use http or https"},
		{"credentials in URL", func(m model.JSON) { m["redfish_address"] = "https://u:hunter2-pw@x" }, "must not carry credentials"},
		{"path in address", func(m model.JSON) { m["redfish_address"] = "https://x/redfish/v1" }, "without a path"},
		{"bad auth type", func(m model.JSON) { m["redfish_auth_type"] = "kerberos" }, "redfish_auth_type"},
		{"bad verify", func(m model.JSON) { m["redfish_verify_ca"] = "/no/such/bundle" }, "redfish_verify_ca"},
		{"number as address", func(m model.JSON) { m["redfish_address"] = 42.0 }, "redfish_address must be a string"},
		{"bad system id", func(m model.JSON) { m["redfish_system_id"] = "a/b" }, "redfish_system_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			di := base()
			c.change(di)
			err := d.Validate(&driver.Task{Node: &model.Node{UUID: "n1", DriverInfo: di}})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Validate = %v, want %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2-pw") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// TestInspectPartialBMC: every resource but the system is optional, as in
// Ironic's redfish inspection; only a missing essential property (memory_mb,
// cpu_arch) fails it, with Ironic's message, recording nothing.
func TestInspectPartialBMC(t *testing.T) {
	const sys = "/redfish/v1/Systems/437XR1138R2"
	full := model.JSON{"cpus": 16, "cpu_arch": "x86_64", "memory_mb": 98304, "local_gb": 3724}
	with := func(k string, v any) model.JSON {
		m := model.JSON{}
		for kk, vv := range full {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	nicsOnly := func(path string, body map[string]any) {
		if path == sys {
			delete(body, "EthernetInterfaces")
			body["NetworkInterfaces"] = map[string]any{"@odata.id": sys + "/NetworkInterfaces"}
		}
	}
	// storageOnly: the system links a Storage collection (one controller
	// with volumes and drives) instead of SimpleStorage.
	storageOnly := func(path string, body map[string]any) {
		if path == sys {
			delete(body, "SimpleStorage")
			body["Storage"] = map[string]any{"@odata.id": sys + "/Storage"}
		}
	}
	const st = sys + "/Storage/1"
	storage := func(volumes bool) map[string]map[string]any {
		m := map[string]map[string]any{
			sys + "/Storage": {"Members": []any{map[string]any{"@odata.id": st}}},
			st: {"@odata.id": st, "Id": "1", "Drives": []any{map[string]any{"@odata.id": st + "/Drives/D1"}, map[string]any{"@odata.id": st + "/Drives/D2"}},
				"Volumes": map[string]any{"@odata.id": st + "/Volumes"}},
			st + "/Drives/D1": {"@odata.id": st + "/Drives/D1", "Id": "D1", "CapacityBytes": 800 << 30},
			// An absent drive bay counts for nothing.
			st + "/Drives/D2": {"@odata.id": st + "/Drives/D2", "Id": "D2", "CapacityBytes": 300 << 30, "Status": map[string]any{"State": "Absent"}},
			st + "/Volumes":   {"Members": []any{}},
		}
		if volumes {
			m[st+"/Volumes"] = map[string]any{"Members": []any{map[string]any{"@odata.id": st + "/Volumes/V1"}}}
			m[st+"/Volumes/V1"] = map[string]any{"@odata.id": st + "/Volumes/V1", "Id": "V1", "CapacityBytes": 500 << 30}
		}
		return m
	}
	cases := []struct {
		name   string
		cfg    replayConfig
		add    map[string]map[string]any
		want   model.JSON // nil: inspection fails
		macs   int        // new ports
		reason string     // the failure's missing properties
	}{
		{name: "everything", want: full, macs: 2},
		{name: "no Memory collection: MemorySummary", cfg: replayConfig{Gone: []string{sys + "/Memory"}}, want: full, macs: 2},
		{name: "Memory collection only", cfg: replayConfig{Edit: func(p string, b map[string]any) {
			if p == sys {
				delete(b, "MemorySummary")
			}
		}}, want: full, macs: 2},
		{name: "no memory size anywhere", cfg: replayConfig{Gone: []string{sys + "/Memory"}, Edit: func(p string, b map[string]any) {
			if p == sys {
				delete(b, "MemorySummary")
			}
		}}, reason: "memory_mb"},
		{name: "no Processors collection", cfg: replayConfig{Gone: []string{sys + "/Processors"}}, reason: "cpu_arch"},
		{name: "threads from ProcessorSummary", cfg: replayConfig{Edit: func(p string, b map[string]any) {
			if strings.HasPrefix(p, sys+"/Processors/") {
				delete(b, "TotalThreads")
			}
		}}, want: full, macs: 2},
		{name: "no SimpleStorage: disk-less", cfg: replayConfig{Gone: []string{sys + "/SimpleStorage"}}, want: with("local_gb", 0), macs: 2},
		{name: "Storage volumes, no SimpleStorage", cfg: replayConfig{Gone: []string{sys + "/SimpleStorage"}, Edit: storageOnly},
			add: storage(true), want: with("local_gb", 499), macs: 2},
		{name: "Storage without volumes: drives", cfg: replayConfig{Gone: []string{sys + "/SimpleStorage"}, Edit: storageOnly},
			add: storage(false), want: with("local_gb", 799), macs: 2},
		{name: "Storage and SimpleStorage: the smaller", cfg: replayConfig{Edit: func(p string, b map[string]any) {
			if p == sys {
				b["Storage"] = map[string]any{"@odata.id": sys + "/Storage"}
			}
		}}, add: storage(true), want: with("local_gb", 499), macs: 2},
		{name: "no EthernetInterfaces", cfg: replayConfig{Gone: []string{sys + "/EthernetInterfaces"}}, want: full},
		{name: "NICs from NetworkInterfaces", cfg: replayConfig{Edit: nicsOnly}, want: full, macs: 1, add: map[string]map[string]any{
			sys + "/NetworkInterfaces":                               {"Members": []any{map[string]any{"@odata.id": sys + "/NetworkInterfaces/NI1"}}},
			sys + "/NetworkInterfaces/NI1":                           {"@odata.id": sys + "/NetworkInterfaces/NI1", "Id": "NI1", "NetworkDeviceFunctions": map[string]any{"@odata.id": sys + "/NetworkInterfaces/NI1/NetworkDeviceFunctions"}},
			sys + "/NetworkInterfaces/NI1/NetworkDeviceFunctions":    {"Members": []any{map[string]any{"@odata.id": sys + "/NetworkInterfaces/NI1/NetworkDeviceFunctions/F1"}}},
			sys + "/NetworkInterfaces/NI1/NetworkDeviceFunctions/F1": {"@odata.id": sys + "/NetworkInterfaces/NI1/NetworkDeviceFunctions/F1", "Id": "F1", "Ethernet": map[string]any{"PermanentMACAddress": "AA:BB:CC:00:11:22"}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.User, c.cfg.Password = "admin", testPassword
			rp := newReplay(c.cfg)
			rp.loadMockup(t, mockupDir)
			for p, b := range c.add {
				rp.res[p] = b
			}
			srv := rp.start(t)
			n := &model.Node{UUID: "8c4e5b3a-1111-4222-8333-444455556666", DriverInfo: model.JSON{
				"redfish_address": srv.URL, "redfish_system_id": sys, "redfish_username": "admin", "redfish_password": testPassword}}
			existing := &model.Port{UUID: "p1", Address: "12:44:6a:3b:04:11", NodeUUID: n.UUID}
			task := &driver.Task{Node: n, Ports: []*model.Port{existing}}
			_, err := fastDriver().Inspect(context.Background(), task)
			if c.want == nil {
				want := "Failed to discover the following properties: " + c.reason + " on node " + n.UUID
				if err == nil || err.Error() != want {
					t.Fatalf("Inspect = %v, want %q", err, want)
				}
				if n.Properties != nil || len(task.Ports) != 1 {
					t.Errorf("failed inspection recorded %v, ports %v", n.Properties, task.Ports)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(n.Properties, c.want) {
				t.Errorf("properties = %v, want %v", n.Properties, c.want)
			}
			if got := len(task.Ports) - 1; got != c.macs {
				t.Errorf("%d new ports, want %d", got, c.macs)
			}
		})
	}
}
