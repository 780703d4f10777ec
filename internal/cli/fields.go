package cli

import (
	"strings"
)

// fieldLabels are python-ironicclient's display labels of API fields
// (ironicclient/v1/resource_fields.py), plus the fields it predates.
var fieldLabels = map[string]string{
	"address": "Address", "alive": "Alive", "allocation_uuid": "Allocation UUID",
	"automated_clean": "Automated Clean", "boot_mode": "Boot Mode",
	"chassis_uuid": "Chassis UUID", "clean_step": "Clean Step", "conductor": "Conductor",
	"conductor_group": "Conductor Group", "console_enabled": "Console Enabled",
	"created_at": "Created At", "deploy_step": "Deploy Step", "description": "Description",
	"driver": "Driver", "driver_info": "Driver Info", "driver_internal_info": "Driver Internal Info",
	"drivers": "Drivers", "extra": "Extra", "event": "Description of the event",
	"event_type": "Event Origin Type", "fault": "Fault", "hostname": "Hostname",
	"hosts": "Active host(s)", "inspection_finished_at": "Inspection Finished At",
	"inspection_started_at": "Inspection Started At", "instance_info": "Instance Info",
	"instance_uuid": "Instance UUID", "internal_info": "Internal Info", "last_error": "Last Error",
	"lessee": "Lessee", "maintenance": "Maintenance", "maintenance_reason": "Maintenance Reason",
	"name": "Name", "network_data": "Network Configuration", "node_uuid": "Node UUID",
	"owner": "Owner", "power_state": "Power State", "properties": "Properties",
	"protected": "Protected", "protected_reason": "Protected Reason",
	"provision_state": "Provisioning State", "provision_updated_at": "Provision Updated At",
	"raid_config": "Current RAID configuration", "reservation": "Reservation",
	"resource_class": "Resource Class", "retired": "Retired", "retired_reason": "Retired Reason",
	"secure_boot": "Secure Boot", "severity": "Severity", "target_power_state": "Target Power State",
	"target_provision_state": "Target Provision State", "target_raid_config": "Target RAID configuration",
	"traits": "Traits", "type": "Type", "updated_at": "Updated At", "user": "User", "uuid": "UUID",
	"local_link_connection": "Local Link Connection", "pxe_enabled": "PXE boot enabled",
	"portgroup_uuid": "Portgroup UUID", "bios_interface": "BIOS Interface",
	"boot_interface": "Boot Interface", "console_interface": "Console Interface",
	"deploy_interface": "Deploy Interface", "inspect_interface": "Inspect Interface",
	"management_interface": "Management Interface", "network_interface": "Network Interface",
	"power_interface": "Power Interface", "raid_interface": "RAID Interface",
	"rescue_interface": "Rescue Interface", "storage_interface": "Storage Interface",
	"vendor_interface": "Vendor Interface", "physical_network": "Physical Network",
	"is_smartnic": "Is Smart NIC port", "firmware_interface": "Firmware Interface",
	"shard": "Shard", "parent_node": "Parent Node", "service_step": "Service Step",
	"disable_power_off": "Disable Power Off", "portgroup": "Port Group",
	"connector_id": "Connector ID", "volume_id": "Volume ID", "volume_type": "Driver Volume Type",
	"boot_index": "Boot Index",
}

// labelAliases are other names -c accepts for a label: the operator
// guide of seed 003 writes "Provision State" where the client prints
// "Provisioning State".
var labelAliases = map[string][]string{
	"Provisioning State":     {"Provision State"},
	"Target Provision State": {"Target Provisioning State"},
}

