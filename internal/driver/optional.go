package driver

import "context"

// NMIInjector is an optional Management capability: inject a non-maskable
// interrupt into the machine (Ironic's management.inject_nmi, PUT
// /v1/nodes/{node}/management/inject_nmi). Management interfaces without it
// answer Ironic's UnsupportedDriverExtension. A BMC failure is a *CallError.
type NMIInjector interface {
	InjectNMI(ctx context.Context, t *Task) error
}

// Health states a BMC reports (Ironic's health_states; the node field
// health from 1.109).
const (
	HealthOK       = "OK"
	HealthWarning  = "Warning"
	HealthCritical = "Critical"
)

// HealthReader is an optional Power capability: the power state and the
// hardware's health read in one call to the BMC (Ironic's
// management.get_node_health, which its power sync calls right after the
// power state). health is HealthOK, HealthWarning, HealthCritical or ""
// when the BMC reports none. Power interfaces without it leave the node's
// health alone (null).
type HealthReader interface {
	PowerStateHealth(ctx context.Context, t *Task) (power, health string, err error)
}

// driver_internal_info keys holding the inventory (IPA's format) and the
// plugin data of a node's last inspection, agent or out-of-band (GET
// /v1/nodes/{node}/inventory serves them).
const (
	KeyInventory  = "inspection_inventory"
	KeyPluginData = "inspection_plugin_data"
)

// Boot modes in Ironic's words (boot_modes.UEFI, LEGACY_BIOS).
const (
	BootModeUEFI = "uefi"
	BootModeBIOS = "bios"
)

// BootModeManager is an optional Management capability: read and change
// the boot mode (Ironic's get_boot_mode/set_boot_mode, PUT
// .../states/boot_mode). Management interfaces without it answer Ironic's
// UnsupportedDriverExtension (in last_error: the change is asynchronous).
type BootModeManager interface {
	BootMode(ctx context.Context, t *Task) (string, error)
	SetBootMode(ctx context.Context, t *Task, mode string) error
}

// SecureBootManager is an optional Management capability: read and change
// UEFI secure boot (Ironic's get/set_secure_boot_state).
type SecureBootManager interface {
	SecureBoot(ctx context.Context, t *Task) (bool, error)
	SetSecureBoot(ctx context.Context, t *Task, on bool) error
}

// Indicator is one indicator (an LED) of a hardware component, as Ironic's
// get_supported_indicators describes it.
type Indicator struct {
	Name     string
	ReadOnly bool
	States   []string // Ironic's indicator_states: on, off, blinking, unknown
}

// Component is a hardware component with its indicators (Ironic's
// components: system, chassis, disk, power, nic).
type Component struct {
	Name       string
	Indicators []Indicator
}

// IndicatorManager is an optional Management capability: the indicators
// of Ironic's /v1/nodes/{node}/management/indicators (1.63). A refused
// component or indicator is an *ArgError; SetIndicatorState answers
// ErrUnsupported where the driver cannot change them.
type IndicatorManager interface {
	Indicators(ctx context.Context, t *Task) ([]Component, error)
	IndicatorState(ctx context.Context, t *Task, component, indicator string) (string, error)
	SetIndicatorState(ctx context.Context, t *Task, component, indicator, state string) error
}
