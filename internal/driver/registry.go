package driver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// HardwareType is what a node's "driver" field names: for each interface kind,
// the implementations it supports in order of preference (Ironic's
// supported_<kind>_interfaces).
//
// The registry's answers (HardwareType, HardwareTypes) hold the enabled view:
// Supported lists only the enabled implementations, the default first.
type HardwareType struct {
	Name       string
	Supported  map[string][]string
	Properties map[string]string // driver_info keys it reads → description
	// OptIn lists implementations the type takes only when the operator
	// names them in enabled_<kind>_interfaces (the fake interfaces on real
	// hardware, for emulators and demos); Anvil's default lists never do.
	OptIn map[string][]string
	// AcceptsAny marks fake-hardware: a node may use any enabled
	// implementation, as Ironic special-cases FakeHardware.
	AcceptsAny bool
}

// Enablement is the operator's choice (Ironic's enabled_hardware_types,
// enabled_<kind>_interfaces and default_<kind>_interface options).
type Enablement struct {
	// HardwareTypes enabled; nil enables every registered one.
	HardwareTypes []string
	// Interfaces: kind → the operator's enabled implementations.
	Interfaces map[string][]string
	// Defaults: kind → the operator's default implementation.
	Defaults map[string]string
	// Base: kind → enabled implementations for kinds the operator did not
	// set (the service's defaults). A kind in neither map enables the first
	// supported implementation of each enabled hardware type (Ironic's
	// fallback for enabled_power_interfaces and enabled_management_interfaces).
	Base map[string][]string
}

// Registry holds the hardware types and interface implementations, and which
// of them are enabled. It is built once in main and read-only afterwards.
type Registry struct {
	types map[string]HardwareType
	impls map[string]map[string]any // kind → implementation name → value

	// Set by Enable; before it every registered type and implementation is
	// enabled and each type's first supported implementation is its default.
	enabledTypes map[string]HardwareType
	enabledKinds map[string][]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]HardwareType{}, impls: map[string]map[string]any{}}
}

// AddHardwareType registers a hardware type.
func (r *Registry) AddHardwareType(ht HardwareType) { r.types[ht.Name] = ht }

// AddInterface registers impl as implementation name of interface kind.
func (r *Registry) AddInterface(kind, name string, impl any) {
	if r.impls[kind] == nil {
		r.impls[kind] = map[string]any{}
	}
	r.impls[kind][name] = impl
}

// Registered returns a registered hardware type with its full supported
// lists, enabled or not (for building the registry).
func (r *Registry) Registered(name string) (HardwareType, bool) {
	ht, ok := r.types[name]
	return ht, ok
}

// HardwareType returns the enabled hardware type called name.
func (r *Registry) HardwareType(name string) (HardwareType, bool) {
	ht, ok := r.view()[name]
	return ht, ok
}

