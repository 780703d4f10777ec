// Package hardware declares Anvil's hardware types (Ironic's ipmi, redfish,
// idrac, manual-management and fake-hardware): the interfaces each
// supports and its defaults, and builds the registry of what the operator
// enabled; internal/server only passes the operator's choice and the
// implementations' settings.
package hardware

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/direct"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/driver/noop"
	"github.com/anvil-metal/anvil/internal/driver/pxe"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// Drivers are the driver implementations a registry is built from. Nil
// fields take their defaults (Ironic's settings).
type Drivers struct {
	Fake    *fake.Hardware
	Redfish *redfish.Driver
	IPMI    *ipmi.Driver
	// Agent configures the agent's deploy interfaces, "direct",
	// "custom-agent" and "ramdisk" (whose cleaning boots the agent).
	Agent direct.Config
	// Boot is the boot service the "ipxe" and "pxe" boot interfaces publish
	// nodes' files on; nil leaves them enabled but failing validation
	// (network boot is not configured).
	Boot pxe.Publisher
	// ISO is what the "redfish-virtual-media" boot interface builds and
	// serves ISOs with; nil leaves it to nodes with deploy_iso.
	ISO redfish.ISOPublisher
	// KernelParams is the default kernel command line addition for network
	// and virtual media booted ramdisks (Ironic's [pxe]kernel_append_params
	// and [redfish]kernel_append_params).
	KernelParams string
	// Interfaces is the operator's choice of enabled hardware types and
	// interfaces; what it leaves unset takes DefaultInterfaces.
	Interfaces driver.Enablement
}

// ManualManagement is Ironic's manual-management hardware type: the
// operator powers the machine and sets its boot order by hand.
const ManualManagement = "manual-management"

// IDRAC is Dell's hardware type and IDRACRedfish its Redfish interfaces'
// name (enabled with --enabled-hardware-types and, for inspection,
// --enabled-inspect-interfaces).
const (
	IDRAC        = "idrac"
	IDRACRedfish = "idrac-redfish"
)

// DefaultHardwareTypes are the hardware types enabled unless the operator
// says otherwise (--enabled-hardware-types): Ironic's ipmi and redfish,
// and fake-hardware.
var DefaultHardwareTypes = []string{fake.Name, ipmi.Name, redfish.Name}

// DefaultInterfaces are the enabled implementations of each kind unless the
// operator says otherwise (--enabled-<kind>-interfaces). Power and
// management are absent: as in Ironic, they enable the first supported
// implementation of each enabled hardware type. The fake interfaces listed
// here serve fake-hardware only; real hardware takes them when the operator
// names them.
func DefaultInterfaces() map[string][]string {
	return map[string][]string{
		"boot":     {fake.Interface, pxe.IPXE, pxe.PXE, redfish.VirtualMediaName, pxe.HTTPIPXE, pxe.HTTP, redfish.HTTPSBootName},
		"deploy":   {fake.Interface, direct.Name, direct.RamdiskName, direct.CustomAgentName, direct.AutodetectName},
		"inspect":  {fake.Interface, redfish.Name, direct.InterfaceName, noop.Names["inspect"]},
		"rescue":   {fake.Interface, direct.InterfaceName, noop.Names["rescue"]},
		"bios":     {fake.Interface, redfish.Name, IDRACRedfish, noop.Names["bios"]},
		"console":  {fake.Interface, noop.Names["console"], ipmi.SOLName, ipmi.SocatName, redfish.SerialName},
		"firmware": {fake.Interface, redfish.Name, noop.Names["firmware"]},
		"raid":     {fake.Interface, noop.Names["raid"], direct.InterfaceName, redfish.Name, IDRACRedfish},
		"vendor":   {fake.Interface, redfish.Name, IDRACRedfish, noop.Names["vendor"]},
		"network":  {"flat", "noop"},
		"storage":  {"noop"},
	}
}

// generic is what every hardware type supports unless it says otherwise, in
// order of preference (Ironic's GenericHardware, limited to what Anvil
// implements: deploy direct, ramdisk and custom-agent in Ironic's order).
// Anvil's agent always offers rescue, so "agent" comes before
// "no-rescue" (Ironic puts no-rescue first because its agent may lack the
// rescue extension).
func generic() map[string][]string {
	m := map[string][]string{
		"boot":    {pxe.IPXE, pxe.PXE, pxe.HTTPIPXE, pxe.HTTP},
		"deploy":  {direct.Name, direct.RamdiskName, direct.CustomAgentName, direct.AutodetectName},
		"inspect": {direct.InterfaceName, noop.Names["inspect"]},
		"rescue":  {direct.InterfaceName, noop.Names["rescue"]},
		"network": {"flat", "noop"},
		"storage": {"noop"},
	}
	for _, kind := range []string{"bios", "console", "firmware", "raid", "vendor"} {
		m[kind] = []string{noop.Names[kind]}
	}
	// Ironic's AgentRAID needs an IPA with RAID support: no-raid stays first.
	m["raid"] = append(m["raid"], direct.InterfaceName)
	return m
}

