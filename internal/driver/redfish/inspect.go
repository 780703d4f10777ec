package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"

	"github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// Inventory is what out-of-band inspection found. Zero values are unknown.
type Inventory struct {
	CPUs     int      // logical processors (threads), as Ironic counts them
	CPUArch  string   // x86_64, aarch64, ...
	MemoryMB int      // total system memory
	LocalGB  int      // Ironic's local_gb (see localGB); 0: disk-less or unknown
	MACs     []string // enabled NICs, lower case, in the BMC's order
}

// minDiskBytes is the smallest disk Ironic counts for local_gb.
const minDiskBytes = 4 << 30

// Missing lists, sorted, the essential properties inv lacks: Ironic's
// InspectInterface.ESSENTIAL_PROPERTIES (memory_mb, local_gb, cpu_arch),
// where local_gb is always known (0 for a disk-less node, as Ironic).
func (inv Inventory) Missing() []string {
	var missing []string
	if inv.CPUArch == "" {
		missing = append(missing, "cpu_arch")
	}
	if inv.MemoryMB <= 0 {
		missing = append(missing, "memory_mb")
	}
	return missing
}

// Inspect reads the system's processors, memory, disks and NICs, records
// cpus (when known), cpu_arch, memory_mb and local_gb in the node's
// properties, and appends one new port (UUID "") per NIC not already among
// t.Ports.
//
// Like Ironic's redfish inspection, every resource but the system itself is
// optional: summaries are read first (MemorySummary, ProcessorSummary), and
// absent or failing collections (Memory, Processors, Storage, SimpleStorage,
// EthernetInterfaces, NetworkInterfaces) leave their part unknown. Only an
// essential property left unknown (Missing) fails the inspection, with
// Ironic's message, and then nothing is recorded. A refused login or an
// unreachable BMC fails it too.
//
// It also stores the inventory in IPA's format (ipaInventory) and empty
// plugin data in driver_internal_info, as Ironic's redfish inspection does
// since 2023.2, so GET /v1/nodes/{node}/inventory answers after it.
//
// The conductor owns persistence: it saves the node's properties; creating
// the appended ports needs the conductor to store every Task.Ports entry
// with an empty UUID after Inspect returns Done.
func (d *Driver) Inspect(ctx context.Context, t *driver.Task) (driver.Result, error) {
	sys, err := d.system(ctx, t.Node)
	if err != nil {
		return driver.Done, err
	}
	log := d.cfg.Log.With("node", t.Node.UUID)
	inv, err := ReadInventory(sys, log)
	if err != nil {
		return driver.Done, err
	}
	if missing := inv.Missing(); len(missing) > 0 {
		return driver.Done, fmt.Errorf("Failed to discover the following properties: %s on node %s", strings.Join(missing, ", "), t.Node.UUID)
	}
	inv.Apply(t)
	if t.Node.DriverInternalInfo == nil {
		t.Node.DriverInternalInfo = model.JSON{}
	}
	t.Node.DriverInternalInfo[driver.KeyInventory] = ipaInventory(sys, inv, log)
	t.Node.DriverInternalInfo[driver.KeyPluginData] = map[string]any{}
	return driver.Done, nil
}

// Inventory reads what the BMC tells of the node's hardware, without
// judging it (Inspect does).
func (d *Driver) Inventory(ctx context.Context, n *model.Node) (Inventory, error) {
	sys, err := d.system(ctx, n)
	if err != nil {
		return Inventory{}, err
	}
	return ReadInventory(sys, d.cfg.Log.With("node", n.UUID))
}

