package bmo_test

// The pieces of BMO that decide what it sends, ported (not imported: BMO is
// not a Go module one can depend on) from the commit named in main_test.go.
// Each function names the BMO function it follows.

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/inventory"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// result is BMO's provisioner.Result (pkg/provisioner/ironic/result.go).
type result struct {
	Dirty        bool
	RequeueAfter time.Duration
	ErrorMessage string
}

// BMO's retry delays (ironic.go); the replay polls faster (pollInterval)
// but keeps them in the results as BMO does.
const (
	shortRetryDelay = 3 * time.Second
	longRetryDelay  = 10 * time.Second
)

func operationContinuing(d time.Duration) (result, error) {
	return result{Dirty: true, RequeueAfter: d}, nil
}
func operationComplete() (result, error)         { return result{}, nil }
func operationFailed(msg string) (result, error) { return result{ErrorMessage: msg}, nil }
func retryAfterDelay(d time.Duration) (result, error) {
	return result{Dirty: true, RequeueAfter: d}, nil
}
func transientError(err error) (result, error) { return result{}, err }

// features is clients.AvailableFeatures (clients/features.go).
type features struct{ MaxVersion int }

// baseline is BMO's minimum microversion (1.89: virtual media attach).
const baseline = 89

func (f features) HasVirtualMediaGetAPI() bool { return f.MaxVersion >= 93 }
func (f features) HasDisablePowerOff() bool    { return f.MaxVersion >= 95 }
func (f features) HasHealthAPI() bool          { return f.MaxVersion >= 109 }
func (f features) HasDeploymentAbort() bool    { return f.MaxVersion >= 110 }

// ChooseMicroversion is AvailableFeatures.ChooseMicroversion.
func (f features) ChooseMicroversion() string {
	switch {
	case f.HasDeploymentAbort():
		return "1.110"
	case f.HasHealthAPI():
		return "1.109"
	case f.HasDisablePowerOff():
		return "1.95"
	case f.HasVirtualMediaGetAPI():
		return "1.93"
	}
	return fmt.Sprintf("1.%d", baseline)
}

// access is the part of bmc.AccessDetails (pkg/hardwareutils/bmc) the
// redfish BMC types decide: "redfish[+http|+https]" (redfish.go: boot ipxe)
// and "redfish-virtualmedia[+http|+https]" (redfish_virtualmedia.go: boot
// redfish-virtual-media). Both: driver redfish, BIOS interface "" (the
// hardware type's default), firmware redfish, RAID redfish, management,
// power and vendor "" (defaults), inspect redfish for fast inspection.
type access struct {
	bmcType, host, path string
	virtualMedia        bool
}

// newAccess is bmc.NewAccessDetails for the two redfish BMC types.
func newAccess(address string) (access, error) {
	u, err := url.Parse(address)
	if err != nil {
		return access{}, fmt.Errorf("failed to parse BMC address information: %w", err)
	}
	switch u.Scheme {
	case "redfish", "redfish+http", "redfish+https":
		return access{bmcType: u.Scheme, host: u.Host, path: u.Path}, nil
	case "redfish-virtualmedia", "redfish-virtualmedia+http", "redfish-virtualmedia+https":
		return access{bmcType: u.Scheme, host: u.Host, path: u.Path, virtualMedia: true}, nil
	}
	return access{}, fmt.Errorf("unknown BMC type %q for address %s", u.Scheme, address)
}

func (a access) Type() string                { return a.bmcType }
func (a access) Driver() string              { return "redfish" }
func (a access) BIOSInterface() string       { return "" }
func (a access) FirmwareInterface() string   { return "redfish" }
func (a access) ManagementInterface() string { return "" }
func (a access) PowerInterface() string      { return "" }
func (a access) RAIDInterface() string       { return "redfish" }
func (a access) VendorInterface() string     { return "" }
func (a access) InspectInterface() string    { return "redfish" }

func (a access) BootInterface() string {
	if a.virtualMedia {
		return "redfish-virtual-media"
	}
	return "ipxe"
}

func (a access) SupportsISOPreprovisioningImage() bool { return a.virtualMedia }

