package bmo_test

// The rest of ironicProvisioner: Prepare (raid.go, manual cleaning),
// Provision, Service (servicing.go), Deprovision, Delete, BMC event
// subscriptions.

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// prepareData is provisioner.PrepareData: a hardware RAID target (no
// actual configuration recorded yet) and BIOS/firmware changes.
type prepareData struct {
	TargetRAID             []hardwareRAIDVolume
	ActualFirmwareSettings map[string]string
	TargetFirmwareSettings map[string]string
	TargetFirmwareUpdates  []map[string]string
}

// buildTargetHardwareRAIDCfg is raid.go's.
func buildTargetHardwareRAIDCfg(volumes []hardwareRAIDVolume) ([]nodes.LogicalDisk, error) {
	var disks []nodes.LogicalDisk
	names := map[string]int{}
	for i, v := range volumes {
		if v.Name != "" {
			if j, ok := names[v.Name]; ok {
				return nil, fmt.Errorf("the names(%s) of volume[%d] and volume[%d] are repeated", v.Name, i, j)
			}
			names[v.Name] = i
		}
		if len(v.PhysicalDisks) != 0 && v.Controller == "" {
			return nil, fmt.Errorf("'controller' must be specified if 'physicalDisks' are used")
		}
		physical := make([]any, len(v.PhysicalDisks))
		for k, d := range v.PhysicalDisks {
			physical[k] = d
		}
		d := nodes.LogicalDisk{SizeGB: v.SizeGibibytes, RAIDLevel: nodes.RAIDLevel(v.Level), VolumeName: v.Name,
			Controller: v.Controller, PhysicalDisks: physical}
		if v.Rotational != nil {
			d.DiskType = nodes.SSD
			if *v.Rotational {
				d.DiskType = nodes.HDD
			}
		}
		if v.NumberOfPhysicalDisks != nil {
			d.NumberOfPhysicalDisks = *v.NumberOfPhysicalDisks
		}
		disks = append(disks, d)
	}
	return disks, nil
}

// setTargetRAIDCfg is raid.go's for hardware RAID on raid interface
// redfish: PATCH raid_interface if it differs, PUT .../states/raid.
func (p *provisioner) setTargetRAIDCfg(ctx context.Context, n *nodes.Node, data prepareData) (result, error) {
	disks, err := buildTargetHardwareRAIDCfg(data.TargetRAID)
	if err != nil {
		return operationFailed(err.Error())
	}
	if len(disks) == 0 {
		return result{}, nil
	}
	if p.host.RootDeviceHints == nil {
		t := true
		disks[0].IsRootVolume = &t
	}
	acc, _ := newAccess(p.host.BMCAddress)
	u := (&updater{}).SetTopLevelOpt("raid_interface", acc.RAIDInterface(), n.RAIDInterface)
	n, ok, r, err := p.tryUpdateNode(ctx, n, u)
	if !ok {
		return r, err
	}
	if err := nodes.SetRAIDConfig(ctx, p.c, n.UUID, nodes.RAIDConfigOpts{LogicalDisks: disks}).ExtractErr(); err != nil {
		return transientError(err)
	}
	p.cachedNode = nil
	return result{}, nil
}

// firmwareSettingsSteps is getNewFirmwareSettings + buildFirmwareSettings
// (string values) and getFirmwareComponentsUpdates: the args of
// bios.apply_configuration and firmware.update.
func newFirmwareSettings(actual, target map[string]string) []map[string]any {
	if actual == nil {
		return nil
	}
	var out []map[string]any
	for k, v := range target {
		if actual[k] != v {
			out = append(out, map[string]any{"name": k, "value": v})
		}
	}
	return out
}

