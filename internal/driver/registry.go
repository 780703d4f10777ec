package driver

import (
	"fmt"
	"slices"
	"sort"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// HardwareType is what a node's "driver" field names: for each interface kind,
// the implementations it supports, the first being the default.
type HardwareType struct {
	Name       string
	Supported  map[string][]string
	Properties map[string]string // driver_info keys it reads → description
}

// Registry holds the enabled hardware types and interface implementations.
// It is built once in main and read-only afterwards.
type Registry struct {
	types map[string]HardwareType
	impls map[string]map[string]any // kind → implementation name → value
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]HardwareType{}, impls: map[string]map[string]any{}}
}

// AddHardwareType enables a hardware type.
func (r *Registry) AddHardwareType(ht HardwareType) { r.types[ht.Name] = ht }

// AddInterface registers impl as implementation name of interface kind.
func (r *Registry) AddInterface(kind, name string, impl any) {
	if r.impls[kind] == nil {
		r.impls[kind] = map[string]any{}
	}
	r.impls[kind][name] = impl
}

// HardwareType returns the hardware type called name.
func (r *Registry) HardwareType(name string) (HardwareType, bool) {
	ht, ok := r.types[name]
	return ht, ok
}

// HardwareTypes returns every enabled hardware type, sorted by name.
func (r *Registry) HardwareTypes() []HardwareType {
	out := make([]HardwareType, 0, len(r.types))
	for _, ht := range r.types {
		out = append(out, ht)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InterfaceError says a node names an interface its hardware type lacks.
type InterfaceError struct {
	Kind, Name, Driver string
	Valid              []string
}

func (e *InterfaceError) Error() string {
	return fmt.Sprintf("Could not find the following interface in the 'ironic.hardware.interfaces.%s' entrypoint: %s. Valid interfaces are %s.",
		e.Kind, e.Name, pyrepr.Strings(e.Valid))
}

// Compose fills the node's empty interface fields with its hardware type's
// defaults and checks the chosen ones are supported. The node must name an
// enabled hardware type.
func (r *Registry) Compose(n *model.Node) error {
	ht, ok := r.types[n.Driver]
	if !ok {
		return fmt.Errorf("hardware type %q is not enabled", n.Driver)
	}
	for _, kind := range model.InterfaceNames {
		supported := ht.Supported[kind]
		cur := n.Interfaces.Get(kind)
		if cur == "" {
			if len(supported) > 0 {
				n.Interfaces.Set(kind, supported[0])
			}
			continue
		}
		if !slices.Contains(supported, cur) {
			return &InterfaceError{Kind: kind, Name: cur, Driver: n.Driver, Valid: supported}
		}
	}
	return nil
}

// For returns the driver composed for the node's interfaces.
func (r *Registry) For(n *model.Node) (*Driver, error) {
	if _, ok := r.types[n.Driver]; !ok {
		return nil, fmt.Errorf("hardware type %q is not enabled", n.Driver)
	}
	d := &Driver{Others: map[string]Validator{}, Names: map[string]string{}}
	for _, kind := range model.InterfaceNames {
		name := n.Interfaces.Get(kind)
		if name == "" {
			continue
		}
		impl, ok := r.impls[kind][name]
		if !ok {
			return nil, fmt.Errorf("%s interface %q is not registered", kind, name)
		}
		d.Names[kind] = name
		if err := d.put(kind, impl); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (d *Driver) put(kind string, impl any) error {
	bad := func() error { return fmt.Errorf("%T does not implement the %s interface", impl, kind) }
	var ok bool
	switch kind {
	case "power":
		d.Power, ok = impl.(Power)
	case "management":
		d.Management, ok = impl.(Management)
	case "deploy":
		d.Deploy, ok = impl.(Deploy)
	case "inspect":
		d.Inspect, ok = impl.(Inspect)
	case "rescue":
		d.Rescue, ok = impl.(Rescue)
	default:
		var v Validator
		v, ok = impl.(Validator)
		d.Others[kind] = v
	}
	if !ok {
		return bad()
	}
	return nil
}
