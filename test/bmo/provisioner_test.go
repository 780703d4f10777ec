package bmo_test

// ironicProvisioner of BMO's pkg/provisioner/ironic, ported for the paths a
// BareMetalHost with a redfish BMC takes: register.go, ironic.go,
// inspecthardware.go, raid.go, servicing.go. The gophercloud calls and the
// opts structs are BMO's; what BMO reads from the Kubernetes objects is the
// bmh value.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// bmh is what BMO reads from a BareMetalHost and its secrets.
type bmh struct {
	Namespace, Name, UID string
	BMCAddress           string
	Username, Password   string
	BootMACAddress       string
	// InspectionMode "" is agent inspection, "fast" out-of-band (redfish).
	InspectionMode  string
	BootMode        string // "UEFI"
	RootDeviceHints *rootDeviceHints
	// AutomatedCleaningMode "metadata" or "disabled".
	AutomatedCleaningMode string
	// DisablePowerOff is spec.disablePowerOff (1.95): reboot, never power off.
	DisablePowerOff bool
	// Architecture is spec.architecture ("": from the hardware details,
	// else the controller's).
	Architecture string
}

// ironicConfig is BMO's ironicConfig as its environment sets it
// (DEPLOY_KERNEL_URL, DEPLOY_RAMDISK_URL, DEPLOY_ISO_URL), no
// PreprovisioningImage builder, no external URL.
type ironicConfig struct {
	deployKernelURL, deployRamdiskURL, deployISOURL string
}

// image is metal3api.Image.
type image struct {
	URL, Checksum, ChecksumType string
	DiskFormat                  *string
}

// isLiveISO is Image.IsLiveISO.
func (i image) isLiveISO() bool { return i.DiskFormat != nil && *i.DiskFormat == "live-iso" }

// getChecksum is Image.GetChecksum for non-OCI images.
func (i image) getChecksum() (string, string, error) {
	if i.isLiveISO() {
		return "", "", nil
	}
	if i.Checksum == "" {
		return "", "", errors.New("checksum is required for normal images")
	}
	switch i.ChecksumType {
	case "md5", "sha256", "sha512":
		return i.Checksum, i.ChecksumType, nil
	case "", "auto":
		return i.Checksum, "", nil
	}
	return "", "", fmt.Errorf("unknown checksumType %s", i.ChecksumType)
}

// hardwareRAIDVolume is metal3api.HardwareRAIDVolume.
type hardwareRAIDVolume struct {
	Name                  string
	Level                 string
	SizeGibibytes         *int
	Rotational            *bool
	NumberOfPhysicalDisks *int
	Controller            string
	PhysicalDisks         []string
}

type provisioner struct {
	c        *gophercloud.ServiceClient
	features features
	config   ironicConfig
	host     bmh
	nodeID   string
	// cachedNode lives for one reconcile (reset by the loop).
	cachedNode *nodes.Node
	// hardwareData is the HardwareData of the host once inspected.
	hardwareData *hardwareDetails
	logf         func(string, ...any)
}

// cpuArch is the controller's getHostArchitecture: the spec's, else the
// inspected CPU's, else the controller's own (getControllerArchitecture).
func (p *provisioner) cpuArch() string {
	if p.host.Architecture != "" {
		return p.host.Architecture
	}
	if p.hardwareData != nil && p.hardwareData.CPU.Arch != "" {
		return p.hardwareData.CPU.Arch
	}
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return runtime.GOARCH
}

func (p *provisioner) nodeName() string { return p.host.Namespace + "~" + p.host.Name }

// getNode is ironicProvisioner.getNode.
func (p *provisioner) getNode(ctx context.Context) (*nodes.Node, error) {
	if p.nodeID == "" {
		return nil, errNeedsRegistration
	}
	if p.cachedNode != nil {
		return p.cachedNode, nil
	}
	n, err := nodes.Get(ctx, p.c, p.nodeID).Extract()
	if err == nil {
		p.cachedNode = n
		return n, nil
	}
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, errNeedsRegistration
	}
	return nil, fmt.Errorf("failed to find node by ID %s: %w", p.nodeID, err)
}

// getPorts is ironicProvisioner.getPorts.
func (p *provisioner) getPorts(ctx context.Context, nodeUUID, mac string) ([]ports.Port, error) {
	opts := ports.ListOpts{Fields: []string{"node_uuid", "uuid", "address"}}
	if nodeUUID != "" {
		opts.NodeUUID = nodeUUID
	}
	if mac != "" {
		opts.Address = mac
	}
	pages, err := ports.List(p.c, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to page over list of ports: %w", err)
	}
	return ports.ExtractPorts(pages)
}