// DriverInfo is redfishAccessDetails.DriverInfo with getRedfishAddress:
// the scheme after "+" (https without one) and the host; the path, unless
// it is the service root, is the system id.
func (a access) DriverInfo(user, password string) map[string]any {
	scheme := "https"
	if parts := strings.Split(a.bmcType, "+"); len(parts) > 1 {
		scheme = parts[1]
	}
	info := map[string]any{
		"redfish_username": user,
		"redfish_password": password,
		"redfish_address":  scheme + "://" + a.host,
	}
	if p := strings.Trim(a.path, "/"); p != "" && p != "redfish/v1" {
		info["redfish_system_id"] = a.path
	}
	return info
}

// updater is clients.NodeUpdater (clients/updateopts.go).
type updater struct{ Updates nodes.UpdateOpts }

// optionValueEqual is clients.optionValueEqual.
func optionValueEqual(current, value any) bool {
	if reflect.DeepEqual(current, value) {
		return true
	}
	switch cur := current.(type) {
	case []any:
		t := reflect.TypeOf(value)
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return false
		}
		v := reflect.ValueOf(value)
		if v.Len() != len(cur) {
			return false
		}
		for i, c := range cur {
			if !optionValueEqual(v.Index(i).Interface(), c) {
				return false
			}
		}
		return true
	case map[string]any:
		t := reflect.TypeOf(value)
		if t.Kind() != reflect.Map || t.Key().Kind() != reflect.String {
			return false
		}
		v := reflect.ValueOf(value)
		if v.Len() != len(cur) {
			return false
		}
		for k, c := range cur {
			nv := v.MapIndex(reflect.ValueOf(k))
			if !nv.IsValid() || !optionValueEqual(nv.Interface(), c) {
				return false
			}
		}
		return true
	}
	return false
}

// deref is clients.deref.
func deref(v any) any {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Ptr {
		return v
	}
	if rv.IsNil() {
		return nil
	}
	return rv.Elem().Interface()
}

// op is clients.getUpdateOperation: add (which replaces) when the desired
// value differs, remove when it is nil and the option is present.
func op(name string, current map[string]any, desired any, path string) *nodes.UpdateOperation {
	cur, present := current[name]
	desired = deref(desired)
	if desired != nil {
		if present && optionValueEqual(deref(cur), desired) {
			return nil
		}
		return &nodes.UpdateOperation{Op: nodes.AddOp, Path: path, Value: desired}
	}
	if present {
		return &nodes.UpdateOperation{Op: nodes.RemoveOp, Path: path}
	}
	return nil
}

func (u *updater) section(current map[string]any, settings map[string]any, base string) *updater {
	for name, v := range settings {
		if o := op(name, current, v, base+"/"+name); o != nil {
			u.Updates = append(u.Updates, *o)
		}
	}
	return u
}

func (u *updater) SetTopLevelOpt(name string, desired, current any) *updater {
	return u.section(map[string]any{name: current}, map[string]any{name: desired}, "")
}

func (u *updater) SetPropertiesOpts(s map[string]any, n *nodes.Node) *updater {
	return u.section(n.Properties, s, "/properties")
}

func (u *updater) SetInstanceInfoOpts(s map[string]any, n *nodes.Node) *updater {
	return u.section(n.InstanceInfo, s, "/instance_info")
}

func (u *updater) SetDriverInfoOpts(s map[string]any, n *nodes.Node) *updater {
	return u.section(n.DriverInfo, s, "/driver_info")
}

// bootModeCapabilities and buildCapabilitiesValue are capabilities.go's.
var bootModeCapabilities = map[string]string{
	"UEFI":           "boot_mode:uefi",
	"UEFISecureBoot": "boot_mode:uefi,secure_boot:true",
	"legacy":         "boot_mode:bios",
}

func buildCapabilitiesValue(n *nodes.Node, bootMode string) string {
	if n == nil {
		return bootModeCapabilities[bootMode]
	}
	existing, _ := n.Properties["capabilities"].(string)
	if existing == "" {
		return bootModeCapabilities[bootMode]
	}
	var kept []string
	for _, item := range strings.Split(existing, ",") {
		if !strings.HasPrefix(item, "boot_mode:") && !strings.HasPrefix(item, "secure_boot:") {
			kept = append(kept, item)
		}
	}
	return strings.Join(append(kept, bootModeCapabilities[bootMode]), ",")
}

func buildInstanceInfoCapabilities(bootMode string) map[string]string {
	c := map[string]string{}
	if bootMode == "UEFISecureBoot" {
		c["secure_boot"] = "true"
	}
	return c
}

