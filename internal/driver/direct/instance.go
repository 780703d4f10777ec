package direct

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/disk"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// What a deploy asks of the disk beyond the image, read from instance_info
// and properties as Ironic reads them (deploy_utils.parse_instance_info,
// get_root_device_for_deploy, images.is_whole_disk_image) and checked
// before the node boots the agent. The agent receives the results under
// IPA's image_info names (ipa.Param*).

// defaultEphemeralFormat is Ironic's [pxe]default_ephemeral_format.
const defaultEphemeralFormat = "ext4"

// deployParams validates the root device hints, image_disk_format, the
// partition image's layout and the config drive, and returns the agent's
// parameters for them.
func deployParams(n *model.Node) (map[string]any, error) {
	p := map[string]any{}
	if hints, err := rootDeviceHints(n); err != nil {
		return nil, err
	} else if hints != nil {
		p[ipa.ParamRootDevice] = hints
	}
	switch f := strings.ToLower(infoString(n, "image_disk_format")); f {
	case "":
	case "raw", "qcow2":
		p[ipa.ParamDiskFormat] = f
	default:
		return nil, fmt.Errorf("instance_info.image_disk_format %q is not supported by the agent (raw or qcow2)", f)
	}
	bootMode := requestedBootMode(n)
	p[ipa.ParamBootMode] = bootMode
	label, err := capability(n, "disk_label")
	if err != nil {
		return nil, err
	}
	switch label {
	case "", disk.LabelGPT, disk.LabelMSDOS:
	default:
		return nil, fmt.Errorf("invalid disk_label capability %q: gpt or msdos", label)
	}
	if label == "" && bootMode == "uefi" {
		label = disk.LabelGPT // Ironic's get_disk_label
	}
	if label != "" {
		p[ipa.ParamDiskLabel] = label
	}
	if isPartitionImage(n) {
		if err := partitionParams(n, p); err != nil {
			return nil, err
		}
	} else {
		p[ipa.ParamImageType] = ipa.ImageWholeDisk
	}
	switch cd := n.InstanceInfo["configdrive"].(type) {
	case nil:
	case string:
		if cd != "" {
			p[ipa.ParamConfigDrive] = cd
		}
	case map[string]any:
		// Deploy builds it (storeConfigDrive); here it is only validated.
		if _, err := configDriveOf(cd); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("instance_info.configdrive must be a JSON object, a URL or a gzip+base64 string")
	}
	return p, nil
}

