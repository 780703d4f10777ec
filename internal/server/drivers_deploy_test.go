package server

import (
	"slices"
	"testing"
)

// TestDeployInterfacesOverAPI: Metal3 registers hosts with
// deploy_interface ramdisk (live ISO) and custom-agent (custom deploy);
// the API takes them on redfish and ipmi, GET /v1/drivers says they are
// enabled, and node validation answers Ironic's message for a boot
// interface without the ramdisk_boot capability.
func TestDeployInterfacesOverAPI(t *testing.T) {
	s := serve(t)
	for _, drv := range []string{"redfish", "ipmi"} {
		d := s.getAt("/v1/drivers/"+drv, "latest")
		var enabled []string
		for _, v := range d["enabled_deploy_interfaces"].([]any) {
			enabled = append(enabled, v.(string))
		}
		for _, want := range []string{"direct", "ramdisk", "custom-agent"} {
			if !slices.Contains(enabled, want) {
				t.Errorf("%s enabled_deploy_interfaces %v lack %s", drv, enabled, want)
			}
		}
		if d["default_deploy_interface"] != "direct" {
			t.Errorf("%s default_deploy_interface %v", drv, d["default_deploy_interface"])
		}
		for _, iface := range []string{"ramdisk", "custom-agent"} {
			n := s.do("POST", "/v1/nodes", `{"driver": "`+drv+`", "deploy_interface": "`+iface+`"}`, 201)
			if n["deploy_interface"] != iface {
				t.Errorf("%s node deploy_interface %v, want %s", drv, n["deploy_interface"], iface)
			}
		}
	}
	for _, c := range []struct {
		deploy, reason string
		ok             bool
	}{
		{"ramdisk", "Invalid configuration: The boot interface must have the `ramdisk_boot` capability. You are using an incompatible boot interface.", false},
		{"custom-agent", "", true},
	} {
		n := s.do("POST", "/v1/nodes", `{"driver": "fake-hardware", "boot_interface": "fake", "deploy_interface": "`+c.deploy+`"}`, 201)
		v := s.do("GET", "/v1/nodes/"+n["uuid"].(string)+"/validate", "", 200)
		d, _ := v["deploy"].(map[string]any)
		if d["result"] != c.ok || c.reason != "" && d["reason"] != c.reason {
			t.Errorf("%s: validate deploy %v, want result %v reason %q", c.deploy, d, c.ok, c.reason)
		}
	}
}
