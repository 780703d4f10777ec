package server

import (
	"encoding/json"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
)

func faultstring(t *testing.T, body map[string]any) string {
	t.Helper()
	em, _ := body["error_message"].(string)
	var f struct{ Faultstring string }
	if err := json.Unmarshal([]byte(em), &f); err != nil {
		t.Fatalf("not an Ironic error: %v", body)
	}
	return f.Faultstring
}

// TestRegistrationInterfaces: the no-op interfaces Metal3 names on real
// hardware are accepted, and so are the real redfish firmware, BIOS and RAID
// interfaces; interfaces Anvil does not implement (idrac's virtual media
// boot) are an honest 400 naming what is valid, never a fake success.
func TestRegistrationInterfaces(t *testing.T) {
	s := serveWith(t, func(c *Config) {
		c.Interfaces = driver.Enablement{HardwareTypes: []string{"ipmi", "redfish", "idrac"},
			Interfaces: map[string][]string{"inspect": {"agent", "no-inspect", "redfish", "idrac-redfish"}}}
	})
	for _, drv := range []string{"redfish", "ipmi", "idrac"} {
		n := s.do("POST", "/v1/nodes", `{"driver": "`+drv+`", "boot_interface": "ipxe", "raid_interface": "no-raid",
			"bios_interface": "no-bios", "firmware_interface": "no-firmware", "inspect_interface": "agent",
			"vendor_interface": "no-vendor"}`, 201)
		if n["raid_interface"] != "no-raid" || n["firmware_interface"] != "no-firmware" || n["inspect_interface"] != "agent" {
			t.Errorf("%s node %v", drv, n)
		}
	}
	idrac := s.do("POST", "/v1/nodes", `{"driver": "idrac", "name": "dell"}`, 201)
	for k, want := range map[string]string{"power_interface": "idrac-redfish", "management_interface": "idrac-redfish",
		"inspect_interface": "idrac-redfish", "boot_interface": "ipxe", "raid_interface": "idrac-redfish"} {
		if idrac[k] != want {
			t.Errorf("idrac %s = %v, want %s", k, idrac[k], want)
		}
	}
	// BMO's redfish and idrac firmware and BIOS interfaces (real ones)
	for _, c := range []struct{ drv, bios string }{{"redfish", "redfish"}, {"idrac", "idrac-redfish"}} {
		n := s.do("POST", "/v1/nodes", `{"driver": "`+c.drv+`", "firmware_interface": "redfish", "bios_interface": "`+c.bios+`"}`, 201)
		if n["firmware_interface"] != "redfish" || n["bios_interface"] != c.bios {
			t.Errorf("%s node %v", c.drv, n)
		}
	}
	d := s.getAt("/v1/drivers/idrac", "latest")
	if d["default_power_interface"] != "idrac-redfish" || d["default_inspect_interface"] != "idrac-redfish" {
		t.Errorf("idrac driver %v", d)
	}
	for _, c := range []struct{ body, want string }{
		{`{"driver": "idrac", "boot_interface": "idrac-redfish-virtual-media"}`,
			"Could not find the following interface in the 'ironic.hardware.interfaces.boot' entrypoint: idrac-redfish-virtual-media. Valid interfaces are ['fake', 'ipxe', 'pxe', 'redfish-virtual-media', 'http-ipxe', 'http', 'redfish-https']."},
	} {
		if got := faultstring(t, s.do("POST", "/v1/nodes", c.body, 400)); got != c.want {
			t.Errorf("%s: %q\nwant %q", c.body, got, c.want)
		}
	}
}