// buildManualCleaningSteps is ironic.go's for hardware RAID.
func (p *provisioner) buildManualCleaningSteps(data prepareData) []nodes.CleanStep {
	var steps []nodes.CleanStep
	if len(data.TargetRAID) != 0 {
		// BuildRAIDCleanSteps: delete before create, so that only the
		// wanted volumes remain.
		steps = append(steps, nodes.CleanStep{Interface: nodes.InterfaceRAID, Step: "delete_configuration"},
			nodes.CleanStep{Interface: nodes.InterfaceRAID, Step: "create_configuration"})
	}
	if s := newFirmwareSettings(data.ActualFirmwareSettings, data.TargetFirmwareSettings); len(s) != 0 {
		steps = append(steps, nodes.CleanStep{Interface: nodes.InterfaceBIOS, Step: "apply_configuration",
			Args: map[string]any{"settings": s}})
	}
	if len(data.TargetFirmwareUpdates) != 0 {
		steps = append(steps, nodes.CleanStep{Interface: nodes.InterfaceFirmware, Step: "update",
			Args: map[string]any{"settings": data.TargetFirmwareUpdates}})
	}
	return steps
}

// Prepare is ironicProvisioner.Prepare (manual cleaning).
func (p *provisioner) Prepare(ctx context.Context, data prepareData, unprepared, restartOnFailure bool) (result, bool, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		r, err := transientError(err)
		return r, false, err
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Available:
		if unprepared {
			if len(p.buildManualCleaningSteps(data)) != 0 {
				r, err := p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
				return r, false, err
			}
			r, err := operationComplete()
			return r, true, err
		}
		r, err := operationComplete()
		return r, false, err
	case nodes.Manageable:
		if unprepared {
			// startManualCleaning
			r, err := p.setTargetRAIDCfg(ctx, n, data)
			if r.Dirty || r.ErrorMessage != "" || err != nil {
				return r, false, err
			}
			if steps := p.buildManualCleaningSteps(data); len(steps) != 0 {
				started, r, err := p.tryChangeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetClean, CleanSteps: steps})
				return r, started, err
			}
			r, err = operationComplete()
			return r, true, err
		}
		r, err := operationComplete()
		return r, false, err
	case nodes.CleanFail:
		if !restartOnFailure {
			r, err := operationFailed(n.LastError)
			return r, false, err
		}
		if n.Maintenance {
			r, err := p.setMaintenanceFlag(ctx, n, false, "")
			return r, false, err
		}
		r, err := p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
		return r, false, err
	case nodes.Cleaning, nodes.CleanWait:
		r, err := operationContinuing(longRetryDelay)
		return r, false, err
	}
	r, err := transientError(fmt.Errorf("have unexpected ironic node state %s", n.ProvisionState))
	return r, false, err
}

// provisionData is provisioner.ProvisionData.
type provisionData struct {
	Image    image
	UserData string
	// CustomDeploy is spec.customDeploy.method ("": none).
	CustomDeploy string
}

// customDeployPriority is ironic.go's.
const customDeployPriority = 80

// ironicHasSameImage is ironic.go's for non-OCI images.
func ironicHasSameImage(n *nodes.Node, img image) bool {
	if img.isLiveISO() {
		return n.InstanceInfo["boot_iso"] == img.URL
	}
	sum, typ, _ := img.getChecksum()
	if typ == "" {
		return n.InstanceInfo["image_source"] == img.URL && n.InstanceInfo["image_checksum"] == sum &&
			n.InstanceInfo["image_os_hash_algo"] == nil && n.InstanceInfo["image_os_hash_value"] == nil
	}
	return n.InstanceInfo["image_source"] == img.URL && n.InstanceInfo["image_checksum"] == nil &&
		n.InstanceInfo["image_os_hash_algo"] == typ && n.InstanceInfo["image_os_hash_value"] == sum
}