// rootDeviceHints are instance_info.root_device, else
// properties.root_device, validated; nil when there are none.
func rootDeviceHints(n *model.Node) (map[string]any, error) {
	raw, source := n.InstanceInfo["root_device"], "instance_info"
	if isEmpty(raw) {
		raw, source = n.Properties["root_device"], "properties"
	}
	if isEmpty(raw) {
		return nil, nil
	}
	hints, ok := raw.(map[string]any)
	err := errors.New("root device hints must be a JSON object")
	if ok {
		_, err = disk.ParseHints(hints)
	}
	if err != nil {
		return nil, fmt.Errorf("Failed to validate the root device hints %s (from the node's %s) for node %s: %w",
			pyrepr.Repr(raw), source, n.UUID, err)
	}
	return hints, nil
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

// isPartitionImage is Ironic's is_whole_disk_image negated for images that
// are not Glance's: image_type says, else a kernel or ramdisk in
// instance_info makes it a partition image.
func isPartitionImage(n *model.Node) bool {
	if t := infoString(n, "image_type"); t != "" {
		return t == ipa.ImagePartition
	}
	return infoString(n, "kernel") != "" || infoString(n, "ramdisk") != ""
}

// partitionParams validates a partition image's deploy: the boot option
// (local, Ironic's default: the agent installs GRUB 2; or netboot) and a
// layout of integers.
func partitionParams(n *model.Node, p map[string]any) error {
	opt, err := capability(n, "boot_option")
	if err != nil {
		return err
	}
	switch opt {
	case "":
		opt = "local"
	case "local", "netboot":
	default:
		return fmt.Errorf("Invalid boot_option %s, valid options are: local, netboot", pyrepr.Repr(opt))
	}
	var missing []string
	for _, k := range []string{"kernel", "ramdisk", "root_gb"} {
		if isEmpty(n.InstanceInfo[k]) {
			missing = append(missing, "instance_info."+k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("Some parameters were missing in node's instance_info. Missing are: %s", pyrepr.Repr(missing))
	}
	sizes := map[string]int64{}
	for _, k := range []string{"root_gb", "swap_mb", "ephemeral_gb"} {
		v, err := layoutInt(n.InstanceInfo[k])
		if err != nil {
			return fmt.Errorf("Invalid parameter %s: %s is not an integer value.", k, pyrepr.Str(n.InstanceInfo[k]))
		}
		sizes[k] = v
	}
	if sizes["root_gb"] <= 0 {
		return fmt.Errorf("Invalid parameter root_gb: the root partition size must be positive, got %d", sizes["root_gb"])
	}
	p[ipa.ParamImageType] = ipa.ImagePartition
	p[ipa.ParamBootOption] = opt
	p[ipa.ParamRootMB] = 1024 * sizes["root_gb"]
	p[ipa.ParamSwapMB] = sizes["swap_mb"]
	p[ipa.ParamEphemeralMB] = 1024 * sizes["ephemeral_gb"]
	if sizes["ephemeral_gb"] > 0 {
		f := infoString(n, "ephemeral_format")
		if f == "" {
			f = defaultEphemeralFormat
		}
		if !slices.Contains(disk.EphemeralFormats, f) {
			return fmt.Errorf("Invalid parameter ephemeral_format: %q is not a filesystem the agent makes (%s)", f, strings.Join(disk.EphemeralFormats, ", "))
		}
		p[ipa.ParamEphemeralFormat] = f
	}
	return nil
}

// layoutInt is Python's int() of a layout parameter (absent: 0).
func layoutInt(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		if x == float64(int64(x)) && x >= 0 {
			return int64(x), nil
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil && i >= 0 {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%v is not a non-negative integer", v)
}

func infoString(n *model.Node, k string) string {
	s, _ := n.InstanceInfo[k].(string)
	return s
}

// capability is instance_info.capabilities[name] (an object, or its JSON
// text), else the "name:value" entry of properties.capabilities.
func capability(n *model.Node, name string) (string, error) {
	switch c := n.InstanceInfo["capabilities"].(type) {
	case map[string]any:
		if v, ok := c[name].(string); ok {
			return v, nil
		}
	case string:
		if c != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(c), &m); err != nil {
				return "", fmt.Errorf("instance_info.capabilities is not a JSON object: %w", err)
			}
			if v, ok := m[name].(string); ok {
				return v, nil
			}
		}
	}
	caps, _ := n.Properties["capabilities"].(string)
	for _, kv := range strings.Split(caps, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), ":"); ok && k == name {
			return v, nil
		}
	}
	return "", nil
}

// requestedBootMode is instance_info.deploy_boot_mode, else the boot_mode
// capability, else uefi (Ironic's [deploy]default_boot_mode).
func requestedBootMode(n *model.Node) string {
	if m := infoString(n, "deploy_boot_mode"); m == "uefi" || m == "bios" {
		return m
	}
	if m, _ := capability(n, "boot_mode"); m == "uefi" || m == "bios" {
		return m
	}
	return "uefi"
}

// configDriveOf checks a configdrive object (Ironic's schema: meta_data,
// network_data, user_data, vendor_data).
func configDriveOf(m map[string]any) (disk.ConfigDrive, error) {
	var cd disk.ConfigDrive
	for k, v := range m {
		switch k {
		case "meta_data", "network_data", "vendor_data":
			if _, ok := v.(map[string]any); !ok && v != nil {
				return cd, fmt.Errorf("Invalid configdrive format: %s is not valid for %s", pyrepr.Repr(v), k)
			}
		case "user_data":
		default:
			return cd, fmt.Errorf("Invalid configdrive format: Additional properties are not allowed (%s was unexpected)", pyrepr.Repr(k))
		}
	}
	cd.MetaData, _ = m["meta_data"].(map[string]any)
	cd.NetworkData, _ = m["network_data"].(map[string]any)
	cd.VendorData, _ = m["vendor_data"].(map[string]any)
	cd.UserData = m["user_data"]
	return cd, nil
}

// storeConfigDrive replaces a configdrive object in instance_info with the
// gzip+base64 config-2 image built from it, as Ironic's conductor does
// (configdrive_utils.build_configdrive: meta_data's uuid and name default
// to the node's).
func storeConfigDrive(n *model.Node) error {
	m, ok := n.InstanceInfo["configdrive"].(map[string]any)
	if !ok {
		return nil
	}
	cd, err := configDriveOf(m)
	if err != nil {
		return err
	}
	meta := map[string]any{}
	for k, v := range cd.MetaData {
		meta[k] = v
	}
	if _, ok := meta["uuid"]; !ok {
		meta["uuid"] = n.UUID
	}
	if _, ok := meta["name"]; !ok && n.Name != "" {
		meta["name"] = n.Name
	}
	cd.MetaData = meta
	iso, err := disk.BuildConfigDrive(cd, "")
	if err != nil {
		return fmt.Errorf("building the config drive: %w", err)
	}
	n.InstanceInfo["configdrive"] = disk.EncodeConfigDrive(iso)
	return nil
}
