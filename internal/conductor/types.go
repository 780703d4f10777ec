package conductor

import "github.com/anvil-metal/anvil/internal/model"

// ProvisionRequest is the body of PUT /v1/nodes/{id}/states/provision, already
// decoded and type-checked by the API.
type ProvisionRequest struct {
	Target         string // the verb as sent: "active", "deploy", "manage", ...
	Minor          int    // the request's API microversion (1.Minor); the API gates verbs by it, the conductor only aborts (0 = no gate)
	ConfigDrive    any    // string or object; only with active/deploy/rebuild
	CleanSteps     []model.JSON
	DeploySteps    []model.JSON
	ServiceSteps   []model.JSON
	RescuePassword *string
	DisableRamdisk *bool
	// Runbook names (UUID or name) the runbook whose steps are the clean or
	// service steps (1.92); the API checks the version and the ident's shape.
	Runbook string
	User    string // who asked, for history
}

// PowerRequest is the body of PUT /v1/nodes/{id}/states/power.
type PowerRequest struct {
	Target  string // "power on", "power off", "rebooting", "soft power off", "soft rebooting"
	Timeout int    // seconds, 0 = driver default
	Minor   int
	User    string
}

// ValidateResult is one interface's entry in GET /v1/nodes/{id}/validate.
// Result nil means "not supported / not configured" (Ironic's null).
type ValidateResult struct {
	Result *bool
	Reason string
}

// BootDevice is a node's boot device setting.
type BootDevice struct {
	Device     string // pxe, disk, cdrom, bios, safe, wanboot, ... ("" = unknown)
	Persistent *bool  // nil = unknown
}

// DriverInfo describes an enabled hardware type (GET /v1/drivers).
type DriverInfo struct {
	Name  string
	Hosts []string // conductors that run it
	// Interfaces: kind → enabled implementations; Defaults: kind → default.
	Interfaces map[string][]string
	Defaults   map[string]string
	// Properties: driver_info keys the hardware type reads → description.
	Properties map[string]string
}