// getInstanceUpdateOpts is ironic.go's: custom deploy
// (setCustomDeployUpdateOptsForNode), live ISO
// (setLiveIsoUpdateOptsForNode), else setDirectDeployUpdateOptsForNode.
func (p *provisioner) getInstanceUpdateOpts(n *nodes.Node, data provisionData) *updater {
	u := &updater{}
	u.SetTopLevelOpt("instance_uuid", p.host.UID, n.InstanceUUID)
	u.SetInstanceInfoOpts(map[string]any{
		"capabilities": buildInstanceInfoCapabilities(p.host.BootMode),
		"root_device":  makeHintMap(p.host.RootDeviceHints),
	}, n)
	switch {
	case data.CustomDeploy != "":
		p.setCustomDeployUpdateOpts(u, n, data.Image)
		return u
	case data.Image.isLiveISO():
		u.SetInstanceInfoOpts(map[string]any{"boot_iso": data.Image.URL, "image_source": nil, "image_os_hash_value": nil,
			"image_os_hash_algo": nil, "image_checksum": nil}, n)
		u.SetTopLevelOpt("deploy_interface", "ramdisk", n.DeployInterface)
		u.SetDriverInfoOpts(map[string]any{"force_persistent_boot_device": "Default"}, n)
		return u
	}
	sum, typ, err := data.Image.getChecksum()
	if err != nil {
		return u
	}
	opts := map[string]any{"boot_iso": nil, "image_source": data.Image.URL, "image_disk_format": data.Image.DiskFormat,
		"image_pull_secret": nil}
	if typ == "" {
		opts["image_checksum"], opts["image_os_hash_algo"], opts["image_os_hash_value"] = sum, nil, nil
	} else {
		opts["image_checksum"], opts["image_os_hash_algo"], opts["image_os_hash_value"] = nil, typ, sum
	}
	u.SetInstanceInfoOpts(opts, n)
	if n.DeployInterface == "ramdisk" || n.DeployInterface == "custom-agent" {
		u.SetTopLevelOpt("deploy_interface", nil, n.DeployInterface)
	}
	u.SetDriverInfoOpts(map[string]any{"force_persistent_boot_device": "Default"}, n)
	return u
}

// setCustomDeployUpdateOpts is ironic.go's setCustomDeployUpdateOptsForNode
// (no image pull secret).
func (p *provisioner) setCustomDeployUpdateOpts(u *updater, n *nodes.Node, img image) {
	opts := map[string]any{"boot_iso": nil, "image_checksum": nil, "image_source": nil, "image_os_hash_algo": nil,
		"image_os_hash_value": nil, "image_disk_format": nil, "image_pull_secret": nil}
	if img.URL != "" {
		opts["image_source"], opts["image_disk_format"] = img.URL, img.DiskFormat
		if sum, typ, err := img.getChecksum(); err == nil {
			opts["image_os_hash_algo"], opts["image_os_hash_value"] = typ, sum
		}
	}
	u.SetInstanceInfoOpts(opts, n)
	u.SetTopLevelOpt("deploy_interface", "custom-agent", n.DeployInterface)
}

// getCustomDeploySteps is ironic.go's.
func getCustomDeploySteps(method string) []nodes.DeployStep {
	if method == "" {
		return nil
	}
	return []nodes.DeployStep{{Interface: nodes.InterfaceDeploy, Step: method, Args: map[string]any{}, Priority: customDeployPriority}}
}

// validateNode is ironic.go's: boot and deploy must validate.
func (p *provisioner) validateNode(ctx context.Context, n *nodes.Node) (string, error) {
	v, err := nodes.Validate(ctx, p.c, n.UUID).Extract()
	if err != nil {
		return "", err
	}
	var errs []string
	if !v.Boot.Result {
		errs = append(errs, v.Boot.Reason)
	}
	if !v.Deploy.Result {
		errs = append(errs, v.Deploy.Reason)
	}
	if len(errs) > 0 {
		return "host validation error: " + strings.Join(errs, "; "), nil
	}
	return "", nil
}

// setUpForProvisioning is ironic.go's.
func (p *provisioner) setUpForProvisioning(ctx context.Context, n *nodes.Node, data provisionData) (result, error) {
	n, ok, r, err := p.tryUpdateNode(ctx, n, p.getInstanceUpdateOpts(n, data))
	if !ok {
		return r, err
	}
	msg, err := p.validateNode(ctx, n)
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		return retryAfterDelay(shortRetryDelay)
	case err != nil:
		return transientError(fmt.Errorf("failed to validate host during registration: %w", err))
	case msg != "":
		return operationFailed(msg)
	}
	return r, nil
}

// getConfigDrive is ironic.go's: none for a live ISO; else user data, no
// network data, BMO's meta data.
func (p *provisioner) getConfigDrive(data provisionData) nodes.ConfigDrive {
	var cd nodes.ConfigDrive
	if data.Image.isLiveISO() {
		return cd
	}
	if data.UserData != "" {
		cd.UserData = data.UserData
	}
	cd.MetaData = map[string]any{
		"uuid":             p.host.UID,
		"metal3-namespace": p.host.Namespace,
		"metal3-name":      p.host.Name,
		"local-hostname":   p.host.Name,
		"local_hostname":   p.host.Name,
		"name":             p.host.Name,
	}
	return cd
}