// Registry builds the driver registry with the default hardware types and
// interfaces (network boot not configured).
func Registry(fk *fake.Hardware) *driver.Registry {
	return RegistryWith(Drivers{Fake: fk})
}

// RegistryWith builds the registry from the given implementations. It is
// for tests and tools whose Drivers.Interfaces is known to be valid: an
// invalid one panics. Serve uses BuildRegistry.
func RegistryWith(d Drivers) *driver.Registry {
	r, err := BuildRegistry(d)
	if err != nil {
		panic(fmt.Sprintf("hardware.RegistryWith: %v", err))
	}
	return r
}

// BuildRegistry registers every hardware type and interface Anvil has, then
// enables the operator's choice (d.Interfaces over the defaults): an unknown
// name, a default that is not enabled or a hardware type left without a
// default is an error.
//
// fake-hardware prefers its fake interfaces and accepts any enabled one (as
// Ironic's). ipmi and redfish drive power and management (redfish also
// inspection) through their BMCs, boot over the network (ipxe, pxe) and
// deploy through the agent (direct); they take a fake interface only when
// the operator enables it by name (emulators and demos: boot "fake" sets
// the boot device and leaves booting to the emulated machine).
func BuildRegistry(d Drivers) (*driver.Registry, error) {
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
	noop.Register(r)
	dd := direct.New(d.Agent)
	r.AddInterface("deploy", direct.Name, dd)
	r.AddInterface("deploy", direct.RamdiskName, dd.Ramdisk())
	r.AddInterface("deploy", direct.CustomAgentName, dd.CustomAgent())
	r.AddInterface("deploy", direct.AutodetectName, dd.Autodetect())
	r.AddInterface("deploy", direct.NoopName, dd.Noop())
	r.AddInterface("management", noop.ManagementName, &noop.Management{})
	r.AddInterface("inspect", direct.InterfaceName, dd.Inspector())
	r.AddInterface("rescue", direct.InterfaceName, dd.Rescuer())
	r.AddInterface("raid", direct.InterfaceName, dd.RAID())
	pcfg := pxe.Config{Publisher: d.Boot, KernelParams: d.KernelParams}
	r.AddInterface("boot", pxe.IPXE, pxe.New(pxe.IPXE, pcfg))
	r.AddInterface("boot", pxe.PXE, pxe.New(pxe.PXE, pcfg))
	r.AddInterface("boot", pxe.HTTPIPXE, pxe.New(pxe.HTTPIPXE, pcfg))
	r.AddInterface("boot", pxe.HTTP, pxe.New(pxe.HTTP, pcfg))
	rbcfg := redfish.BootConfig{Publisher: d.ISO, KernelParams: d.KernelParams}
	r.AddInterface("boot", redfish.VirtualMediaName, d.Redfish.NewVirtualMediaBoot(rbcfg))
	r.AddInterface("boot", redfish.HTTPSBootName, d.Redfish.NewHTTPSBoot(rbcfg))
	r.AddInterface("power", redfish.Name, d.Redfish)
	r.AddInterface("management", redfish.Name, d.Redfish)
	r.AddInterface("inspect", redfish.Name, d.Redfish)
	r.AddInterface("bios", redfish.Name, d.Redfish.BIOS())
	r.AddInterface("firmware", redfish.Name, d.Redfish.Firmware())
	r.AddInterface("vendor", redfish.Name, d.Redfish.NewVendor())
	rfRAID := d.Redfish.NewRAID()
	r.AddInterface("raid", redfish.Name, rfRAID)
	// idrac is redfish under Dell's interface names (Ironic's idrac
	// hardware type): its idrac-redfish power, management, inspect and bios
	// are the redfish implementations (RAID too, Ironic's DracRedfishRAID
	// being RedfishRAID), and it takes the redfish firmware interface (what
	// Metal3 sends). Its virtual media interfaces are not offered until they
	// are real.
	r.AddInterface("power", IDRACRedfish, d.Redfish)
	r.AddInterface("raid", IDRACRedfish, rfRAID)
	r.AddInterface("management", IDRACRedfish, d.Redfish)
	r.AddInterface("inspect", IDRACRedfish, d.Redfish)
	r.AddInterface("bios", IDRACRedfish, d.Redfish.BIOS())
	r.AddInterface("vendor", IDRACRedfish, d.Redfish.NewVendor())
	r.AddInterface("power", ipmi.Interface, d.IPMI)
	r.AddInterface("management", ipmi.Interface, d.IPMI)
	// IPMI Serial-over-LAN, held by the console service: Anvil's ipmi-sol
	// (a WebSocket on the API) and Ironic's ipmitool-socat (a TCP port).
	r.AddInterface("console", ipmi.SOLName, d.IPMI.Console(ipmi.SOLName))
	r.AddInterface("console", ipmi.SocatName, d.IPMI.Console(ipmi.SocatName))
	// redfish's serial console: the system's SerialConsole, over the IPMI
	// driver's Serial-over-LAN when the BMC offers IPMI.
	r.AddInterface("console", redfish.SerialName, d.Redfish.SerialConsole(
		func(ctx context.Context, host string, port int, user, password string) (io.ReadWriteCloser, error) {
			return d.IPMI.OpenSOL(ctx, ipmi.Endpoint{Address: host, Port: port, Username: user, Password: password})
		}))

	ht, _ := r.Registered(fake.Name)
	ht.Supported = fakeKinds()
	r.AddHardwareType(ht)
	// redfish prefers virtual media (Ironic lists it after ipxe and pxe):
	// no DHCP or PXE network needed, Metal3's default for Redfish BMCs.
	r.AddHardwareType(driver.HardwareType{Name: redfish.Name, Properties: withBoot(redfish.Properties(), redfish.BootProperties()), OptIn: optInFake(),
		Supported: withGeneric(map[string][]string{
			"boot":       {redfish.VirtualMediaName, pxe.IPXE, pxe.PXE, pxe.HTTPIPXE, pxe.HTTP, redfish.HTTPSBootName},
			"power":      {redfish.Name},
			"management": {redfish.Name},
			"inspect":    {redfish.Name, direct.InterfaceName, noop.Names["inspect"]},
			"bios":       {redfish.Name, noop.Names["bios"]},
			"firmware":   {redfish.Name, noop.Names["firmware"]},
			"vendor":     {redfish.Name, noop.Names["vendor"]},
			"raid":       {redfish.Name, noop.Names["raid"], direct.InterfaceName},
			// no-console first, as ipmi's; Ironic master's redfish also
			// takes ipmitool-socat (with ipmi_* driver_info).
			"console": {noop.Names["console"], redfish.SerialName, ipmi.SocatName},
		})})
	r.AddHardwareType(driver.HardwareType{Name: IDRAC, Properties: withBoot(redfish.Properties()), OptIn: optInFake(),
		Supported: withGeneric(map[string][]string{
			"power":      {IDRACRedfish},
			"management": {IDRACRedfish},
			"inspect":    {IDRACRedfish, direct.InterfaceName, noop.Names["inspect"]},
			"bios":       {IDRACRedfish, noop.Names["bios"]},
			"firmware":   {redfish.Name, noop.Names["firmware"]},
			"vendor":     {IDRACRedfish, noop.Names["vendor"]},
			"raid":       {IDRACRedfish, noop.Names["raid"], direct.InterfaceName},
		})})
	// manual-management (Ironic's ManualManagementHardware, enabled only by
	// --enabled-hardware-types): fake power (Ironic lists its agent power
	// first, which Anvil lacks) and noop management, the generic deploy
	// interfaces and noop.
	r.AddHardwareType(driver.HardwareType{Name: ManualManagement, Properties: withBoot(nil),
		Supported: withGeneric(map[string][]string{
			"power":      {fake.Interface},
			"management": {noop.ManagementName, fake.Interface},
			"deploy":     append(generic()["deploy"], direct.NoopName),
			"vendor":     {noop.Names["vendor"]},
		})})
	r.AddHardwareType(driver.HardwareType{Name: ipmi.Name, Properties: withBoot(ipmi.Properties()), OptIn: optInFake(),
		Supported: withGeneric(map[string][]string{
			"power":      {ipmi.Interface},
			"management": {ipmi.Interface},
			// no-console first: a node takes a console only when asked
			// for (Ironic's default, whose only enabled console interface
			// is no-console); Ironic lists ipmitool-socat first.
			"console": {noop.Names["console"], ipmi.SocatName, ipmi.SOLName},
		})})

	e := d.Interfaces
	if e.HardwareTypes == nil {
		e.HardwareTypes = DefaultHardwareTypes
	}
	if e.Base == nil {
		e.Base = DefaultInterfaces()
	}
	if err := r.Enable(e); err != nil {
		return nil, err
	}
	return r, nil
}

// fakeKinds is fake-hardware's preference: its fake interfaces first (and
// network noop, as Anvil has always defaulted), then the generic ones.
func fakeKinds() map[string][]string {
	m := fake.Kinds()
	for kind, list := range generic() {
		for _, name := range list {
			if !slices.Contains(m[kind], name) {
				m[kind] = append(m[kind], name)
			}
		}
	}
	return m
}

// withGeneric is the generic preference with a type's own lists in front.
func withGeneric(own map[string][]string) map[string][]string {
	m := generic()
	maps.Copy(m, own)
	return m
}

// optInFake offers the fake interface of every kind a real hardware type
// can take when the operator enables it by name.
func optInFake() map[string][]string {
	m := map[string][]string{}
	for _, kind := range model.InterfaceNames {
		if kind != "network" && kind != "storage" {
			m[kind] = []string{fake.Interface}
		}
	}
	return m
}

// withBoot adds the boot interfaces' driver_info keys: the network boot
// interfaces' and those of more.
func withBoot(props map[string]string, more ...map[string]string) map[string]string {
	out := maps.Clone(props)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, pxe.Properties())
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}