// findExistingHost is ironicProvisioner.findExistingHost: by ID, by name
// ("namespace~name", then "name"), by boot MAC.
func (p *provisioner) findExistingHost(ctx context.Context) (*nodes.Node, error) {
	n, err := p.getNode(ctx)
	if !errors.Is(err, errNeedsRegistration) {
		return n, err
	}
	search := []string{p.nodeName()}
	if !strings.Contains(p.host.Name, "~") {
		search = append(search, p.host.Name)
	}
	for _, name := range search {
		n, err := nodes.Get(ctx, p.c, name).Extract()
		if err == nil {
			return n, nil
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("failed to find node by name %s: %w", name, err)
		}
	}
	if mac := p.host.BootMACAddress; mac != "" {
		all, err := p.getPorts(ctx, "", mac)
		if err != nil {
			return nil, nil //nolint:nilerr // as BMO: a failed lookup is "not found"
		}
		if len(all) > 0 {
			n, err := nodes.Get(ctx, p.c, all[0].NodeUUID).Extract()
			if err == nil {
				if n.Name != "" {
					return nil, fmt.Errorf("MAC address %s conflicts with existing node %s", mac, n.Name)
				}
				return n, nil
			}
			return nil, fmt.Errorf("port %s exists but failed to find linked node %s by ID: %w", mac, all[0].NodeUUID, err)
		}
	}
	return nil, nil
}

// Register is ironicProvisioner.Register (credentialsChanged,
// restartOnFailure as the controller passes them). It returns the node's
// UUID once known.
func (p *provisioner) Register(ctx context.Context, credentialsChanged, restartOnFailure bool) (result, string, error) {
	acc, err := newAccess(p.host.BMCAddress)
	if err != nil {
		r, err := operationFailed(err.Error())
		return r, "", err
	}
	if p.host.DisablePowerOff && !p.features.HasDisablePowerOff() {
		r, err := operationFailed("current ironic version does not support DisablePowerOff, refusing to manage node")
		return r, "", err
	}
	n, err := p.findExistingHost(ctx)
	if err != nil {
		r, err := transientError(fmt.Errorf("failed to find existing host: %w", err))
		return r, "", err
	}
	driverInfo := acc.DriverInfo(p.host.Username, p.host.Password)
	u := &updater{}
	var provID string
	if n == nil {
		var retry bool
		n, retry, err = p.enrollNode(ctx, acc, driverInfo)
		if err != nil {
			r, err := transientError(err)
			return r, "", err
		}
		if retry {
			r, err := retryAfterDelay(shortRetryDelay)
			return r, "", err
		}
		provID = n.UUID
	} else {
		provID = n.UUID
		u.SetTopLevelOpt("name", p.nodeName(), n.Name)
		if credentialsChanged || !bmcAddressMatches(n, driverInfo) {
			u.SetTopLevelOpt("driver_info", driverInfo, n.DriverInfo)
		}
		u.SetTopLevelOpt("disable_power_off", p.host.DisablePowerOff, n.DisablePowerOff)
		if arch := p.cpuArch(); arch != "" {
			u.SetPropertiesOpts(map[string]any{"cpu_arch": arch}, n)
		}
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Enroll, nodes.Manageable, nodes.Available, nodes.Active,
		nodes.AdoptFail, nodes.InspectFail, nodes.CleanFail, nodes.DeployFail, nodes.ServiceFail, nodes.Error:
		if err := p.createPortsForNode(ctx, n); err != nil {
			r, err := transientError(err)
			return r, provID, err
		}
	}
	n, ok, r, err := p.tryUpdateNode(ctx, n, u)
	if !ok {
		return r, provID, err
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Enroll:
		if n.LastError != "" && !(credentialsChanged || restartOnFailure) {
			r, err := operationFailed(n.LastError)
			return r, provID, err
		}
		if n.TargetProvisionState == string(nodes.TargetManage) {
			r, err := operationContinuing(shortRetryDelay)
			return r, provID, err
		}
		r, err := p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
		return r, provID, err
	case nodes.Verifying:
		r, err := operationContinuing(shortRetryDelay)
		return r, provID, err
	case nodes.CleanWait, nodes.Cleaning, nodes.DeployWait, nodes.Deploying, nodes.Inspecting:
		r, err := operationComplete()
		return r, provID, err
	}
	r, err = p.configureNode(ctx, n, acc)
	return r, provID, err
}

// bmcAddressMatches is register.go's: the first "*_address" key of each.
func bmcAddressMatches(n *nodes.Node, driverInfo map[string]any) bool {
	first := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if strings.HasSuffix(k, "_address") {
				out[k] = v
				break
			}
		}
		return out
	}
	a, b := first(driverInfo), first(n.DriverInfo)
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// inspectInterfaceForMode is register.go's.
func inspectInterfaceForMode(mode string, acc access) string {
	if mode == "fast" && acc.InspectInterface() != "" {
		return acc.InspectInterface()
	}
	return "agent"
}

// enrollNode is ironicProvisioner.enrollNode: BMO's CreateOpts.
func (p *provisioner) enrollNode(ctx context.Context, acc access, driverInfo map[string]any) (*nodes.Node, bool, error) {
	disablePowerOff := p.host.DisablePowerOff
	opts := nodes.CreateOpts{
		Driver:              acc.Driver(),
		BIOSInterface:       acc.BIOSInterface(),
		BootInterface:       acc.BootInterface(),
		Name:                p.nodeName(),
		DriverInfo:          driverInfo,
		FirmwareInterface:   acc.FirmwareInterface(),
		DeployInterface:     "", // deployInterface(): not a live ISO, no custom deploy
		InspectInterface:    inspectInterfaceForMode(p.host.InspectionMode, acc),
		ManagementInterface: acc.ManagementInterface(),
		PowerInterface:      acc.PowerInterface(),
		RAIDInterface:       acc.RAIDInterface(),
		VendorInterface:     acc.VendorInterface(),
		DisablePowerOff:     &disablePowerOff,
		Properties: map[string]any{
			"capabilities": buildCapabilitiesValue(nil, p.host.BootMode),
			"cpu_arch":     p.cpuArch(),
		},
	}
	n, err := nodes.Create(ctx, p.c, opts).Extract()
	switch {
	case err == nil:
		return n, false, nil
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		return nil, true, nil
	}
	return nil, true, fmt.Errorf("failed to register host in ironic: %w", err)
}

// createPortsForNode is ironicProvisioner.createPortsForNode: ports for
// the inspected NICs (HardwareData) and the boot MAC that are missing.
func (p *provisioner) createPortsForNode(ctx context.Context, n *nodes.Node) error {
	mac := p.host.BootMACAddress
	var nics []struct {
		mac string
		pxe bool
	}
	if p.hardwareData != nil {
		for _, nic := range p.hardwareData.NIC {
			nics = append(nics, struct {
				mac string
				pxe bool
			}{nic.MAC, nic.PXE})
		}
	}
	if mac == "" && len(nics) == 0 {
		return nil
	}
	existing, err := p.getPorts(ctx, n.UUID, "")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, port := range existing {
		have[port.Address] = true
	}
	create := map[string]bool{}
	for _, nic := range nics {
		if nic.mac != "" && !have[nic.mac] {
			create[nic.mac] = nic.pxe
		}
	}
	if mac != "" && !have[mac] {
		create[mac] = true
	}
	for m, pxe := range create {
		if err := p.createNodePort(ctx, n.UUID, m, pxe); err != nil {
			return err
		}
	}
	return nil
}

// createNodePort is ironicProvisioner.createNodePort.
func (p *provisioner) createNodePort(ctx context.Context, uuid, mac string, pxe bool) error {
	all, err := p.getPorts(ctx, "", mac)
	if err != nil {
		return err
	}
	for _, port := range all {
		if port.NodeUUID != uuid {
			return fmt.Errorf("port belongs to another node %s, MAC: %s can't register for node %s", port.NodeUUID, mac, uuid)
		}
	}
	if len(all) > 0 {
		return nil
	}
	if _, err := ports.Create(ctx, p.c, ports.CreateOpts{NodeUUID: uuid, Address: mac, PXEEnabled: &pxe}).Extract(); err != nil {
		return fmt.Errorf("failed to create ironic port for node %s, MAC: %s: %w", uuid, mac, err)
	}
	return nil
}

// setDeployImage is ironic.go's without a PreprovisioningImage: the ISO
// for virtual media BMCs when configured, else kernel and ramdisk.
func setDeployImage(cfg ironicConfig, acc access) map[string]any {
	info := map[string]any{"deploy_kernel": nil, "deploy_ramdisk": nil, "deploy_iso": nil, "kernel_append_params": nil}
	if acc.SupportsISOPreprovisioningImage() && cfg.deployISOURL != "" {
		info["deploy_iso"] = cfg.deployISOURL
		return info
	}
	if cfg.deployKernelURL != "" && cfg.deployRamdiskURL != "" {
		info["deploy_kernel"], info["deploy_ramdisk"] = cfg.deployKernelURL, cfg.deployRamdiskURL
		return info
	}
	return nil
}

