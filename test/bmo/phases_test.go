package bmo_test

// The phases: one of BMO's host states each, driven through the ported
// provisioner, with the checks of what BMO expects and reads.

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

func (h *hostRun) register(t *testing.T) {
	r := h.reconcile(t, "register", 30*time.Second, func(ctx context.Context) (result, error) {
		r, id, err := h.p.Register(ctx, false, false)
		if id != "" {
			h.p.nodeID = id // the controller stores it in the host's status
		}
		return r, err
	})
	if r.ErrorMessage != "" {
		t.Fatalf("registration failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	acc, _ := newAccess(h.p.host.BMCAddress)
	if n.ProvisionState != string(nodes.Manageable) || n.LastError != "" || n.Name != h.p.nodeName() {
		t.Errorf("after registration: name %q, provision_state %q, last_error %q", n.Name, n.ProvisionState, n.LastError)
	}
	wantIfaces := map[string]string{"driver": "redfish", "boot_interface": acc.BootInterface(), "firmware_interface": "redfish",
		"raid_interface": "redfish", "inspect_interface": inspectInterfaceForMode(h.p.host.InspectionMode, acc),
		"deploy_interface": "direct", "power_interface": "redfish", "management_interface": "redfish"}
	gotIfaces := map[string]string{"driver": n.Driver, "boot_interface": n.BootInterface, "firmware_interface": n.FirmwareInterface,
		"raid_interface": n.RAIDInterface, "inspect_interface": n.InspectInterface, "deploy_interface": n.DeployInterface,
		"power_interface": n.PowerInterface, "management_interface": n.ManagementInterface}
	for k, v := range wantIfaces {
		if gotIfaces[k] != v {
			t.Errorf("%s = %q, want %q", k, gotIfaces[k], v)
		}
	}
	u, _ := url.Parse(h.env.emu.URL())
	if n.DriverInfo["redfish_address"] != "http://"+u.Host || n.DriverInfo["redfish_system_id"] != "/redfish/v1/Systems/"+h.m.ID ||
		n.DriverInfo["redfish_password"] != "******" {
		t.Errorf("driver_info %v", n.DriverInfo)
	}
	if acc.virtualMedia {
		if n.DriverInfo["deploy_iso"] != h.p.config.deployISOURL || n.DriverInfo["deploy_kernel"] != nil {
			t.Errorf("virtual media host: driver_info %v, want deploy_iso only", n.DriverInfo)
		}
	} else if n.DriverInfo["deploy_kernel"] != h.p.config.deployKernelURL || n.DriverInfo["deploy_ramdisk"] != h.p.config.deployRamdiskURL {
		t.Errorf("ipxe host: driver_info %v, want deploy_kernel and deploy_ramdisk", n.DriverInfo)
	}
	if n.AutomatedClean == nil || !*n.AutomatedClean || n.Properties["capabilities"] != "boot_mode:uefi" ||
		n.Properties["cpu_arch"] != h.p.cpuArch() || n.DisablePowerOff != h.p.host.DisablePowerOff {
		t.Errorf("automated_clean %v, properties %v, disable_power_off %v", n.AutomatedClean, n.Properties, n.DisablePowerOff)
	}
	pp, err := h.p.getPorts(t.Context(), n.UUID, "")
	if err != nil || len(pp) != 1 || pp[0].Address != h.p.host.BootMACAddress {
		t.Errorf("ports of the node: %+v, %v; want the boot MAC %s", pp, err, h.p.host.BootMACAddress)
	}
	// a second Register finds the node by ID and changes nothing
	before := len(strings.Split(h.rec.transcript(), "\n"))
	h.p.cachedNode = nil
	if r, _, err := h.p.Register(t.Context(), false, false); err != nil || r.Dirty || r.ErrorMessage != "" {
		t.Errorf("Register again: %+v %v", r, err)
	}
	for _, line := range strings.Split(h.rec.transcript(), "\n")[before:] {
		if !strings.HasPrefix(line, "GET ") {
			t.Errorf("Register of a registered host sent %s", line)
		}
	}
}

func (h *hostRun) firmwareRead(t *testing.T) {
	// hostfirmwaresettings_controller: GetFirmwareSettings(ctx, true)
	settings, err := h.p.GetFirmwareSettings(t.Context(), true)
	if err != nil {
		t.Fatalf("GetFirmwareSettings: %v", err)
	}
	if len(settings) == 0 {
		t.Fatal("GET bios?detail=True: no settings")
	}
	h.settings = settings
	if _, _, ok := pickSetting(settings); !ok {
		t.Errorf("no writable enumeration setting with another allowable value among %v", settings)
	}
	comps, err := h.p.GetFirmwareComponents(t.Context())
	if err != nil {
		t.Fatalf("GetFirmwareComponents: %v", err)
	}
	var names []string
	for _, c := range comps {
		names = append(names, c.Component)
		if c.CurrentVersion == "" || c.InitialVersion == "" {
			t.Errorf("component %s: current_version %q, initial_version %q", c.Component, c.CurrentVersion, c.InitialVersion)
		}
	}
	if !slices.Contains(names, "bios") || !slices.Contains(names, "bmc") {
		t.Errorf("firmware components %v, want bios and bmc", names)
	}
}

// pickSetting is what a user edits in HostFirmwareSettings: the first
// (by name) writable enumeration setting, set to another allowable value.
func pickSetting(s map[string]biosSetting) (string, string, bool) {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := s[k]
		if v.AttributeType != "Enumeration" || (v.ReadOnly != nil && *v.ReadOnly) {
			continue
		}
		for _, a := range v.AllowableValues {
			if a != v.Value {
				return k, a, true
			}
		}
	}
	return "", "", false
}

func (h *hostRun) inspect(t *testing.T) {
	starts := 0
	var details *hardwareDetails
	r := h.reconcile(t, "inspect", 60*time.Second, h.registered(func(ctx context.Context) (result, error) {
		r, started, d, err := h.p.InspectHardware(ctx, false, false)
		if started {
			starts++
			if starts > 1 {
				h.settle(t)
				t.Fatalf("BMO started inspection a second time: after the first one GET /v1/nodes/%s/inventory answered 404 (BMO loops like this)", h.p.nodeID)
			}
		}
		if d != nil {
			details = d
		}
		return r, err
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("inspection failed: %s", r.ErrorMessage)
	}
	if starts != 1 || details == nil {
		t.Fatalf("inspection started %d times, details %v", starts, details)
	}
	d := details
	h.p.hardwareData = d // the controller stores it in the HardwareData object
	if d.PluginDataErr != nil {
		t.Errorf("plugin_data is not Ironic's standard plugin data: %v", d.PluginDataErr)
	}
	if d.CPU.Arch == "" || d.CPU.Count <= 0 || d.RAMMebibytes <= 0 {
		t.Errorf("cpu %+v, ram %d MiB", d.CPU, d.RAMMebibytes)
	}
	var macs []string
	for _, nic := range d.NIC {
		macs = append(macs, strings.ToLower(nic.MAC))
	}
	if len(d.Storage) == 0 || len(macs) == 0 {
		t.Errorf("storage %+v, NICs %v", d.Storage, macs)
	}
	for _, s := range d.Storage {
		if s.Name == "" {
			t.Errorf("storage without a name: %+v", s)
		}
	}
	if h.p.host.InspectionMode == "fast" {
		// Redfish describes the emulated machine itself
		if !slices.Contains(macs, h.p.host.BootMACAddress) {
			t.Errorf("NICs %v lack the boot MAC %s", macs, h.p.host.BootMACAddress)
		}
		for _, s := range d.Storage {
			if s.SizeBytes <= 0 {
				t.Errorf("storage %+v", s)
			}
		}
		if d.Manufacturer == "" {
			t.Errorf("system vendor %q/%q from Redfish", d.Manufacturer, d.ProductName)
		}
	} else {
		// The emulated agent runs on the test's host: its inventory holds
		// the host's CPUs, memory, NICs and block devices, and the
		// machine's disk file, which the root device hint names.
		found := false
		for _, s := range d.Storage {
			found = found || s.Name == h.m.Disk() && s.SizeBytes == diskBytes
		}
		if !found {
			t.Errorf("the agent's inventory lacks the machine's disk %s: %+v", h.m.Disk(), d.Storage)
		}
	}
	if n := h.node(t); n.ProvisionState != string(nodes.Manageable) || n.LastError != "" {
		t.Errorf("after inspection: %s", h.nodeState(t))
	}
}

func (h *hostRun) bmcEvents(t *testing.T) {
	id, err := h.p.AddBMCEventSubscriptionForNode(t.Context(), h.env.files+"/events", "bmo-replay",
		[]map[string]string{{"X-Replay": h.name}})
	if err != nil {
		t.Fatalf("create_subscription: %v", err)
	}
	if id == "" {
		t.Fatal("create_subscription returned no id")
	}
	if err := h.p.RemoveBMCEventSubscriptionForNode(t.Context(), id); err != nil {
		t.Fatalf("delete_subscription %s: %v", id, err)
	}
}

func (h *hostRun) prepareRAID(t *testing.T) {
	// A size, as in BMO's documented example: a volume without one is
	// sent as size_gb "MAX", which Ironic's redfish RAID (and Anvil's)
	// refuses unless physicalDisks names the drives.
	size, drives := 10, 2
	data := prepareData{TargetRAID: []hardwareRAIDVolume{{Name: "root", Level: "1", SizeGibibytes: &size, NumberOfPhysicalDisks: &drives}}}
	started := false
	r := h.reconcile(t, "prepare", 60*time.Second, h.registered(func(ctx context.Context) (result, error) {
		r, s, err := h.p.Prepare(ctx, data, !started, false)
		started = started || s
		return r, err
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("manual cleaning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Manageable) || n.LastError != "" {
		t.Errorf("after manual cleaning: %s", h.nodeState(t))
	}
	disks, _ := n.TargetRAIDConfig["logical_disks"].([]any)
	if len(disks) != 1 {
		t.Errorf("target_raid_config %v, want BMO's one logical disk", n.TargetRAIDConfig)
	}
	if got, _ := n.RAIDConfig["logical_disks"].([]any); len(got) != 1 {
		t.Errorf("raid_config %v after raid.create_configuration, want one logical disk", n.RAIDConfig)
	}
}

func (h *hostRun) provision(t *testing.T) {
	raw := "raw"
	data := provisionData{Image: image{URL: h.env.imageURL(h.name), Checksum: h.env.imageSum(h.name),
		ChecksumType: h.checksumType, DiskFormat: &raw},
		UserData: "#cloud-config\nhostname: " + h.name + "\n"}
	r := h.reconcile(t, "provision", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		return h.p.Provision(ctx, data)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("provisioning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Active) || n.PowerState != "power on" || n.LastError != "" || n.InstanceUUID != h.p.host.UID {
		t.Errorf("after provisioning: %s, instance_uuid %q", h.nodeState(t), n.InstanceUUID)
	}
	if !ironicHasSameImage(n, data.Image) {
		t.Errorf("instance_info %v does not hold BMO's image settings", n.InstanceInfo)
	}
	if rd, _ := n.InstanceInfo["root_device"].(map[string]any); rd["name"] != "s== "+h.m.Disk() {
		t.Errorf("instance_info root_device %v", n.InstanceInfo["root_device"])
	}
	disk, err := os.ReadFile(h.m.Disk())
	if err != nil {
		t.Fatal(err)
	}
	// The image, but for the partition table, where the agent added the
	// config drive partition; BMO's config drive (its meta data carries
	// the host's UID, its user data the cloud-config) after the image.
	img := h.env.images["/images/"+h.name+".raw"]
	if !bytes.Equal(disk[512:len(img)], img[512:]) || !bytes.Equal(disk[:446], img[:446]) {
		t.Errorf("the machine's disk does not hold the image")
	}
	if rest := disk[len(img):]; !bytes.Contains(rest, []byte(h.p.host.UID)) || !bytes.Contains(rest, []byte("#cloud-config")) {
		t.Errorf("BMO's config drive is not on the disk after the image")
	}
	if st := h.m.Status(); st.Power != "On" || st.Running != bmcemu.RunningImage {
		t.Errorf("machine power %s, running %q; want On, the image", st.Power, st.Running)
	}
	if acc, _ := newAccess(h.p.host.BMCAddress); acc.virtualMedia {
		// the BMC downloaded BMO's deploy ISO when Anvil inserted it
		if n := h.env.fetches("/deploy/ironic-python-agent.iso"); n == 0 {
			t.Errorf("the deploy ISO was never fetched: the machine did not boot virtual media")
		}
		if md := h.m.Media(); md.Inserted {
			t.Errorf("virtual media still inserted after the deploy: %+v", md)
		}
	}
}

func (h *hostRun) servicing(t *testing.T) {
	if h.settings == nil {
		t.Fatal("no BIOS settings were read (phase firmware-read), so BMO has nothing to compare a target with")
	}
	name, value, ok := pickSetting(h.settings)
	if !ok {
		t.Fatal("no BIOS setting to change")
	}
	actual := map[string]string{}
	for k, v := range h.settings {
		actual[k] = v.Value
	}
	before, err := h.p.GetFirmwareComponents(t.Context())
	if err != nil {
		t.Fatalf("GetFirmwareComponents: %v", err)
	}
	data := servicingData{ActualFirmwareSettings: actual, TargetFirmwareSettings: map[string]string{name: value},
		TargetFirmwareUpdates: []map[string]string{{"component": "bios", "url": h.env.files + "/firmware/bios-2.0.bin"}},
		HasFirmwareSpec:       true}
	started := false
	r := h.reconcile(t, "servicing", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		r, s, err := h.p.Service(ctx, data, !started, false)
		started = started || s
		return r, err
	}))
	if r.ErrorMessage != "" {
		t.Errorf("servicing failed: %s", r.ErrorMessage)
		// BMO backs out when the user drops the firmware spec: abort →
		// active, where the next phases start
		back := data
		back.HasFirmwareSpec = false
		h.reconcile(t, "abort the failed servicing", 60*time.Second, h.registered(func(ctx context.Context) (result, error) {
			r, _, err := h.p.Service(ctx, back, false, true)
			return r, err
		}))
		return
	}
	if !started {
		t.Fatal("servicing never started")
	}
	if n := h.node(t); n.ProvisionState != string(nodes.Active) || n.LastError != "" {
		t.Errorf("after servicing: %s", h.nodeState(t))
	}
	after, err := h.p.GetFirmwareSettings(t.Context(), true)
	if err != nil {
		t.Fatalf("GetFirmwareSettings after servicing: %v", err)
	}
	if !sameSettings(after, data.TargetFirmwareSettings) {
		t.Errorf("BIOS setting %s = %q after bios.apply_configuration, want %q", name, after[name].Value, value)
	}
	comps, err := h.p.GetFirmwareComponents(t.Context())
	if err != nil {
		t.Fatalf("GetFirmwareComponents after servicing: %v", err)
	}
	for _, c := range comps {
		if c.Component != "bios" {
			continue
		}
		if c.LastVersionFlashed == "" || !c.Updated {
			t.Errorf("bios component after firmware.update: %+v (before %+v)", c, before)
		}
		return
	}
	t.Errorf("no bios component after firmware.update: %+v", comps)
}

func (h *hostRun) deprovision(t *testing.T) {
	r := h.reconcile(t, "deprovision", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		return h.p.Deprovision(ctx, false)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("deprovisioning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Available) || n.LastError != "" {
		t.Errorf("after deprovisioning: %s", h.nodeState(t))
	}
	disk, err := os.ReadFile(h.m.Disk())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk[:mib], make([]byte, mib)) {
		t.Errorf("automated cleaning (metadata) left the disk's first MiB")
	}
	if st := h.m.Status(); st.Running == bmcemu.RunningImage {
		t.Errorf("the machine still runs the image after deprovisioning")
	}
}

func (h *hostRun) delete(t *testing.T) {
	// StatePoweringOffBeforeDelete (after deprovisioning, with a
	// registration pass), then StateDeleting (without).
	if r := h.reconcile(t, "power off before delete", 30*time.Second, h.registered(h.p.PowerOff)); r.ErrorMessage != "" {
		t.Fatalf("power off before delete: %s", r.ErrorMessage)
	}
	if n := h.node(t); n.PowerState != string(nodes.PowerOff) {
		t.Errorf("before delete: %s", h.nodeState(t))
	}
	r := h.reconcile(t, "delete", 30*time.Second, h.p.Delete)
	if r.ErrorMessage != "" {
		t.Fatalf("delete failed: %s", r.ErrorMessage)
	}
	if _, err := nodes.Get(t.Context(), h.p.c, h.p.nodeID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("GET of the deleted node: %v, want 404", err)
	}
	pages, err := ports.List(h.p.c, ports.ListOpts{Address: h.p.host.BootMACAddress}).AllPages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pp, _ := ports.ExtractPorts(pages); len(pp) != 0 {
		t.Errorf("ports left after the node's deletion: %+v", pp)
	}
}

// reboot is the power management of a host with disablePowerOff: powered
// on (online), then a reboot request: one PowerOff call, which asks for
// "rebooting" rather than "power off" (the controller then takes the
// reboot as done).
func (h *hostRun) reboot(t *testing.T) {
	// online: true: the controller powers the host on first
	if r := h.reconcile(t, "power on", 30*time.Second, h.registered(h.p.PowerOn)); r.ErrorMessage != "" {
		t.Fatalf("power on: %s", r.ErrorMessage)
	}
	h.p.cachedNode = nil
	before := len(strings.Split(h.rec.transcript(), "\n"))
	r, err := h.registered(h.p.PowerOff)(t.Context())
	if err != nil || r.ErrorMessage != "" {
		t.Fatalf("PowerOff of a host with disablePowerOff: %+v %v", r, err)
	}
	sent := false
	for _, line := range strings.Split(h.rec.transcript(), "\n")[before:] {
		sent = sent || strings.HasPrefix(line, "PUT /v1/nodes/"+h.p.nodeID+"/states/power ") && strings.HasSuffix(line, "-> 202")
	}
	if !sent {
		t.Fatalf("no accepted power request: %s", h.rec.transcript())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := h.node(t)
		if n.TargetPowerState == "" && n.Reservation == "" {
			if n.PowerState != string(nodes.PowerOn) || n.LastError != "" {
				t.Errorf("after the reboot: %s", h.nodeState(t))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reboot not done after 30s: %s", h.nodeState(t))
		}
		time.Sleep(pollInterval)
	}
	if st := h.m.Status(); st.Power != "On" {
		t.Errorf("the machine is %s after the reboot", st.Power)
	}
}

// deleteNoPowerOff is StateDeleting for a host with disablePowerOff
// (PoweringOffBeforeDelete is skipped).
func (h *hostRun) deleteNoPowerOff(t *testing.T) {
	if r := h.reconcile(t, "delete", 30*time.Second, h.p.Delete); r.ErrorMessage != "" {
		t.Fatalf("delete failed: %s", r.ErrorMessage)
	}
	if _, err := nodes.Get(t.Context(), h.p.c, h.p.nodeID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("GET of the deleted node: %v, want 404", err)
	}
}
