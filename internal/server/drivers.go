package server

import (
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/direct"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
)

// Drivers are the driver implementations a registry is built from. Nil
// fields take their defaults (Ironic's settings).
type Drivers struct {
	Fake    *fake.Hardware
	Redfish *redfish.Driver
	IPMI    *ipmi.Driver
	// Agent configures the "direct" deploy interface (its Drivers field is
	// set to the registry being built).
	Agent direct.Config
}

// Registry builds the driver registry with every enabled hardware type:
// fake-hardware, redfish and ipmi, with default settings.
func Registry(fk *fake.Hardware) *driver.Registry {
	return RegistryWith(Drivers{Fake: fk})
}

// RegistryWith builds the registry from the given implementations.
//
// The redfish and ipmi hardware types drive power and management (redfish
// also inspection) through their BMCs; the other slots are filled by the fake
// interfaces until the real ones exist (deploy through the agent, boot over
// the network, ...), so a node with real power can still reach active:
// deploy_interface "fake" writes nothing to the disk.
func RegistryWith(d Drivers) *driver.Registry {
	if d.Fake == nil {
		d.Fake = fake.New()
	}
	if d.Redfish == nil {
		d.Redfish = redfish.New(redfish.Config{})
	}
	if d.IPMI == nil {
		d.IPMI = ipmi.New(ipmi.Config{})
	}
	r := driver.NewRegistry()
	d.Fake.Register(r)
	d.Agent.Drivers = r
	dd := direct.New(d.Agent)
	r.AddInterface("deploy", direct.Name, dd)
	r.AddInterface("inspect", direct.InterfaceName, dd.Inspector())
	r.AddInterface("rescue", direct.InterfaceName, dd.Rescuer())
	fakeKinds := addAgent(fake.Kinds()) // "fake" stays the default
	ht, _ := r.HardwareType(fake.Name)
	ht.Supported = fakeKinds
	r.AddHardwareType(ht)

	r.AddInterface("power", redfish.Name, d.Redfish)
	r.AddInterface("management", redfish.Name, d.Redfish)
	r.AddInterface("inspect", redfish.Name, d.Redfish)
	r.AddHardwareType(driver.HardwareType{Name: redfish.Name, Properties: redfish.Properties(),
		Supported: bmcKinds(map[string][]string{
			"power":      {redfish.Name},
			"management": {redfish.Name},
			"inspect":    {redfish.Name, fake.Interface, direct.InterfaceName},
		})})

	r.AddInterface("power", ipmi.Interface, d.IPMI)
	r.AddInterface("management", ipmi.Interface, d.IPMI)
	r.AddHardwareType(driver.HardwareType{Name: ipmi.Name, Properties: ipmi.Properties(),
		Supported: bmcKinds(map[string][]string{
			"power":      {ipmi.Interface},
			"management": {ipmi.Interface},
		})})
	return r
}

// bmcKinds fills the slots a BMC hardware type does not drive itself with
// the fake interfaces (network and storage "noop", as Ironic's defaults).
func bmcKinds(own map[string][]string) map[string][]string {
	m := addAgent(fake.Kinds())
	for k, v := range own {
		m[k] = v
	}
	return m
}

// addAgent adds the agent's deploy ("direct"), inspect and rescue ("agent")
// interfaces after the defaults already listed.
func addAgent(m map[string][]string) map[string][]string {
	m["deploy"] = append(m["deploy"], direct.Name)
	m["inspect"] = append(m["inspect"], direct.InterfaceName)
	m["rescue"] = append(m["rescue"], direct.InterfaceName)
	return m
}
