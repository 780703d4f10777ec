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
			{Interface: "bios", Step: "apply_configuration", ArgsInfo: biosArgs},
			{Interface: "bios", Step: "factory_reset"},
			{Interface: "bios", Step: "cache_bios_settings"},
		},
		driver.ServiceSteps: {
			{Interface: "bios", Step: "apply_configuration", ArgsInfo: biosArgs},
			{Interface: "bios", Step: "factory_reset"},
		},
	},
	"firmware": {
		driver.CleanSteps:   {{Interface: "firmware", Step: "update", ArgsInfo: firmwareArgs}},
		driver.ServiceSteps: {{Interface: "firmware", Step: "update", ArgsInfo: firmwareArgs}},
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

// Ironic's fake bios and firmware argsinfo.
var (
	biosArgs = map[string]driver.ArgInfo{"settings": {
		Description: "List of BIOS settings, each item needs to contain a dictionary with name/value pairs", Required: true}}
	firmwareArgs = map[string]driver.ArgInfo{"settings": {
		Description: "List of Firmware components, each item needs to contain a dictionary with name/value pairs", Required: true}}
)

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
	if s.Interface == "bios" {
		if err := fakeBIOS(t, s); err != nil {
			return driver.Done, err
		}
	}
	return result(t.Node, string(kind)), h.op(ctx, t.Node, string(kind), string(kind))
}

// fakeBIOS keeps BIOS settings without hardware, as Ironic's FakeBIOS:
// apply_configuration makes the cached settings the given ones,
// factory_reset deletes them all, cache_bios_settings keeps them.
func fakeBIOS(t *driver.Task, s driver.Step) error {
	switch s.Step {
	case "apply_configuration":
		settings, err := driver.ParseBIOSSettings(s.Args["settings"])
		if err != nil {
			return err
		}
		cached := driver.BIOSFromSettings(settings)
		t.BIOS = &cached
	case "factory_reset":
		t.BIOS = &[]model.BIOSSetting{}
	}
	return nil
}

// ValidateRAIDConfig checks the configuration against Ironic's schema (the
// fake RAID interface inherits Ironic's base validation).
func (h *Hardware) ValidateRAIDConfig(_ *model.Node, cfg model.JSON) error { return raid.Validate(cfg) }

// LogicalDiskProperties are the schema's.
func (h *Hardware) LogicalDiskProperties() map[string]string { return raid.LogicalDiskProperties() }
