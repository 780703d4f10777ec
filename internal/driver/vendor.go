package driver

import "context"

// VendorMethod describes one vendor passthru method, as Ironic's
// @passthru decorator records it (GET .../vendor_passthru/methods shows it).
type VendorMethod struct {
	HTTPMethods []string `json:"http_methods"` // upper case: GET, POST, PUT, PATCH, DELETE
	// Async methods run in a worker and answer 202 with no body; the others
	// run while the caller waits and answer 200 with their return value.
	Async       bool   `json:"async"`
	Description string `json:"description"`
	// Attach returns the value as the raw response body (Ironic's attach).
	Attach bool `json:"attach"`
	// RequireExclusiveLock takes the node's lock for the call (node methods
	// only: driver methods leave the key out); nil means true.
	RequireExclusiveLock *bool `json:"require_exclusive_lock,omitempty"`
}

// Vendor is a vendor interface (Ironic's VendorInterface): named methods a
// client calls through /v1/nodes/{node}/vendor_passthru?method=NAME with a
// JSON object of arguments. Interfaces that only validate (no-vendor) are
// not Vendors: their method table is empty.
type Vendor interface {
	Validator
	// VendorMethods lists the node-level methods.
	VendorMethods() map[string]VendorMethod
	// ValidateVendor checks the arguments of method before it runs
	// (Ironic's validate(task, method, **kwargs)); it may read the BMC.
	// A refused argument is an *ArgError.
	ValidateVendor(ctx context.Context, t *Task, method string, args map[string]any) error
	// CallVendor runs method; the return value is rendered as JSON. A
	// hardware failure is a *CallError worded for the client.
	CallVendor(ctx context.Context, t *Task, method, httpMethod string, args map[string]any) (any, error)
}

// DriverVendor is an optional Vendor capability: driver-level methods
// (/v1/drivers/{driver}/vendor_passthru), which work on no node.
type DriverVendor interface {
	DriverVendorMethods() map[string]VendorMethod
	CallDriverVendor(ctx context.Context, method, httpMethod string, args map[string]any) (any, error)
}

// ArgError is an argument a driver refuses (Ironic's InvalidParameterValue
// and MissingParameterValue): the client's mistake, answered 400.
type ArgError struct{ Msg string }

func (e *ArgError) Error() string { return e.Msg }

// CallError is an operation that failed on the hardware, worded for the
// client as Ironic words it (RedfishError, IPMIFailure): answered 500 with
// its text, or 404 when NotFound (a resource the BMC does not have).
type CallError struct {
	Msg      string
	NotFound bool
	Err      error
}

func (e *CallError) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }
