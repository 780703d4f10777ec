package main

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/anvil-metal/anvil/internal/driver"
)

func TestInterfaceFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want driver.Enablement
	}{
		{name: "none: defaults apply", want: driver.Enablement{Interfaces: map[string][]string{}, Defaults: map[string]string{}}},
		{name: "given", args: []string{"--enabled-hardware-types", "ipmi, redfish", "--enabled-boot-interfaces=ipxe,fake",
			"--default-boot-interface", "fake", "--enabled-power-interfaces", ""},
			want: driver.Enablement{HardwareTypes: []string{"ipmi", "redfish"},
				Interfaces: map[string][]string{"boot": {"ipxe", "fake"}}, Defaults: map[string]string{"boot": "fake"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e driver.Enablement
			f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			addInterfaceFlags(f, &e)
			if err := f.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e, tt.want) {
				t.Errorf("got %+v\nwant %+v", e, tt.want)
			}
		})
	}
	// Every kind has both flags, named after Ironic's options.
	var e driver.Enablement
	f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	addInterfaceFlags(f, &e)
	for _, name := range []string{"enabled-firmware-interfaces", "default-storage-interface", "enabled-vendor-interfaces", "default-rescue-interface"} {
		if f.Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
}
