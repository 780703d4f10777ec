package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/model"
)

// addInterfaceFlags adds Ironic's driver options as flags:
// --enabled-hardware-types, and for every interface kind
// --enabled-<kind>-interfaces and --default-<kind>-interface. Only the flags
// given (or set in the config file) land in e; the rest take the defaults.
func addInterfaceFlags(f *pflag.FlagSet, e *driver.Enablement) {
	e.Interfaces, e.Defaults = map[string][]string{}, map[string]string{}
	f.Var(&listFlag{set: func(v []string) { e.HardwareTypes = v }, def: hardware.DefaultHardwareTypes},
		"enabled-hardware-types", "comma-separated hardware types to enable")
	base := hardware.DefaultInterfaces()
	for _, kind := range model.InterfaceNames {
		usage := "comma-separated " + kind + " interfaces to enable"
		def := base[kind]
		if def == nil {
			usage += " (default: the first supported by each enabled hardware type)"
		}
		f.Var(&listFlag{set: func(v []string) { e.Interfaces[kind] = v }, def: def}, "enabled-"+kind+"-interfaces", usage)
		f.Var(&defaultFlag{m: e.Defaults, kind: kind}, "default-"+kind+"-interface",
			kind+" interface for nodes that name none (default: the first enabled one their hardware type supports)")
	}
}

// listFlag is a comma-separated list; an empty value keeps the default.
type listFlag struct {
	set func([]string)
	def []string
	val []string
}

func (l *listFlag) String() string {
	if l.val != nil {
		return strings.Join(l.val, ",")
	}
	return strings.Join(l.def, ",")
}

func (l *listFlag) Set(s string) error {
	var v []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			v = append(v, p)
		}
	}
	if len(v) > 0 {
		l.val = v
		l.set(v)
	}
	return nil
}

func (l *listFlag) Type() string { return "strings" }

// defaultFlag is one default_<kind>_interface.
type defaultFlag struct {
	m    map[string]string
	kind string
}

func (d *defaultFlag) String() string { return d.m[d.kind] }

func (d *defaultFlag) Set(s string) error {
	d.m[d.kind] = strings.TrimSpace(s)
	return nil
}

func (d *defaultFlag) Type() string { return "string" }
