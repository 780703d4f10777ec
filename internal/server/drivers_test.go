package server

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/model"
)

// ironicDriver reads a driver document a real Ironic 21.4 answered
// (testdata/ironic/drivers-21.4, see its README).
func ironicDriver(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ironic", "drivers-21.4", file))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// getAt GETs path at API version v.
func (s *served) getAt(path, v string) map[string]any {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
	req.Header.Set("X-OpenStack-Ironic-API-Version", v)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		s.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		s.t.Fatal(err)
	}
	return m
}

func sortedStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	sort.Strings(out)
	return out
}

// known keeps the names Anvil implements.
func known(kind string, names []string) []string {
	impls := hardware.RegistryWith(hardware.Drivers{}).Implementations(kind)
	var out []string
	for _, n := range names {
		if slices.Contains(impls, n) {
			out = append(out, n)
		}
	}
	return out
}

// TestDriversMatchIronic serves Anvil with the interface options a real
// Ironic 21.4 ran with and compares GET /v1/drivers/{name} (at Ironic's 1.82):
// the same keys; per kind the same enabled set (less what Anvil does not
// implement) and the same default, except the listed deliberate differences.
func TestDriversMatchIronic(t *testing.T) {
	ironicDefaults := map[string][]string{
		"bios": {"no-bios", "redfish"}, "boot": {"ipxe", "pxe", "redfish-virtual-media"},
		"console": {"no-console"}, "deploy": {"direct", "ramdisk"}, "inspect": {"no-inspect", "redfish"},
		"network": {"flat", "noop"}, "raid": {"agent", "no-raid", "redfish"}, "rescue": {"no-rescue"},
		"storage": {"cinder", "noop"}, "vendor": {"ipmitool", "redfish", "no-vendor"},
	}
	fakeEnabled := map[string][]string{
		"boot": {"fake", "ipxe", "pxe"}, "deploy": {"fake", "direct"}, "inspect": {"fake", "redfish", "no-inspect"},
		"rescue": {"fake", "agent", "no-rescue"}, "power": {"fake", "ipmitool", "redfish"},
		"management": {"fake", "ipmitool", "redfish"}, "bios": {"fake", "no-bios"}, "raid": {"fake", "no-raid"},
		"console": {"fake", "no-console"}, "vendor": {"fake", "no-vendor"}, "network": {"noop", "flat"},
		"storage": {"noop"},
	}
	tests := []struct {
		name    string
		types   []string
		enabled map[string][]string
		files   string // fixture prefix
		// differ: "type/kind" → Anvil's default where it deliberately differs.
		differ map[string]string
	}{
		{name: "Ironic defaults", types: []string{"ipmi", "redfish"}, enabled: ironicDefaults, files: "defaults-",
			differ: map[string]string{
				"ipmi/vendor": "no-vendor", // no ipmitool vendor passthru in Anvil
				// Anvil's redfish prefers virtual media; Ironic lists it last
				"redfish/boot": "redfish-virtual-media",
			}},
		{name: "fake enabled", types: []string{"fake-hardware", "ipmi", "redfish"}, enabled: fakeEnabled, files: "fake-enabled-",
			differ: map[string]string{
				"fake-hardware/network": "noop",  // Anvil's fake-hardware has always defaulted to noop
				"ipmi/rescue":           "agent", // Anvil's agent always rescues: agent before no-rescue
				"redfish/rescue":        "agent",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The lists are Anvil's base, not the operator's: fake stays with
			// fake-hardware, as Ironic's hardware types never list it.
			base := map[string][]string{}
			for k, v := range tt.enabled {
				base[k] = known(k, v)
			}
			s := serveWith(t, func(c *Config) {
				c.Interfaces = driver.Enablement{HardwareTypes: tt.types, Base: base, Defaults: map[string]string{"storage": "noop"}}
			})
			for _, typ := range tt.types {
				ironic := ironicDriver(t, tt.files+typ+".json")
				ours := s.getAt("/v1/drivers/"+typ, "1.82")
				var ik, ok []string
				for k := range ironic {
					ik = append(ik, k)
				}
				for k := range ours {
					ok = append(ok, k)
				}
				sort.Strings(ik)
				sort.Strings(ok)
				if !slices.Equal(ik, ok) {
					t.Errorf("%s keys\n ours   %v\n ironic %v", typ, ok, ik)
				}
				for _, kind := range model.InterfaceNames {
					ek, dk := "enabled_"+kind+"_interfaces", "default_"+kind+"_interface"
					if _, ok := ironic[ek]; !ok {
						continue // firmware: newer than 1.82
					}
					want := known(kind, sortedStrings(ironic[ek]))
					if got := sortedStrings(ours[ek]); !slices.Equal(got, want) {
						t.Errorf("%s %s = %v, Ironic (what Anvil implements) %v", typ, ek, got, want)
					}
					wantDef := ironic[dk]
					if d, ok := tt.differ[typ+"/"+kind]; ok {
						wantDef = d
					}
					if ours[dk] != wantDef {
						t.Errorf("%s %s = %v, want %v", typ, dk, ours[dk], wantDef)
					}
				}
			}
		})
	}
}