// HardwareTypes returns every enabled hardware type, sorted by name.
func (r *Registry) HardwareTypes() []HardwareType {
	v := r.view()
	out := make([]HardwareType, 0, len(v))
	for _, ht := range v {
		out = append(out, ht)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// EnabledInterfaces returns the implementations of kind enabled on this
// conductor, whatever the hardware type.
func (r *Registry) EnabledInterfaces(kind string) []string {
	if r.enabledKinds != nil {
		return slices.Clone(r.enabledKinds[kind])
	}
	names := make([]string, 0, len(r.impls[kind]))
	for n := range r.impls[kind] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Registry) view() map[string]HardwareType {
	if r.enabledTypes != nil {
		return r.enabledTypes
	}
	return r.types
}

// Enable applies the operator's choice: each enabled hardware type keeps,
// per kind, its supported implementations that are enabled, in its order of
// preference, the default first — the operator's default_<kind>_interface,
// else the first of that list (Ironic's driver_factory.default_interface).
// Unknown names, a default that is not enabled, and a type left without a
// default are errors, as they stop Ironic's conductor from starting.
func (r *Registry) Enable(e Enablement) error {
	types, err := r.enabledTypeList(e.HardwareTypes)
	if err != nil {
		return err
	}
	kinds := map[string][]string{}
	for _, kind := range model.InterfaceNames {
		if kinds[kind], err = r.enabledKind(e, kind, types); err != nil {
			return err
		}
	}
	enabled := map[string]HardwareType{}
	for _, ht := range types {
		if enabled[ht.Name], err = effective(ht, e, kinds); err != nil {
			return err
		}
	}
	r.enabledTypes, r.enabledKinds = enabled, kinds
	return nil
}

// enabledTypeList resolves enabled_hardware_types (nil: all registered).
func (r *Registry) enabledTypeList(names []string) ([]HardwareType, error) {
	if names == nil {
		names = r.typeNames()
	}
	var types []HardwareType
	for _, n := range names {
		ht, ok := r.types[n]
		if !ok {
			return nil, fmt.Errorf("--enabled-hardware-types: unknown hardware type %q (known: %s)", n, strings.Join(r.typeNames(), ", "))
		}
		if !slices.ContainsFunc(types, func(t HardwareType) bool { return t.Name == n }) {
			types = append(types, ht)
		}
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("--enabled-hardware-types: no hardware type is enabled")
	}
	return types, nil
}

// enabledKind resolves enabled_<kind>_interfaces: the operator's list, else
// the base, else the first supported implementation of each type.
func (r *Registry) enabledKind(e Enablement, kind string, types []HardwareType) ([]string, error) {
	list, ok := e.Interfaces[kind]
	if !ok {
		list, ok = e.Base[kind]
	}
	if !ok {
		for _, ht := range types {
			if s := ht.Supported[kind]; len(s) > 0 {
				list = append(list, s[0])
			}
		}
	}
	for _, name := range list {
		if _, ok := r.impls[kind][name]; !ok {
			return nil, fmt.Errorf("--enabled-%s-interfaces: unknown %s interface %q (known: %s)",
				kind, kind, name, strings.Join(sortedKeys(r.impls[kind]), ", "))
		}
	}
	list = compact(list)
	if d := e.Defaults[kind]; d != "" && !slices.Contains(list, d) {
		return nil, fmt.Errorf("--default-%s-interface %q is not one of --enabled-%s-interfaces (%s)",
			kind, d, kind, strings.Join(list, ", "))
	}
	return list, nil
}

// effective is ht as enabled: per kind its supported implementations that
// are enabled (and opt-ins the operator named), the default first.
func effective(ht HardwareType, e Enablement, kinds map[string][]string) (HardwareType, error) {
	eff := HardwareType{Name: ht.Name, Properties: ht.Properties, AcceptsAny: ht.AcceptsAny,
		OptIn: ht.OptIn, Supported: map[string][]string{}}
	for _, kind := range model.InterfaceNames {
		var list []string
		for _, name := range ht.Supported[kind] {
			if slices.Contains(kinds[kind], name) {
				list = append(list, name)
			}
		}
		for _, name := range ht.OptIn[kind] {
			if slices.Contains(e.Interfaces[kind], name) && !slices.Contains(list, name) {
				list = append(list, name)
			}
		}
		if len(ht.Supported[kind]) == 0 && len(list) == 0 {
			continue // Anvil implements nothing of this kind for the type
		}
		def := e.Defaults[kind]
		if def == "" && len(list) > 0 {
			def = list[0]
		}
		if def == "" || !slices.Contains(list, def) && !ht.AcceptsAny {
			err := &NoDefaultError{Kind: kind, Driver: ht.Name}
			if def != "" {
				err.Hint = fmt.Sprintf("--default-%s-interface %s is not supported by it", kind, def)
			} else {
				err.Hint = fmt.Sprintf("it supports %s; enable one with --enabled-%s-interfaces",
					strings.Join(append(slices.Clone(ht.Supported[kind]), ht.OptIn[kind]...), ", "), kind)
			}
			return eff, err
		}
		eff.Supported[kind] = append([]string{def}, slices.DeleteFunc(list, func(s string) bool { return s == def })...)
	}
	return eff, nil
}

func (r *Registry) typeNames() []string {
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Implementations returns the names registered for kind, enabled or not.
func (r *Registry) Implementations(kind string) []string { return sortedKeys(r.impls[kind]) }

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// compact drops empty and repeated names, keeping the first occurrence.
func compact(list []string) []string {
	var out []string
	for _, s := range list {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// NoDefaultError says a hardware type has no enabled implementation to
// default to for a kind (Ironic's NoValidDefaultForInterface, with a hint).
type NoDefaultError struct{ Kind, Driver, Hint string }

func (e *NoDefaultError) Error() string {
	msg := fmt.Sprintf("For hardware type '%s', no default value found for %s interface could be determined. Please ensure the interfaces are enabled.",
		e.Driver, e.Kind)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// InterfaceError says a node names an interface that is not enabled
// (Ironic's InterfaceNotFoundInEntrypoint).
type InterfaceError struct {
	Kind, Name, Driver string
	Valid              []string // every enabled implementation of Kind
}

func (e *InterfaceError) Error() string {
	return fmt.Sprintf("Could not find the following interface in the 'ironic.hardware.interfaces.%s' entrypoint: %s. Valid interfaces are %s.",
		e.Kind, e.Name, pyrepr.Strings(e.Valid))
}

// IncompatibleError says a node names an enabled interface its hardware type
// does not support (Ironic's IncompatibleInterface).
type IncompatibleError struct{ Kind, Name, Driver string }

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("%s interface implementation '%s' is not supported by hardware type %s.", e.Kind, e.Name, e.Driver)
}

// check says whether a node of hardware type ht may use implementation name
// of kind.
func (r *Registry) check(ht HardwareType, kind, name string) error {
	if r.enabledKinds != nil && !slices.Contains(r.enabledKinds[kind], name) {
		return &InterfaceError{Kind: kind, Name: name, Driver: ht.Name, Valid: r.EnabledInterfaces(kind)}
	}
	if slices.Contains(ht.Supported[kind], name) {
		return nil
	}
	if _, ok := r.impls[kind][name]; ht.AcceptsAny && ok {
		return nil
	}
	if r.enabledKinds == nil {
		return &InterfaceError{Kind: kind, Name: name, Driver: ht.Name, Valid: ht.Supported[kind]}
	}
	return &IncompatibleError{Kind: kind, Name: name, Driver: ht.Name}
}

// Compose fills the node's empty interface fields with its hardware type's
// defaults and checks the chosen ones are enabled and supported. The node
// must name an enabled hardware type.
func (r *Registry) Compose(n *model.Node) error {
	ht, ok := r.HardwareType(n.Driver)
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
		if err := r.check(ht, kind, cur); err != nil {
			return err
		}
	}
	return nil
}

// For returns the driver composed for the node's interfaces. A stored
// interface that is no longer enabled is an error, as in Ironic.
func (r *Registry) For(n *model.Node) (*Driver, error) {
	ht, ok := r.HardwareType(n.Driver)
	if !ok {
		return nil, fmt.Errorf("hardware type %q is not enabled", n.Driver)
	}
	d := &Driver{Others: map[string]Validator{}, Names: map[string]string{}}
	for _, kind := range model.InterfaceNames {
		name := n.Interfaces.Get(kind)
		if name == "" {
			continue
		}
		if err := r.check(ht, kind, name); err != nil {
			return nil, err
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
	case "boot":
		d.Boot, ok = impl.(Boot)
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