// Provision is ironicProvisioner.Provision (forceReboot false).
func (p *provisioner) Provision(ctx context.Context, data provisionData) (result, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		return transientError(err)
	}
	if _, _, err := data.Image.getChecksum(); data.Image.URL != "" && err != nil { // validateProvisionData
		return operationFailed("Validation failed: " + err.Error())
	}
	same := ironicHasSameImage(n, data.Image)
	deploy := func() (result, error) {
		if r, err := p.setUpForProvisioning(ctx, n, data); err != nil || r.Dirty || r.ErrorMessage != "" {
			return r, err
		}
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetActive,
			ConfigDrive: p.getConfigDrive(data), DeploySteps: getCustomDeploySteps(data.CustomDeploy)})
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.DeployFail:
		if same {
			if n.LastError == "" {
				return retryAfterDelay(0)
			}
			sum, _, _ := data.Image.getChecksum()
			return operationFailed(fmt.Sprintf("Image provisioning failed (url: %s, checksum: %s): %s", data.Image.URL, sum, n.LastError))
		}
		return deploy()
	case nodes.Manageable:
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetProvide})
	case nodes.CleanFail:
		if n.Maintenance {
			return p.setMaintenanceFlag(ctx, n, false, "")
		}
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
	case nodes.Available:
		return deploy()
	case nodes.Active:
		return operationComplete()
	}
	return operationContinuing(longRetryDelay)
}

// servicingData is provisioner.ServicingData.
type servicingData struct {
	ActualFirmwareSettings map[string]string
	TargetFirmwareSettings map[string]string
	TargetFirmwareUpdates  []map[string]string
	HasFirmwareSpec        bool
}

// buildServiceSteps is servicing.go's.
func buildServiceSteps(data servicingData) []nodes.ServiceStep {
	var steps []nodes.ServiceStep
	if s := newFirmwareSettings(data.ActualFirmwareSettings, data.TargetFirmwareSettings); len(s) != 0 {
		steps = append(steps, nodes.ServiceStep{Interface: nodes.InterfaceBIOS, Step: "apply_configuration",
			Args: map[string]any{"settings": s}})
	}
	if len(data.TargetFirmwareUpdates) != 0 {
		steps = append(steps, nodes.ServiceStep{Interface: nodes.InterfaceFirmware, Step: "update",
			Args: map[string]any{"settings": data.TargetFirmwareUpdates}})
	}
	return steps
}

// Service is servicing.go's Service.
func (p *provisioner) Service(ctx context.Context, data servicingData, unprepared, restartOnFailure bool) (result, bool, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		r, err := transientError(err)
		return r, false, err
	}
	abort := func() (result, bool, error) {
		started, r, err := p.tryChangeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetAbort})
		return r, started, err
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.ServiceFail:
		if !data.HasFirmwareSpec {
			return abort()
		}
		if !restartOnFailure {
			r, err := operationFailed(n.LastError)
			return r, false, err
		}
		if n.Maintenance {
			r, err := p.setMaintenanceFlag(ctx, n, false, "")
			return r, false, err
		}
		unprepared = true
		fallthrough
	case nodes.Active:
		if unprepared {
			if steps := buildServiceSteps(data); len(steps) != 0 {
				started, r, err := p.tryChangeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetService, ServiceSteps: steps})
				return r, started, err
			}
			r, err := operationComplete()
			return r, true, err
		}
		r, err := operationComplete()
		return r, false, err
	case nodes.Servicing:
		r, err := operationContinuing(longRetryDelay)
		return r, false, err
	case nodes.ServiceWait:
		if !data.HasFirmwareSpec {
			return abort()
		}
		r, err := operationContinuing(longRetryDelay)
		return r, false, err
	}
	r, err := transientError(fmt.Errorf("have unexpected ironic node state %s", n.ProvisionState))
	return r, false, err
}

