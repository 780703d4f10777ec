package direct_test

import (
	"context"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/driver/pxe"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// publisher stands in for Anvil's boot endpoint (internal/boot) in both
// its roles: network boot files and virtual media ISOs.
type publisher struct{}

func (publisher) PublishRamdisk(context.Context, string, []string, pxe.Ramdisk) error { return nil }
func (publisher) PublishLocalBoot(context.Context, string, []string) error            { return nil }
func (publisher) Withdraw(context.Context, string) error                              { return nil }
func (publisher) PublishISO(context.Context, string, redfish.ISORamdisk) (string, error) {
	return "http://127.0.0.1:1/boot.iso", nil
}

// TestDeployInterfaceValidation: the ramdisk and custom-agent deploy
// interfaces answer validation with Ironic's messages (21.4's
// RamdiskDeploy.validate, get_image_instance_info, the boot interfaces'
// driver_info checks), in its order. The capability message, the pxe ones
// and the instance_info ones were checked against Debian's Ironic 21.4
// (GET /v1/nodes/{id}/validate, fake-hardware with fake and pxe boot).
func TestDeployInterfaceValidation(t *testing.T) {
	const uuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
	off := false
	redfishInfo := func(extra model.JSON) model.JSON {
		di := model.JSON{"redfish_address": "http://127.0.0.1:8000", "redfish_system_id": "/redfish/v1/Systems/1",
			"redfish_username": "admin", "redfish_password": "pw"}
		for k, v := range extra {
			di[k] = v
		}
		return di
	}
	deployISO := model.JSON{"deploy_iso": "http://127.0.0.1/ipa.iso"}
	deployKR := model.JSON{"deploy_kernel": "http://127.0.0.1/k", "deploy_ramdisk": "http://127.0.0.1/r"}
	ipmiInfo := model.JSON{"ipmi_address": "127.0.0.1", "ipmi_username": "admin", "ipmi_password": "pw",
		"deploy_kernel": "http://127.0.0.1/k", "deploy_ramdisk": "http://127.0.0.1/r"}
	missingInstance := "Cannot validate image information for node " + uuid + " because one or more parameters are missing " +
		"from its instance_info and insufficient information is present to boot from a remote volume. Missing are: "
	tests := []struct {
		name        string
		driver      string
		boot        string
		deploy      string
		driverInfo  model.JSON
		info        model.JSON
		noClean     bool
		noPublisher bool
		want        string // "" = valid
		exact       bool   // want is the whole message
	}{
		{name: "ramdisk: fake boot lacks ramdisk_boot", driver: "fake-hardware", boot: "fake", deploy: "ramdisk",
			info: model.JSON{"boot_iso": "http://127.0.0.1/live.iso"},
			want: "Invalid configuration: The boot interface must have the `ramdisk_boot` capability. You are using an incompatible boot interface."},
		{name: "ramdisk: nothing to boot", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployISO), info: model.JSON{}, want: missingInstance + "['kernel', 'ramdisk']"},
		{name: "ramdisk: kernel without ramdisk", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployISO), info: model.JSON{"kernel": "http://127.0.0.1/k"}, want: missingInstance + "['ramdisk']"},
		{name: "ramdisk: image_source beside boot_iso", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployISO), info: model.JSON{"boot_iso": "http://127.0.0.1/live.iso", "image_source": "http://127.0.0.1/i"},
			want: "An 'image_source' and 'boot_iso' parameter may not be specified at the same time.", exact: true},
		{name: "ramdisk: live ISO", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployISO), info: model.JSON{"boot_iso": "http://127.0.0.1/live.iso"}},
		{name: "ramdisk: boot_iso not http", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployISO), info: model.JSON{"boot_iso": "file:///live.iso"},
			want: `Invalid boot_iso "file:///live.iso" of node ` + uuid + ": the BMC needs an http(s) URL"},
		{name: "ramdisk: cleaning needs the agent's ramdisk", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(nil), info: model.JSON{"boot_iso": "http://127.0.0.1/live.iso"},
			want: "Error validating Redfish virtual media. Some parameters were missing in node's driver_info. Missing are: ['deploy_kernel', 'deploy_ramdisk']"},
		{name: "ramdisk: no cleaning, no agent", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(nil), info: model.JSON{"boot_iso": "http://127.0.0.1/live.iso"}, noClean: true},
		{name: "ramdisk: kernel and ramdisk by virtual media", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployKR), info: model.JSON{"kernel": "http://127.0.0.1/k", "ramdisk": "http://127.0.0.1/r"}},
		{name: "ramdisk: kernel and ramdisk need the boot endpoint", driver: "redfish", boot: "redfish-virtual-media", deploy: "ramdisk",
			driverInfo: redfishInfo(deployISO), info: model.JSON{"kernel": "http://127.0.0.1/k", "ramdisk": "http://127.0.0.1/r"},
			noPublisher: true, want: redfish.ErrBootNotConfigured.Error()},
		{name: "ramdisk: ipxe", driver: "ipmi", boot: "ipxe", deploy: "ramdisk", driverInfo: ipmiInfo,
			info: model.JSON{"kernel": "http://127.0.0.1/k", "ramdisk": "http://127.0.0.1/r"}},
		{name: "ramdisk: ipxe without network boot", driver: "ipmi", boot: "ipxe", deploy: "ramdisk", driverInfo: ipmiInfo,
			info: model.JSON{"kernel": "http://127.0.0.1/k", "ramdisk": "http://127.0.0.1/r"}, noPublisher: true,
			want: pxe.ErrNotConfigured.Error()},
		{name: "ramdisk: ipxe cannot boot an ISO", driver: "ipmi", boot: "ipxe", deploy: "ramdisk", driverInfo: ipmiInfo,
			info: model.JSON{"boot_iso": "http://127.0.0.1/live.iso"},
			want: "instance_info boot_iso of node " + uuid + " cannot be booted by the ipxe boot interface: it boots instance_info kernel and ramdisk (use redfish-virtual-media for an ISO)"},
		{name: "ramdisk: pxe, image_source beside boot_iso", driver: "ipmi", boot: "pxe", deploy: "ramdisk",
			driverInfo: model.JSON{"ipmi_address": "127.0.0.1"}, info: model.JSON{"boot_iso": "http://127.0.0.1/x.iso", "image_source": "http://127.0.0.1/i"},
			want: "An 'image_source' and 'boot_iso' parameter may not be specified at the same time", exact: true},
		{name: "ramdisk: pxe, no cleaning, no agent", driver: "ipmi", boot: "pxe", deploy: "ramdisk", noClean: true,
			driverInfo: model.JSON{"ipmi_address": "127.0.0.1"}, info: model.JSON{"kernel": "k", "ramdisk": "r"}},
		{name: "ramdisk: pxe, the agent's ramdisk before the instance's", driver: "ipmi", boot: "pxe", deploy: "ramdisk",
			driverInfo: model.JSON{"ipmi_address": "127.0.0.1"}, info: model.JSON{},
			want: "Cannot validate PXE bootloader. Some parameters were missing in node's driver_info and configuration. Missing are: ['deploy_kernel', 'deploy_ramdisk']"},
		{name: "ramdisk: pxe missing deploy ramdisk", driver: "ipmi", boot: "pxe", deploy: "ramdisk",
			driverInfo: model.JSON{"ipmi_address": "127.0.0.1"}, info: model.JSON{"kernel": "k", "ramdisk": "r"},
			want: "Cannot validate PXE bootloader. Some parameters were missing in node's driver_info and configuration. Missing are: ['deploy_kernel', 'deploy_ramdisk']"},
		{name: "custom-agent: no image needed", driver: "redfish", boot: "redfish-virtual-media", deploy: "custom-agent",
			driverInfo: redfishInfo(deployISO), info: model.JSON{}},
		{name: "custom-agent: the agent's ramdisk", driver: "redfish", boot: "redfish-virtual-media", deploy: "custom-agent",
			driverInfo: redfishInfo(nil), info: model.JSON{},
			want: "Error validating Redfish virtual media. Some parameters were missing in node's driver_info. Missing are: ['deploy_kernel', 'deploy_ramdisk']"},
		{name: "custom-agent: root device hints", driver: "redfish", boot: "redfish-virtual-media", deploy: "custom-agent",
			driverInfo: redfishInfo(deployISO), info: model.JSON{"root_device": "sda"},
			want: "root device hints must be a JSON object"},
		{name: "direct still needs an image", driver: "redfish", boot: "redfish-virtual-media", deploy: "direct",
			driverInfo: redfishInfo(deployISO), info: model.JSON{}, want: "instance_info.image_source is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := hardware.Drivers{Boot: publisher{}, ISO: publisher{}}
			if tt.noPublisher {
				d.Boot, d.ISO = nil, nil
			}
			r := hardware.RegistryWith(d)
			n := &model.Node{UUID: uuid, Driver: tt.driver, DriverInfo: tt.driverInfo, InstanceInfo: tt.info}
			n.Interfaces.Set("boot", tt.boot)
			n.Interfaces.Set("deploy", tt.deploy)
			if tt.noClean {
				n.AutomatedClean = &off
			}
			if err := r.Compose(n); err != nil {
				t.Fatalf("Compose: %v", err)
			}
			drv, err := r.For(n)
			if err != nil {
				t.Fatal(err)
			}
			err = drv.Deploy.Validate(&driver.Task{Node: n, Driver: drv})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || tt.exact && err.Error() != tt.want):
				t.Fatalf("Validate: %v\nwant %q", err, tt.want)
			}
		})
	}
}

