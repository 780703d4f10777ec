package fsm

import "slices"

// Power states and power request targets, spelled as Ironic spells them.
// A node's power_state is PowerOn, PowerOff, PowerError or null (unknown);
// the other three exist only as targets of PUT /v1/nodes/{node}/states/power
// and as target_power_state while the action runs.
const (
	PowerOn       = "power on"
	PowerOff      = "power off"
	Rebooting     = "rebooting"
	SoftRebooting = "soft rebooting"
	SoftPowerOff  = "soft power off"
	PowerError    = "error"
)

// PowerTargets returns the five targets the power API accepts, in Ironic's
// order. The slice is the caller's.
func PowerTargets() []string {
	return []string{PowerOn, PowerOff, Rebooting, SoftRebooting, SoftPowerOff}
}

// IsPowerTarget reports whether s is a target the power API accepts.
func IsPowerTarget(s string) bool { return slices.Contains(PowerTargets(), s) }

// PowerResult returns the power state a successfully completed power action
// leaves the node in: a (soft) reboot ends powered on, a soft power off ends
// powered off. It returns "" when target is not a power target.
func PowerResult(target string) string {
	switch target {
	case PowerOn, Rebooting, SoftRebooting:
		return PowerOn
	case PowerOff, SoftPowerOff:
		return PowerOff
	}
	return ""
}