// Deprovision is ironicProvisioner.Deprovision.
func (p *provisioner) Deprovision(ctx context.Context, restartOnFailure bool) (result, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		return transientError(err)
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Error:
		if !restartOnFailure {
			if n.LastError == "" {
				return operationFailed("Deprovisioning failed")
			}
			return operationFailed(n.LastError)
		}
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted})
	case nodes.CleanFail:
		if !restartOnFailure {
			return operationFailed("Cleaning failed: " + n.LastError)
		}
		if n.Maintenance {
			return p.setMaintenanceFlag(ctx, n, false, "")
		}
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
	case nodes.Manageable:
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetProvide})
	case nodes.Available:
		return operationComplete()
	case nodes.Deleting, nodes.Cleaning, nodes.CleanWait, nodes.Deploying:
		return operationContinuing(longRetryDelay)
	case nodes.Active, nodes.DeployFail, nodes.DeployWait:
		// syncAutomatedClean
		want := p.host.AutomatedCleaningMode != "disabled"
		if n.AutomatedClean == nil || *n.AutomatedClean != want {
			u := (&updater{}).SetTopLevelOpt("automated_clean", want, n.AutomatedClean)
			updated, err := nodes.Update(ctx, p.c, n.UUID, u.Updates).Extract()
			if err != nil {
				return transientError(fmt.Errorf("failed to update automatedClean: %w", err))
			}
			p.cachedNode = updated
			return operationContinuing(0)
		}
		return p.changeNodeProvisionState(ctx, n, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted})
	}
	return transientError(fmt.Errorf("unhandled ironic state %s", n.ProvisionState))
}

// Delete is ironicProvisioner.Delete with realDelete (force false).
func (p *provisioner) Delete(ctx context.Context) (result, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		if err == errNeedsRegistration {
			return operationComplete()
		}
		return transientError(err)
	}
	switch nodes.ProvisionState(n.ProvisionState) {
	case nodes.Verifying:
		return operationContinuing(shortRetryDelay)
	case nodes.Enroll:
	case nodes.Available, nodes.Manageable:
		if n.InstanceUUID != "" {
			u := (&updater{}).SetTopLevelOpt("instance_uuid", nil, n.InstanceUUID)
			if _, ok, r, err := p.tryUpdateNode(ctx, n, u); !ok {
				return r, err
			}
		}
	case nodes.Deploying, nodes.Cleaning, nodes.Inspecting, nodes.Servicing, nodes.Deleting,
		nodes.DeployWait, nodes.InspectWait, nodes.CleanWait, nodes.ServiceWait:
		return operationContinuing(longRetryDelay)
	default:
		if !n.Maintenance {
			return p.setMaintenanceFlag(ctx, n, true, "forcing deletion in baremetal-operator")
		}
	}
	err = nodes.Delete(ctx, p.c, n.UUID).ExtractErr()
	switch {
	case err == nil:
		p.cachedNode = nil
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		return retryAfterDelay(shortRetryDelay)
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
	default:
		return transientError(fmt.Errorf("failed to remove host: %w", err))
	}
	return operationContinuing(0)
}

// AddBMCEventSubscriptionForNode is ironic.go's: vendor passthru
// create_subscription; it returns the subscription's id.
func (p *provisioner) AddBMCEventSubscriptionForNode(ctx context.Context, destination, subContext string, headers []map[string]string) (string, error) {
	s, err := nodes.CreateSubscription(ctx, p.c, p.nodeID, nodes.CallVendorPassthruOpts{Method: "create_subscription"},
		nodes.CreateSubscriptionOpts{Destination: destination, Context: subContext, HttpHeaders: headers}).Extract()
	if err != nil {
		return "", err
	}
	return s.Id, nil
}

// RemoveBMCEventSubscriptionForNode is ironic.go's: delete_subscription.
func (p *provisioner) RemoveBMCEventSubscriptionForNode(ctx context.Context, id string) error {
	return nodes.DeleteSubscription(ctx, p.c, p.nodeID, nodes.CallVendorPassthruOpts{Method: "delete_subscription"},
		nodes.DeleteSubscriptionOpts{Id: id}).ExtractErr()
}

// sameSettings reports whether every target setting has its value in got.
func sameSettings(got map[string]biosSetting, target map[string]string) bool {
	for k, v := range target {
		if got[k].Value != v {
			return false
		}
	}
	return true
}