// configureNode is ironicProvisioner.configureNode.
func (p *provisioner) configureNode(ctx context.Context, n *nodes.Node, acc access) (result, error) {
	u := &updater{}
	u.SetDriverInfoOpts(setDeployImage(p.config, acc), n)
	u.SetTopLevelOpt("automated_clean", p.host.AutomatedCleaningMode != "disabled", n.AutomatedClean)
	u.SetPropertiesOpts(map[string]any{"capabilities": buildCapabilitiesValue(n, p.host.BootMode), "cpu_arch": p.cpuArch()}, n)
	if _, ok, r, err := p.tryUpdateNode(ctx, n, u); !ok {
		return r, err
	}
	return operationComplete()
}

// tryUpdateNode is ironicProvisioner.tryUpdateNode.
func (p *provisioner) tryUpdateNode(ctx context.Context, n *nodes.Node, u *updater) (*nodes.Node, bool, result, error) {
	if len(u.Updates) == 0 {
		return n, true, result{}, nil
	}
	updated, err := nodes.Update(ctx, p.c, n.UUID, u.Updates).Extract()
	switch {
	case err == nil:
		p.cachedNode = updated
		return updated, true, result{}, nil
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		r, err := retryAfterDelay(shortRetryDelay)
		return nil, false, r, err
	}
	r, err := transientError(fmt.Errorf("failed to update host settings in ironic: %w", err))
	return nil, false, r, err
}

// tryChangeNodeProvisionState is ironic.go's.
func (p *provisioner) tryChangeNodeProvisionState(ctx context.Context, n *nodes.Node, opts nodes.ProvisionStateOpts) (bool, result, error) {
	if n.Fault != "" {
		r, err := retryAfterDelay(longRetryDelay)
		return false, r, err
	}
	if n.Maintenance {
		r, err := p.setMaintenanceFlag(ctx, n, false, "")
		return false, r, err
	}
	res := nodes.ChangeProvisionState(ctx, p.c, n.UUID, opts)
	switch {
	case res.Err == nil:
	case gophercloud.ResponseCodeIs(res.Err, http.StatusConflict):
		r, err := retryAfterDelay(shortRetryDelay)
		return false, r, err
	default:
		r, err := transientError(fmt.Errorf("failed to change provisioning state to %q: %w", opts.Target, res.Err))
		return false, r, err
	}
	p.cachedNode = nil
	r, err := operationContinuing(shortRetryDelay)
	return true, r, err
}

func (p *provisioner) changeNodeProvisionState(ctx context.Context, n *nodes.Node, opts nodes.ProvisionStateOpts) (result, error) {
	_, r, err := p.tryChangeNodeProvisionState(ctx, n, opts)
	return r, err
}

// setMaintenanceFlag is ironic.go's.
func (p *provisioner) setMaintenanceFlag(ctx context.Context, n *nodes.Node, value bool, reason string) (result, error) {
	var err error
	if value {
		err = nodes.SetMaintenance(ctx, p.c, n.UUID, nodes.MaintenanceOpts{Reason: reason}).ExtractErr()
	} else {
		err = nodes.UnsetMaintenance(ctx, p.c, n.UUID).ExtractErr()
	}
	switch {
	case err == nil:
		p.cachedNode = nil
		return operationContinuing(0)
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		return retryAfterDelay(shortRetryDelay)
	}
	return transientError(fmt.Errorf("failed to set host maintenance flag to %v (%w)", value, err))
}

// startInspection is inspecthardware.go's.
func (p *provisioner) startInspection(ctx context.Context, n *nodes.Node) (result, bool, error) {
	acc, err := newAccess(p.host.BMCAddress)
	if err != nil {
		r, err := operationFailed(err.Error())
		return r, false, err
	}
	u := (&updater{}).SetPropertiesOpts(map[string]any{"capabilities": buildCapabilitiesValue(n, p.host.BootMode), "cpu_arch": p.cpuArch()}, n)
	u.SetTopLevelOpt("inspect_interface", inspectInterfaceForMode(p.host.InspectionMode, acc), n.InspectInterface)
	_, started, r, err := p.tryUpdateNode(ctx, n, u)
	if !started {
		return r, started, err
	}
	started, r, err = p.tryChangeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetInspect})
	return r, started, err
}