// label is the display label of an API field.
func label(field string) string {
	if l, ok := fieldLabels[field]; ok {
		return l
	}
	words := strings.Split(field, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// labelled returns the labels of fields and the names -c accepts for each
// label (the field name and any alias).
func labelled(fields []string) ([]string, map[string][]string) {
	labels := make([]string, len(fields))
	alt := map[string][]string{}
	for i, f := range fields {
		l := label(f)
		labels[i] = l
		alt[l] = append([]string{f}, labelAliases[l]...)
	}
	return labels, alt
}

// fieldAlt maps each field of a show record to its label and aliases.
func fieldAlt(fields []string) map[string][]string {
	alt := map[string][]string{}
	for _, f := range fields {
		l := label(f)
		alt[f] = append([]string{l}, labelAliases[l]...)
	}
	return alt
}

// Field lists of python-ironicclient's resources.
var (
	nodeListFields   = []string{"uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance"}
	nodeDetailFields = []string{"allocation_uuid", "automated_clean", "bios_interface", "boot_interface",
		"boot_mode", "chassis_uuid", "clean_step", "conductor", "conductor_group", "console_enabled",
		"console_interface", "created_at", "raid_config", "deploy_interface", "deploy_step",
		"description", "driver", "driver_info", "driver_internal_info", "extra", "fault",
		"inspect_interface", "inspection_finished_at", "inspection_started_at", "instance_info",
		"instance_uuid", "last_error", "lessee", "maintenance", "maintenance_reason",
		"management_interface", "name", "network_data", "network_interface", "owner",
		"power_interface", "power_state", "properties", "protected", "protected_reason",
		"provision_updated_at", "provision_state", "raid_interface", "rescue_interface",
		"reservation", "resource_class", "retired", "retired_reason", "secure_boot",
		"storage_interface", "target_power_state", "target_provision_state", "target_raid_config",
		"traits", "uuid", "updated_at", "vendor_interface"}
	portListFields    = []string{"uuid", "address"}
	portDetailFields  = []string{"uuid", "address", "created_at", "extra", "node_uuid", "local_link_connection", "portgroup_uuid", "pxe_enabled", "physical_network", "updated_at", "internal_info", "is_smartnic"}
	conductorFields   = []string{"hostname", "conductor_group", "alive"}
	conductorDetail   = []string{"hostname", "conductor_group", "alive", "drivers", "created_at", "updated_at"}
	driverListFields  = []string{"name", "hosts"}
	historyFields     = []string{"uuid", "created_at", "severity", "event"}
	historyDetail     = []string{"uuid", "created_at", "severity", "event_type", "event", "conductor", "user"}
	supportedIfaces   = []string{"bios", "boot", "console", "deploy", "inspect", "management", "network", "power", "raid", "rescue", "storage", "vendor"}
	driverDetailExtra = []string{"name", "type", "hosts"}
)

// driverDetailFields is DRIVER_DETAILED_RESOURCE: name, type, hosts, then
// the default and enabled interfaces.
func driverDetailFields() []string {
	out := append([]string(nil), driverDetailExtra...)
	for _, i := range supportedIfaces {
		out = append(out, "default_"+i+"_interface")
	}
	for _, i := range supportedIfaces {
		out = append(out, "enabled_"+i+"_interfaces")
	}
	return out
}

// driverLabel labels driver fields ("Supported driver(s)" for the name).
func driverLabel(field string) string {
	if field == "name" {
		return "Supported driver(s)"
	}
	for _, p := range []string{"default_", "enabled_"} {
		if strings.HasPrefix(field, p) {
			iface := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(field, p), "_interfaces"), "_interface")
			name := label(iface + "_interface")
			if p == "enabled_" {
				name += "s"
			}
			return strings.ToUpper(p[:1]) + p[1:len(p)-1] + " " + name
		}
	}
	return label(field)
}

// rowOf picks fields out of an API object in order; a missing field is
// None, as osc-lib's get_item_properties leaves it.
func rowOf(obj map[string]any, fields []string) []any {
	row := make([]any, len(fields))
	for i, f := range fields {
		row[i] = obj[f]
	}
	return row
}

// recordOf turns an API object into a show record: its keys sorted (as
// cliff's dict2columns does), minus the link lists.
func recordOf(obj map[string]any, drop ...string) record {
	for _, k := range append([]string{"links"}, drop...) {
		delete(obj, k)
	}
	fields := sortedKeys(obj)
	values := make([]any, len(fields))
	for i, f := range fields {
		values[i] = obj[f]
	}
	return record{fields: fields, values: values, alt: fieldAlt(fields)}
}