// TestDefaultInterfaces pins what real hardware gets with no options:
// network boot, the agent deploy, inspect and rescue; fake only on
// fake-hardware.
func TestDefaultInterfaces(t *testing.T) {
	r, err := hardware.BuildRegistry(hardware.Drivers{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]string{
		"fake-hardware": {"boot": {"fake", "ipxe", "pxe", "http-ipxe", "http"}, "deploy": {"fake", "direct", "ramdisk", "custom-agent", "autodetect"}, "inspect": {"fake", "agent", "no-inspect"},
			"rescue": {"fake", "agent", "no-rescue"}, "power": {"fake"}, "management": {"fake"}, "network": {"noop", "flat"},
			"raid": {"fake", "no-raid", "agent"}, "vendor": {"fake", "no-vendor"}},
		"ipmi": {"boot": {"ipxe", "pxe", "http-ipxe", "http"}, "deploy": {"direct", "ramdisk", "custom-agent", "autodetect"}, "inspect": {"agent", "no-inspect"},
			"rescue": {"agent", "no-rescue"}, "power": {"ipmitool"}, "management": {"ipmitool"}, "network": {"flat", "noop"},
			"raid": {"no-raid", "agent"}, "bios": {"no-bios"}, "console": {"no-console", "ipmitool-socat", "ipmi-sol"}, "firmware": {"no-firmware"}, "vendor": {"no-vendor"}},
		"redfish": {"boot": {"redfish-virtual-media", "ipxe", "pxe", "http-ipxe", "http", "redfish-https"}, "deploy": {"direct", "ramdisk", "custom-agent", "autodetect"}, "inspect": {"redfish", "agent", "no-inspect"},
			"rescue": {"agent", "no-rescue"}, "power": {"redfish"}, "management": {"redfish"}},
	}
	for typ, kinds := range want {
		ht, ok := r.HardwareType(typ)
		if !ok {
			t.Fatalf("%s not enabled", typ)
		}
		for kind, list := range kinds {
			if got := ht.Supported[kind]; !slices.Equal(got, list) {
				t.Errorf("%s %s: %v, want %v (default first)", typ, kind, got, list)
			}
		}
	}
	// A real node may not pick fake unless the operator enables it by name.
	n := &model.Node{Driver: "ipmi"}
	n.Interfaces.Set("boot", "fake")
	if err := r.Compose(n); err == nil || err.Error() != "boot interface implementation 'fake' is not supported by hardware type ipmi." {
		t.Errorf("ipmi with fake boot: %v", err)
	}
	r2, err := hardware.BuildRegistry(hardware.Drivers{Interfaces: driver.Enablement{Interfaces: map[string][]string{"boot": {"ipxe", "fake"}}}})
	if err != nil {
		t.Fatal(err)
	}
	n = &model.Node{Driver: "ipmi"}
	n.Interfaces.Set("boot", "fake")
	if err := r2.Compose(n); err != nil {
		t.Errorf("fake boot enabled by name: %v", err)
	}
	if ht, _ := r2.HardwareType("ipmi"); !slices.Equal(ht.Supported["boot"], []string{"ipxe", "fake"}) {
		t.Errorf("ipmi boot with fake enabled: %v", ht.Supported["boot"])
	}
	// fake-hardware accepts any enabled interface, as Ironic's.
	n = &model.Node{Driver: "fake-hardware"}
	n.Interfaces.Set("power", "ipmitool")
	if err := r.Compose(n); err != nil {
		t.Errorf("fake-hardware with ipmitool power: %v", err)
	}
}

func TestEnablementErrors(t *testing.T) {
	tests := []struct {
		name string
		e    driver.Enablement
		want string
	}{
		{"unknown type", driver.Enablement{HardwareTypes: []string{"ilo"}},
			`--enabled-hardware-types: unknown hardware type "ilo" (known: fake-hardware, idrac, ipmi, manual-management, redfish)`},
		{"unknown interface", driver.Enablement{Interfaces: map[string][]string{"boot": {"ipxe", "ilo-pxe"}}},
			`--enabled-boot-interfaces: unknown boot interface "ilo-pxe" (known: fake, http, http-ipxe, ipxe, pxe, redfish-https, redfish-virtual-media)`},
		{"default not enabled", driver.Enablement{Interfaces: map[string][]string{"boot": {"ipxe"}}, Defaults: map[string]string{"boot": "pxe"}},
			`--default-boot-interface "pxe" is not one of --enabled-boot-interfaces (ipxe)`},
		{"default unsupported", driver.Enablement{Defaults: map[string]string{"deploy": "fake"}},
			"For hardware type 'ipmi', no default value found for deploy interface could be determined. Please ensure the interfaces are enabled. (--default-deploy-interface fake is not supported by it)"},
		{"nothing left", driver.Enablement{Interfaces: map[string][]string{"inspect": {"redfish"}}, HardwareTypes: []string{"redfish", "ipmi"}},
			"For hardware type 'ipmi', no default value found for inspect interface could be determined. Please ensure the interfaces are enabled. (it supports agent, no-inspect, fake; enable one with --enabled-inspect-interfaces)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hardware.BuildRegistry(hardware.Drivers{Interfaces: tt.e})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant  %s", err, tt.want)
			}
		})
	}
}

