// Package noop holds Ironic's "does nothing" interfaces for optional
// capabilities a hardware type lacks or an operator leaves off: no-bios,
// no-console, no-firmware, no-inspect, no-raid, no-rescue and no-vendor.
// Unlike the fake interfaces they fail validation and every action with
// Ironic's UnsupportedDriverExtension text ("Driver ipmi does not support
// rescue (disabled or not implemented)."), so `node validate` shows the
// capability as unavailable and a request for it fails cleanly.
package noop

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/raid"
)

// Names of the implementations by kind (Ironic's entry point names).
var Names = map[string]string{
	"bios":     "no-bios",
	"console":  "no-console",
	"firmware": "no-firmware",
	"inspect":  "no-inspect",
	"raid":     "no-raid",
	"rescue":   "no-rescue",
	"vendor":   "no-vendor",
}

// Interface is the no-op implementation of one kind. It satisfies
// driver.Inspect and driver.Rescue as well as driver.Validator.
type Interface struct{ Kind string }

// New returns the no-op interface of kind.
func New(kind string) *Interface { return &Interface{Kind: kind} }

// Register adds every no-op interface to r under its Ironic name.
func Register(r *driver.Registry) {
	for kind, name := range Names {
		r.AddInterface(kind, name, New(kind))
	}
}

// UnsupportedError is Ironic's UnsupportedDriverExtension.
type UnsupportedError struct{ Driver, Kind string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("Driver %s does not support %s (disabled or not implemented).", e.Driver, e.Kind)
}

// Unwrap lets callers match driver.ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return driver.ErrUnsupported }

func (i *Interface) fail(n *model.Node) error {
	return &UnsupportedError{Driver: n.Driver, Kind: i.Kind}
}

// Validate always fails: the capability is not available.
func (i *Interface) Validate(t *driver.Task) error { return i.fail(t.Node) }

// Inspect fails (no-inspect).
func (i *Interface) Inspect(_ context.Context, t *driver.Task) (driver.Result, error) {
	return driver.Done, i.fail(t.Node)
}

// Rescue fails (no-rescue).
func (i *Interface) Rescue(_ context.Context, t *driver.Task) (driver.Result, error) {
	return driver.Done, i.fail(t.Node)
}

// Unrescue fails (no-rescue).
func (i *Interface) Unrescue(_ context.Context, t *driver.Task) error { return i.fail(t.Node) }

// ValidateRAIDConfig fails (no-raid refuses any target RAID configuration).
func (i *Interface) ValidateRAIDConfig(n *model.Node, _ model.JSON) error { return i.fail(n) }

// LogicalDiskProperties are the schema's, as Ironic's NoRAID inherits them.
func (i *Interface) LogicalDiskProperties() map[string]string { return raid.LogicalDiskProperties() }