// TestDeployInterfacesEnabled: Metal3 registers hosts with
// deploy_interface ramdisk and custom-agent; the ipmi and redfish hardware
// types take them by default, and an operator who enables only direct is
// answered with Ironic's message listing what is enabled.
func TestDeployInterfacesEnabled(t *testing.T) {
	for _, typ := range []string{"ipmi", "redfish", "fake-hardware"} {
		for _, iface := range []string{"ramdisk", "custom-agent"} {
			n := &model.Node{Driver: typ}
			n.Interfaces.Set("deploy", iface)
			if err := hardware.Registry(nil).Compose(n); err != nil {
				t.Errorf("%s with deploy_interface %s: %v", typ, iface, err)
			}
		}
	}
	r := hardware.RegistryWith(hardware.Drivers{Interfaces: driver.Enablement{Interfaces: map[string][]string{"deploy": {"direct"}}}})
	n := &model.Node{Driver: "redfish"}
	n.Interfaces.Set("deploy", "ramdisk")
	want := "Could not find the following interface in the 'ironic.hardware.interfaces.deploy' entrypoint: ramdisk. Valid interfaces are ['direct']."
	if err := r.Compose(n); err == nil || err.Error() != want {
		t.Errorf("Compose = %v, want %q", err, want)
	}
}

// TestRamdiskDeployNodeInspects: the agent's inspection of a node whose
// deploy interface is ramdisk validates the agent's boot, not the
// instance's: no instance_info is needed to inspect it.
func TestRamdiskDeployNodeInspects(t *testing.T) {
	r := hardware.RegistryWith(hardware.Drivers{Boot: publisher{}, ISO: publisher{}})
	for _, boot := range []string{"redfish-virtual-media", "ipxe"} {
		n := &model.Node{UUID: "n1", Driver: "redfish", DriverInfo: model.JSON{"redfish_address": "http://127.0.0.1:8000",
			"redfish_system_id": "/redfish/v1/Systems/1", "deploy_iso": "http://127.0.0.1/ipa.iso",
			"deploy_kernel": "http://127.0.0.1/k", "deploy_ramdisk": "http://127.0.0.1/r"}}
		n.Interfaces.Set("boot", boot)
		n.Interfaces.Set("deploy", "ramdisk")
		n.Interfaces.Set("inspect", "agent")
		if err := r.Compose(n); err != nil {
			t.Fatal(err)
		}
		drv, err := r.For(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := drv.Inspect.Validate(&driver.Task{Node: n, Driver: drv}); err != nil {
			t.Errorf("%s: agent inspection of a ramdisk-deploy node: %v", boot, err)
		}
		if err := drv.Deploy.Validate(&driver.Task{Node: n, Driver: drv}); err == nil || !strings.Contains(err.Error(), "Missing are: ['kernel', 'ramdisk']") {
			t.Errorf("%s: deploy validation %v, want the instance's kernel and ramdisk missing", boot, err)
		}
	}
}