// rootDeviceHints is the part of metal3api.RootDeviceHints the replay sets;
// makeHintMap is devicehints.MakeHintMap for it.
type rootDeviceHints struct {
	DeviceName       string
	MinSizeGigabytes int
}

func makeHintMap(h *rootDeviceHints) map[string]string {
	hints := map[string]string{}
	if h == nil {
		return hints
	}
	if h.DeviceName != "" {
		if strings.HasPrefix(h.DeviceName, "/dev/disk/by-path/") {
			hints["by_path"] = "s== " + h.DeviceName
		} else {
			hints["name"] = "s== " + h.DeviceName
		}
	}
	if h.MinSizeGigabytes != 0 {
		hints["size"] = fmt.Sprintf(">= %d", h.MinSizeGigabytes)
	}
	return hints
}

// hardwareDetails is the part of metal3api.HardwareDetails that
// hardwaredetails.GetHardwareDetails fills from GET /v1/nodes/{id}/inventory.
type hardwareDetails struct {
	Hostname     string
	RAMMebibytes int
	CPU          struct {
		Arch, Model    string
		ClockMegahertz float64
		Count          int
		Flags          []string
	}
	NIC []struct {
		Name, Model, MAC, IP string
		SpeedGbps            int
		PXE                  bool
	}
	Storage []struct {
		Name       string
		Rotational bool
		Type       string
		SizeBytes  int64
		Vendor     string
		Model      string
		Serial     string
	}
	Manufacturer, ProductName, SerialNumber string
	BIOSVendor, BIOSVersion, BIOSDate       string
	// PluginDataErr is what AsStandardData said (BMO logs it: "some fields
	// will not be available").
	PluginDataErr error
}

// getHardwareDetails is hardwaredetails.GetHardwareDetails.
func getHardwareDetails(data *nodes.InventoryData) hardwareDetails {
	var d hardwareDetails
	std, err := data.PluginData.AsStandardData()
	d.PluginDataErr = err
	inv := data.Inventory
	d.BIOSVendor, d.BIOSVersion, d.BIOSDate = inv.SystemVendor.Firmware.Vendor, inv.SystemVendor.Firmware.Version, inv.SystemVendor.Firmware.BuildDate
	d.Manufacturer, d.ProductName, d.SerialNumber = inv.SystemVendor.Manufacturer, inv.SystemVendor.ProductName, inv.SystemVendor.SerialNumber
	d.RAMMebibytes = inv.Memory.PhysicalMb
	for _, intf := range inv.Interfaces {
		nic := func(ip string) {
			d.NIC = append(d.NIC, struct {
				Name, Model, MAC, IP string
				SpeedGbps            int
				PXE                  bool
			}{intf.Name, strings.TrimLeft(intf.Vendor+" "+intf.Product, " "), intf.MACAddress, ip,
				intf.SpeedMbps / 1000, std.AllInterfaces[intf.Name].PXEEnabled})
		}
		if intf.IPV4Address != "" || intf.IPV6Address == "" {
			nic(intf.IPV4Address)
		}
		if intf.IPV6Address != "" {
			nic(intf.IPV6Address)
		}
	}
	for _, disk := range inv.Disks {
		name := disk.Name
		if disk.ByPath != "" {
			name = disk.ByPath
		}
		d.Storage = append(d.Storage, struct {
			Name       string
			Rotational bool
			Type       string
			SizeBytes  int64
			Vendor     string
			Model      string
			Serial     string
		}{name, disk.Rotational, diskType(disk), disk.Size, disk.Vendor, disk.Model, disk.Serial})
	}
	var freq float64
	fmt.Sscanf(inv.CPU.Frequency, "%f", &freq) //nolint:errcheck // as BMO
	sort.Strings(inv.CPU.Flags)
	d.CPU.Arch, d.CPU.Model, d.CPU.ClockMegahertz, d.CPU.Count, d.CPU.Flags =
		inv.CPU.Architecture, inv.CPU.ModelName, math.Round(freq), inv.CPU.Count, inv.CPU.Flags
	d.Hostname = inv.Hostname
	return d
}

func diskType(d inventory.RootDiskType) string {
	switch {
	case d.Rotational:
		return "HDD"
	case strings.HasPrefix(d.Name, "/dev/nvme"):
		return "NVME"
	}
	return "SSD"
}

// errNeedsRegistration is provisioner.ErrNeedsRegistration.
var errNeedsRegistration = errors.New("host not registered")
