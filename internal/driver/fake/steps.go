package fake

import (
	"context"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/raid"
)

// steps are the fake steps by interface slot and kind, with default priorities
// (0 = only when asked for).
var stepTable = map[string]map[driver.StepKind][]driver.Step{
	"deploy": {
		driver.CleanSteps: {
			{Interface: "deploy", Step: "erase_devices_metadata", Priority: 99, Abortable: true},
			{Interface: "deploy", Step: "erase_devices", Priority: 0, Abortable: true},
		},
		driver.DeploySteps: {{Interface: "deploy", Step: "deploy", Priority: 100}},
		driver.ServiceSteps: {
			{Interface: "deploy", Step: "erase_devices_metadata", Priority: 0},
		},
	},
	"bios": {
		driver.CleanSteps: {
			{Interface: "bios", Step: "apply_configuration"},
			{Interface: "bios", Step: "factory_reset"},
			{Interface: "bios", Step: "cache_bios_settings"},
		},
		driver.ServiceSteps: {
			{Interface: "bios", Step: "apply_configuration"},
			{Interface: "bios", Step: "factory_reset"},
		},
	},
	"raid": {
		driver.CleanSteps: {
			{Interface: "raid", Step: "create_configuration"},
			{Interface: "raid", Step: "delete_configuration"},
		},
		driver.DeploySteps: {
			{Interface: "raid", Step: "apply_configuration"},
		},
		driver.ServiceSteps: {
			{Interface: "raid", Step: "create_configuration"},
			{Interface: "raid", Step: "delete_configuration"},
		},
	},
	"management": {
		driver.ServiceSteps: {{Interface: "management", Step: "clear_job_queue"}},
	},
}

// Steps lists the fake steps of kind for interface slot iface.
func (h *Hardware) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	return append([]driver.Step(nil), stepTable[iface][kind]...)
}

// ExecuteStep waits fake_<kind>_delay and fails if kind is in fake_fail.
func (h *Hardware) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind == driver.DeploySteps {
		if s.Interface == "deploy" && s.Step == "deploy" {
			return h.Deploy(ctx, t)
		}
		return driver.Done, h.op(ctx, t.Node, "deploy", "deploy")
	}
	return result(t.Node, string(kind)), h.op(ctx, t.Node, string(kind), string(kind))
}

// ValidateRAIDConfig checks the configuration against Ironic's schema (the
// fake RAID interface inherits Ironic's base validation).
func (h *Hardware) ValidateRAIDConfig(_ *model.Node, cfg model.JSON) error { return raid.Validate(cfg) }

// LogicalDiskProperties are the schema's.
func (h *Hardware) LogicalDiskProperties() map[string]string { return raid.LogicalDiskProperties() }