// InspectHardware is inspecthardware.go's (forceReboot false). details is
// set when the inventory was read.
func (p *provisioner) InspectHardware(ctx context.Context, restartOnFailure, refresh bool) (result, bool, *hardwareDetails, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		r, err := transientError(err)
		return r, false, nil, err
	}
	if n.ProvisionState == string(nodes.InspectFail) && strings.Contains(n.LastError, "aborted") {
		refresh, restartOnFailure = true, true
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Available:
		r, err := p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
		return r, false, nil, err
	case nodes.InspectWait, nodes.Inspecting:
		delay := longRetryDelay
		if p.host.InspectionMode == "fast" {
			delay = shortRetryDelay
		}
		r, err := operationContinuing(delay)
		return r, false, nil, err
	case nodes.InspectFail:
		if !restartOnFailure {
			msg := n.LastError
			if msg == "" {
				msg = "Inspection failed"
			}
			r, err := operationFailed(msg)
			return r, false, nil, err
		}
		refresh = true
		fallthrough
	case nodes.Manageable:
		if refresh {
			r, started, err := p.startInspection(ctx, n)
			return r, started, nil, err
		}
	default:
		r, err := transientError(fmt.Errorf("unexpected provision state %s", n.ProvisionState))
		return r, false, nil, err
	}
	data, err := nodes.GetInventory(ctx, p.c, n.UUID).Extract()
	if err != nil {
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			r, started, err := p.startInspection(ctx, n)
			return r, started, nil, err
		}
		r, err := transientError(fmt.Errorf("failed to retrieve hardware introspection data: %w", err))
		return r, false, nil, err
	}
	d := getHardwareDetails(data)
	r, err := operationComplete()
	return r, false, &d, err
}

// biosSetting is metal3api's settings map entry with its schema
// (GetFirmwareSettings with includeSchema).
type biosSetting struct {
	Value           string
	AttributeType   string
	AllowableValues []string
	ReadOnly        *bool
}

// GetFirmwareSettings is ironic.go's: GET /v1/nodes/{id}/bios, with
// ?detail=True when the schema is wanted.
func (p *provisioner) GetFirmwareSettings(ctx context.Context, includeSchema bool) (map[string]biosSetting, error) {
	if p.nodeID == "" {
		return nil, fmt.Errorf("could not get BIOS settings: %w", errNeedsRegistration)
	}
	var list []nodes.BIOSSetting
	var err error
	if includeSchema {
		list, err = nodes.ListBIOSSettings(ctx, p.c, p.nodeID, nodes.ListBIOSSettingsOpts{Detail: true}).Extract()
	} else {
		list, err = nodes.ListBIOSSettings(ctx, p.c, p.nodeID, nil).Extract()
	}
	if err != nil {
		return nil, fmt.Errorf("could not get BIOS settings for node %s: %w", p.nodeID, err)
	}
	out := map[string]biosSetting{}
	for _, s := range list {
		out[s.Name] = biosSetting{Value: s.Value, AttributeType: s.AttributeType, AllowableValues: s.AllowableValues, ReadOnly: s.ReadOnly}
	}
	return out, nil
}

// firmwareComponent is metal3api.FirmwareComponentStatus.
type firmwareComponent struct {
	Component, InitialVersion, CurrentVersion, LastVersionFlashed string
	Updated                                                       bool
}

// GetFirmwareComponents is ironic.go's: GET /v1/nodes/{id}/firmware, bios,
// bmc and nic:* kept.
func (p *provisioner) GetFirmwareComponents(ctx context.Context) ([]firmwareComponent, error) {
	if p.nodeID == "" {
		return nil, fmt.Errorf("could not retrieve firmware components: %w", errNeedsRegistration)
	}
	list, err := nodes.ListFirmware(ctx, p.c, p.nodeID).Extract()
	if err != nil {
		return nil, fmt.Errorf("could not get firmware components for node %s: %w", p.nodeID, err)
	}
	var out []firmwareComponent
	for _, c := range list {
		if c.Component != "bios" && c.Component != "bmc" && !strings.HasPrefix(c.Component, "nic:") {
			continue
		}
		out = append(out, firmwareComponent{Component: c.Component, InitialVersion: c.InitialVersion,
			CurrentVersion: c.CurrentVersion, LastVersionFlashed: c.LastVersionFlashed, Updated: c.UpdatedAt != nil})
	}
	return out, nil
}
