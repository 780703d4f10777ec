package redfish

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// Inventory is what out-of-band inspection found.
type Inventory struct {
	CPUs     int      // logical processors (threads), as Ironic counts them
	CPUArch  string   // x86_64, aarch64, ...
	MemoryMB int      // total system memory
	LocalGB  int      // smallest disk of at least 4 GiB, in GiB, minus one (Ironic)
	MACs     []string // enabled NICs, lower case, in the BMC's order
}

// minDiskBytes is the smallest disk Ironic counts for local_gb.
const minDiskBytes = 4 << 30

// Inspect reads the system's processors, memory, disks and NICs, records
// cpus, cpu_arch, memory_mb and local_gb in the node's properties, and
// appends one new port (UUID "") per NIC not already among t.Ports.
//
// The conductor owns persistence: it saves the node's properties; creating
// the appended ports needs the conductor to store every Task.Ports entry
// with an empty UUID after Inspect returns Done.
func (d *Driver) Inspect(ctx context.Context, t *driver.Task) (driver.Result, error) {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return driver.Done, err
	}
	inv, err := ReadInventory(sys)
	if err != nil {
		return driver.Done, err
	}
	var missing []string
	if inv.CPUs == 0 {
		missing = append(missing, "cpus")
	}
	if inv.CPUArch == "" {
		missing = append(missing, "cpu_arch")
	}
	if inv.MemoryMB == 0 {
		missing = append(missing, "memory_mb")
	}
	if len(missing) > 0 {
		return driver.Done, fmt.Errorf("Failed to discover the following properties: %s on node %s", strings.Join(missing, ", "), t.Node.UUID)
	}
	inv.Apply(t)
	return driver.Done, nil
}

// Apply records inv in the node's properties and appends new ports.
func (inv Inventory) Apply(t *driver.Task) {
	n := t.Node
	if n.Properties == nil {
		n.Properties = model.JSON{}
	}
	n.Properties["cpus"] = inv.CPUs
	n.Properties["cpu_arch"] = inv.CPUArch
	n.Properties["memory_mb"] = inv.MemoryMB
	if inv.LocalGB > 0 {
		n.Properties["local_gb"] = inv.LocalGB
	}
	have := map[string]bool{}
	for _, p := range t.Ports {
		have[strings.ToLower(p.Address)] = true
	}
	for _, mac := range inv.MACs {
		if !have[mac] {
			have[mac] = true
			t.Ports = append(t.Ports, &model.Port{Address: mac, NodeUUID: n.UUID, PXEEnabled: true})
		}
	}
}

// ReadInventory walks a system's resources (gofish models).
func ReadInventory(sys *redfish.ComputerSystem) (Inventory, error) {
	var inv Inventory
	procs, err := sys.Processors()
	if err != nil {
		return inv, fmt.Errorf("reading processors of system %s: %w", sys.ID, err)
	}
	for _, p := range procs {
		if absent(p.Status) {
			continue
		}
		inv.CPUs += p.TotalThreads
		if inv.CPUArch == "" && (p.ProcessorType == "" || p.ProcessorType == redfish.CPUProcessorType) {
			inv.CPUArch = cpuArch(p.ProcessorArchitecture, p.InstructionSet)
		}
	}
	if inv.CPUs == 0 {
		inv.CPUs = sys.ProcessorSummary.LogicalProcessorCount
	}
	inv.MemoryMB = int(sys.MemorySummary.TotalSystemMemoryGiB * 1024)
	if inv.MemoryMB == 0 {
		mems, err := sys.Memory()
		if err != nil {
			return inv, fmt.Errorf("reading memory of system %s: %w", sys.ID, err)
		}
		for _, m := range mems {
			if !absent(m.Status) {
				inv.MemoryMB += m.CapacityMiB
			}
		}
	}
	disks, err := diskSizes(sys)
	if err != nil {
		return inv, err
	}
	for _, b := range disks {
		if b >= minDiskBytes {
			inv.LocalGB = int(b/(1<<30)) - 1
			break
		}
	}
	nics, err := sys.EthernetInterfaces()
	if err != nil {
		return inv, fmt.Errorf("reading NICs of system %s: %w", sys.ID, err)
	}
	sort.SliceStable(nics, func(i, j int) bool { return nics[i].ID < nics[j].ID })
	seen := map[string]bool{}
	for _, nic := range nics {
		mac := strings.ToLower(strings.TrimSpace(nic.MACAddress))
		if mac == "" || seen[mac] || (nic.Status.State != "" && nic.Status.State != common.EnabledState) {
			continue
		}
		seen[mac] = true
		inv.MACs = append(inv.MACs, mac)
	}
	return inv, nil
}

// diskSizes lists the sizes of present disks (SimpleStorage devices, Storage
// drives and volumes), smallest first.
func diskSizes(sys *redfish.ComputerSystem) ([]int64, error) {
	var sizes []int64
	simple, err := sys.SimpleStorages()
	if err != nil {
		return nil, fmt.Errorf("reading simple storage of system %s: %w", sys.ID, err)
	}
	for _, s := range simple {
		for _, dev := range s.Devices {
			if !absent(dev.Status) && dev.CapacityBytes > 0 {
				sizes = append(sizes, dev.CapacityBytes)
			}
		}
	}
	storages, err := sys.Storage()
	if err != nil {
		return nil, fmt.Errorf("reading storage of system %s: %w", sys.ID, err)
	}
	for _, s := range storages {
		drives, err := s.Drives()
		if err != nil {
			return nil, fmt.Errorf("reading drives of system %s: %w", sys.ID, err)
		}
		for _, dr := range drives {
			if !absent(dr.Status) && dr.CapacityBytes > 0 {
				sizes = append(sizes, dr.CapacityBytes)
			}
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	return sizes, nil
}

func absent(s common.Status) bool { return s.State == common.AbsentState }

// cpuArch maps Redfish's instruction set or architecture to Ironic's cpu_arch.
func cpuArch(arch redfish.ProcessorArchitecture, is redfish.InstructionSet) string {
	switch is {
	case redfish.X8664InstructionSet:
		return "x86_64"
	case redfish.X86InstructionSet:
		return "i686"
	case redfish.IA64InstructionSet:
		return "ia64"
	case redfish.ARMA64InstructionSet:
		return "aarch64"
	case redfish.ARMA32InstructionSet:
		return "arm"
	case redfish.MIPS64InstructionSet:
		return "mips64"
	case redfish.MIPS32InstructionSet:
		return "mips"
	case redfish.PowerISAInstructionSet:
		return "ppc64le"
	}
	switch arch {
	case redfish.X86ProcessorArchitecture:
		return "x86_64"
	case redfish.IA64ProcessorArchitecture:
		return "ia64"
	case redfish.ARMProcessorArchitecture:
		return "aarch64"
	case redfish.MIPSProcessorArchitecture:
		return "mips"
	case redfish.PowerProcessorArchitecture:
		return "ppc64le"
	}
	return ""
}