// TestStaleInterface: a node stored with an interface that is no longer
// enabled loads, updates and lists, but validate and actions say why not.
func TestStaleInterface(t *testing.T) {
	dir := t.TempDir()
	first := serveWith(t, func(c *Config) { c.Database = filepath.Join(dir, "anvil.db") })
	first.do("POST", "/v1/nodes", `{"name":"old","driver":"ipmi","boot_interface":"pxe","driver_info":{"ipmi_address":"127.0.0.1"}}`, 201)
	first.shutdown()

	s := serveWith(t, func(c *Config) {
		c.Database = filepath.Join(dir, "anvil.db")
		c.Interfaces = driver.Enablement{Interfaces: map[string][]string{"boot": {"ipxe"}}}
	})
	if n := s.do("GET", "/v1/nodes/old", "", 200); n["boot_interface"] != "pxe" {
		t.Errorf("boot_interface %v", n["boot_interface"])
	}
	s.do("PATCH", "/v1/nodes/old", `[{"op":"add","path":"/description","value":"x"}]`, 200)
	msg := "Could not find the following interface in the 'ironic.hardware.interfaces.boot' entrypoint: pxe. Valid interfaces are ['ipxe']."
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/nodes/old/validate", ""},
		{"PUT", "/v1/nodes/old/states/provision", `{"target":"manage"}`},
	} {
		body := s.do(c.method, c.path, c.body, 400)
		em, _ := body["error_message"].(string)
		var fault struct{ Faultstring string }
		if err := json.Unmarshal([]byte(em), &fault); err != nil || fault.Faultstring != msg {
			t.Errorf("%s %s: %v, want %q", c.method, c.path, body, msg)
		}
	}
	s.do("PATCH", "/v1/nodes/old", `[{"op":"replace","path":"/boot_interface","value":"ipxe"}]`, 200)
	s.do("GET", "/v1/nodes/old/validate", "", 200)
}
