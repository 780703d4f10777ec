package bmcemu

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// NodesFile is the enrolment file the emulator writes: the format of
// python-ironicclient's `baremetal create FILE` ({"nodes": [...]}), so the
// fleet enrols with one command. It holds BMC passwords: written 0600.
type NodesFile struct {
	Nodes []NodeEntry `json:"nodes"`
}

// NodeEntry is one node to create, with its ports.
type NodeEntry struct {
	Name       string         `json:"name"`
	Driver     string         `json:"driver"`
	DriverInfo map[string]any `json:"driver_info"`
	Extra      map[string]any `json:"extra,omitempty"`
	Ports      []PortEntry    `json:"ports"`
}

// PortEntry is a NIC of a node.
type PortEntry struct {
	Address    string `json:"address"`
	PXEEnabled bool   `json:"pxe_enabled"`
}

// Drivers the nodes file can be written for.
const (
	DriverRedfish = "redfish"
	DriverIPMI    = "ipmi"
)

// Nodes describes every machine for enrolment with hardware type drv
// ("redfish" or "ipmi"; ipmi needs the IPMI endpoints).
func (e *Emulator) Nodes(drv string) (NodesFile, error) {
	if drv != DriverRedfish && drv != DriverIPMI {
		return NodesFile{}, fmt.Errorf("nodes file driver must be %s or %s, not %q", DriverRedfish, DriverIPMI, drv)
	}
	if drv == DriverIPMI && !e.cfg.IPMI {
		return NodesFile{}, fmt.Errorf("nodes file for driver ipmi needs the IPMI endpoints (--ipmi)")
	}
	var f NodesFile
	for _, m := range e.machines {
		n := NodeEntry{Name: m.ID, Driver: drv, Extra: map[string]any{"bmc_emulator": e.bmcInfo(m)}}
		if drv == DriverRedfish {
			n.DriverInfo = map[string]any{
				"redfish_address": e.RedfishURL(m), "redfish_system_id": rfSystems + "/" + m.ID,
				"redfish_username": m.Username, "redfish_password": m.password,
			}
		} else {
			n.DriverInfo = map[string]any{
				"ipmi_address": e.cfg.IPMIHost, "ipmi_port": m.Status().IPMIPort,
				"ipmi_username": m.Username, "ipmi_password": m.password, "ipmi_cipher_suite": 3,
			}
		}
		for i, mac := range m.HW.MACs {
			n.Ports = append(n.Ports, PortEntry{Address: strings.ToLower(mac), PXEEnabled: i == 0})
		}
		f.Nodes = append(f.Nodes, n)
	}
	return f, nil
}

// bmcInfo is where a machine's BMCs answer (no credentials).
func (e *Emulator) bmcInfo(m *Machine) map[string]any {
	info := map[string]any{"redfish_address": e.RedfishURL(m), "redfish_system_id": rfSystems + "/" + m.ID}
	if p := m.Status().IPMIPort; p != 0 {
		info["ipmi_address"], info["ipmi_port"] = e.cfg.IPMIHost, p
	}
	return info
}

// WriteNodesFile writes Nodes(drv) as indented JSON to path, mode 0600.
func (e *Emulator) WriteNodesFile(path, drv string) error {
	f, err := e.Nodes(drv)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