// Apply records inv in the node's properties and appends new ports.
func (inv Inventory) Apply(t *driver.Task) {
	n := t.Node
	if n.Properties == nil {
		n.Properties = model.JSON{}
	}
	if inv.CPUs > 0 {
		n.Properties["cpus"] = inv.CPUs
	}
	n.Properties["cpu_arch"] = inv.CPUArch
	n.Properties["memory_mb"] = inv.MemoryMB
	n.Properties["local_gb"] = inv.LocalGB
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

// optional decides about an error reading an optional resource: a refused
// login, an unreachable BMC or a cancelled operation is returned (the
// inspection fails); anything else (404, 501, 500, a malformed body) is
// logged and the part stays unknown (nil).
func optional(log *slog.Logger, what string, err error) error {
	if err == nil {
		return nil
	}
	if fatal(err) {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	log.Debug("redfish inspection: optional resource unavailable", "resource", what, "err", err)
	return nil
}

// fatal reports whether err (or any failure in a gofish collection error)
// is one no other resource of the BMC would avoid.
func fatal(err error) bool {
	var ce *common.CollectionError
	if errors.As(err, &ce) {
		for _, e := range ce.Failures {
			if fatal(e) {
				return true
			}
		}
		return false
	}
	return errors.Is(err, ErrAuth) || errors.Is(err, ErrUnreachable) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ReadInventory walks a system's resources (gofish models); log receives
// what was skipped.
func ReadInventory(sys *redfish.ComputerSystem, log *slog.Logger) (Inventory, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var inv Inventory
	steps := []func(*redfish.ComputerSystem, *slog.Logger, *Inventory) error{readCPUs, readMemory, readDisks, readNICs}
	for _, step := range steps {
		if err := step(sys, log, &inv); err != nil {
			return inv, fmt.Errorf("inspecting system %s: %w", sys.ID, err)
		}
	}
	return inv, nil
}

// readCPUs counts threads and finds the architecture in the Processors
// collection (as sushy's ProcessorCollection.summary), falling back to
// ProcessorSummary for the count.
func readCPUs(sys *redfish.ComputerSystem, log *slog.Logger, inv *Inventory) error {
	procs, err := sys.Processors()
	if err := optional(log, "processors", err); err != nil {
		return err
	}
	for _, p := range procs {
		if p == nil || absent(p.Status) {
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
	if inv.CPUs == 0 {
		inv.CPUs = sys.ProcessorSummary.Count
	}
	return nil
}

// readMemory takes MemorySummary.TotalSystemMemoryGiB (what Ironic reads),
// else the sum of the Memory collection's DIMMs when the BMC has one.
func readMemory(sys *redfish.ComputerSystem, log *slog.Logger, inv *Inventory) error {
	inv.MemoryMB = int(sys.MemorySummary.TotalSystemMemoryGiB * 1024)
	if inv.MemoryMB > 0 {
		return nil
	}
	mems, err := sys.Memory()
	if err := optional(log, "memory", err); err != nil {
		return err
	}
	for _, m := range mems {
		if m != nil && !absent(m.Status) {
			inv.MemoryMB += m.CapacityMiB
		}
	}
	return nil
}

// readDisks computes local_gb as Ironic's _detect_local_gb: the smallest
// SimpleStorage device of at least 4 GiB, and the smallest Storage volume of
// at least 4 GiB (else drive); the smaller of the two when both exist; in
// GiB minus one; 0 when there is none.
func readDisks(sys *redfish.ComputerSystem, log *slog.Logger, inv *Inventory) error {
	var simple []int64
	simples, err := sys.SimpleStorages()
	if err := optional(log, "simple storage", err); err != nil {
		return err
	}
	for _, s := range simples {
		for _, dev := range s.Devices {
			if !absent(dev.Status) {
				simple = append(simple, dev.CapacityBytes)
			}
		}
	}
	var volumes, drives []int64
	storages, err := sys.Storage()
	if err := optional(log, "storage", err); err != nil {
		return err
	}
	for _, s := range storages {
		if s == nil {
			continue
		}
		vols, err := s.Volumes()
		if err := optional(log, "volumes", err); err != nil {
			return err
		}
		for _, v := range vols {
			if v != nil && !absent(v.Status) {
				volumes = append(volumes, int64(v.CapacityBytes))
			}
		}
		drs, err := s.Drives()
		if err := optional(log, "drives", err); err != nil {
			return err
		}
		for _, dr := range drs {
			if dr != nil && !absent(dr.Status) {
				drives = append(drives, dr.CapacityBytes)
			}
		}
	}
	simpleSize := smallestDisk(simple)
	storageSize := smallestDisk(volumes)
	if storageSize == 0 {
		storageSize = smallestDisk(drives)
	}
	size := max(simpleSize, storageSize)
	if simpleSize > 0 && storageSize > 0 {
		size = min(simpleSize, storageSize)
	}
	inv.LocalGB = max(0, int(size/(1<<30))-1)
	return nil
}

// smallestDisk is the smallest size of at least minDiskBytes, or 0.
func smallestDisk(sizes []int64) int64 {
	var best int64
	for _, s := range sizes {
		if s >= minDiskBytes && (best == 0 || s < best) {
			best = s
		}
	}
	return best
}

// readNICs lists MACs of the EthernetInterfaces collection, or, when the
// system has none, of its NetworkInterfaces' device functions.
func readNICs(sys *redfish.ComputerSystem, log *slog.Logger, inv *Inventory) error {
	nics, err := sys.EthernetInterfaces()
	if err := optional(log, "ethernet interfaces", err); err != nil {
		return err
	}
	sort.SliceStable(nics, func(i, j int) bool { return nics[i].ID < nics[j].ID })
	seen := map[string]bool{}
	add := func(raw string, st common.Status) {
		mac, ok := normalMAC(raw)
		if !ok || seen[mac] || (st.State != "" && st.State != common.EnabledState) {
			return
		}
		seen[mac] = true
		inv.MACs = append(inv.MACs, mac)
	}
	for _, nic := range nics {
		if nic != nil {
			add(nic.MACAddress, nic.Status)
		}
	}
	if len(inv.MACs) > 0 {
		return nil
	}
	ifaces, err := sys.NetworkInterfaces()
	if err := optional(log, "network interfaces", err); err != nil {
		return err
	}
	for _, iface := range ifaces {
		if iface == nil {
			continue
		}
		fns, err := deviceFunctions(sys.GetClient(), iface.ODataID)
		if err := optional(log, "network device functions", err); err != nil {
			return err
		}
		for _, fn := range fns {
			mac := fn.Ethernet.MACAddress
			if mac == "" {
				mac = fn.Ethernet.PermanentMACAddress
			}
			add(mac, fn.Status)
		}
	}
	return nil
}

// deviceFunctions reads the NetworkDeviceFunctions of a NetworkInterface.
// The schema links a collection ({"@odata.id": ...}), which gofish v0.20's
// NetworkInterface cannot follow (it expects the members inline), so the
// link is read here.
func deviceFunctions(c common.Client, ifacePath string) ([]*redfish.NetworkDeviceFunction, error) {
	resp, err := c.Get(ifacePath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var raw struct {
		NetworkDeviceFunctions struct {
			ID string `json:"@odata.id"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || raw.NetworkDeviceFunctions.ID == "" {
		return nil, err
	}
	col, err := common.GetCollection(c, raw.NetworkDeviceFunctions.ID)
	if err != nil {
		return nil, err
	}
	links := append([]string(nil), col.ItemLinks...)
	sort.Strings(links)
	var fns []*redfish.NetworkDeviceFunction
	for _, l := range links {
		fn, err := redfish.GetNetworkDeviceFunction(c, l)
		if err != nil {
			return fns, err
		}
		fns = append(fns, fn)
	}
	return fns, nil
}

// normalMAC lower-cases a 6-byte MAC, rejecting anything else (Ironic skips
// addresses that are not valid MACs).
func normalMAC(s string) (string, bool) {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
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
