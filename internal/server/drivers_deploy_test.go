package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver/hardware"
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

// TestNoopAndAutodetectDeploy: autodetect is enabled and supported by
// every hardware type; noop, as in Ironic master, only by manual-management
// (fake power, noop management), whose node deploys and tears down without
// anything done.
func TestNoopAndAutodetectDeploy(t *testing.T) {
	s := serveWith(t, func(c *Config) {
		c.Interfaces.HardwareTypes = []string{"fake-hardware", "ipmi", "redfish", hardware.ManualManagement}
		c.Interfaces.Interfaces = map[string][]string{"deploy": {"fake", "direct", "ramdisk", "custom-agent", "autodetect", "noop"}}
	})
	for _, drv := range []string{"redfish", "ipmi", "fake-hardware", hardware.ManualManagement} {
		d := s.getAt("/v1/drivers/"+drv, "latest")
		var enabled []string
		for _, v := range d["enabled_deploy_interfaces"].([]any) {
			enabled = append(enabled, v.(string))
		}
		if !slices.Contains(enabled, "autodetect") || slices.Contains(enabled, "noop") != (drv == hardware.ManualManagement) {
			t.Errorf("%s enabled_deploy_interfaces %v", drv, enabled)
		}
	}
	mm := s.getAt("/v1/drivers/"+hardware.ManualManagement, "latest")
	if mm["default_power_interface"] != "fake" || mm["default_management_interface"] != "noop" {
		t.Errorf("manual-management defaults: power %v management %v", mm["default_power_interface"], mm["default_management_interface"])
	}
	// manual-management's fake power is not offered to ipmi.
	if ip := s.getAt("/v1/drivers/ipmi", "latest"); ip["default_power_interface"] != "ipmitool" || len(ip["enabled_power_interfaces"].([]any)) != 1 {
		t.Errorf("ipmi power: %v %v", ip["default_power_interface"], ip["enabled_power_interfaces"])
	}
	if c, body := s.call("POST", "/v1/nodes", `{"driver": "ipmi", "deploy_interface": "noop"}`); c != 400 ||
		!strings.Contains(body, "deploy interface implementation 'noop' is not supported by hardware type ipmi.") {
		t.Errorf("ipmi with noop deploy: %d %s", c, body)
	}
	n := s.do("POST", "/v1/nodes", `{"driver": "manual-management", "deploy_interface": "noop"}`, 201)
	id := n["uuid"].(string)
	v := s.do("GET", "/v1/nodes/"+id+"/validate", "", 200)
	if d, _ := v["deploy"].(map[string]any); d["result"] != true {
		t.Errorf("validate deploy: %v", d)
	}
	if c, body := s.call("PUT", "/v1/nodes/"+id+"/management/boot_device", `{"boot_device": "cdrom"}`); c != 400 ||
		!strings.Contains(body, "Invalid boot device cdrom specified.") {
		t.Errorf("noop management, cdrom: %d %s", c, body)
	}
	s.do("PUT", "/v1/nodes/"+id+"/states/provision", `{"target": "manage"}`, 202)
	s.wait(id, "manageable")
	s.do("PUT", "/v1/nodes/"+id+"/states/provision", `{"target": "provide"}`, 202)
	s.wait(id, "available")
	s.do("PUT", "/v1/nodes/"+id+"/states/provision", `{"target": "active"}`, 202)
	s.wait(id, "active")
	s.do("PUT", "/v1/nodes/"+id+"/states/provision", `{"target": "deleted"}`, 202)
	s.wait(id, "available")
}
