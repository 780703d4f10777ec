package bmcemu

import (
	"cmp"
	"fmt"
	"strings"
)

var enabledOK = map[string]any{"State": "Enabled", "Health": "OK"}

// resetTypes are the reset types every emulated system accepts.
var resetTypes = []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart",
	"Nmi", "ForceOn", "PushPowerButton", "PowerCycle"}

// systemJSON renders a ComputerSystem shaped like the DMTF mockup's.
func systemJSON(m *Machine) map[string]any {
	st := m.Status()
	hw := m.HW
	base := rfSystems + "/" + m.ID
	threads := hw.Sockets * hw.CoresPerSocket * hw.ThreadsPerCore
	return map[string]any{
		"@odata.type":  "#ComputerSystem.v1_20_0.ComputerSystem",
		"@odata.id":    base,
		"Id":           m.ID,
		"Name":         m.ID,
		"SystemType":   "Physical",
		"Manufacturer": "Anvil",
		"Model":        "Emulated 1U",
		"SerialNumber": serialOf(m),
		"BiosVersion":  m.firmwareVersion(FirmwareBIOS),
		"Bios":         odataID(base + "/Bios"),
		"UUID":         m.UUID,
		"Status":       map[string]any{"State": "Enabled", "Health": cmp.Or(st.Knobs.Health, "OK")},
		"PowerState":   st.Power,
		"Boot": map[string]any{
			"BootSourceOverrideEnabled":                        st.BootEnabled,
			"BootSourceOverrideTarget":                         st.BootTarget,
			"BootSourceOverrideTarget@Redfish.AllowableValues": []string{BootNone, BootPxe, BootCd, BootHdd, BootBios, BootUefiHttp},
			"BootSourceOverrideMode":                           st.BootMode,
			"HttpBootUri":                                      st.HTTPBootURI,
		},
		"ProcessorSummary": map[string]any{
			"Count": hw.Sockets, "CoreCount": hw.Sockets * hw.CoresPerSocket, "LogicalProcessorCount": threads,
			"Model": "Emulated CPU", "Status": enabledOK,
		},
		"MemorySummary": map[string]any{
			"TotalSystemMemoryGiB": float64(hw.DIMMs*hw.DIMMMiB) / 1024, "Status": enabledOK,
		},
		"SerialConsole":      serialConsoleJSON(st.IPMIPort),
		"Processors":         odataID(base + "/Processors"),
		"Memory":             odataID(base + "/Memory"),
		"EthernetInterfaces": odataID(base + "/EthernetInterfaces"),
		"SimpleStorage":      odataID(base + "/SimpleStorage"),
		"Storage":            odataID(base + "/Storage"),
		"VirtualMedia":       odataID(base + "/VirtualMedia"),
		"Links": map[string]any{
			"ManagedBy":             []any{odataID(rfManagers + "/" + m.ID)},
			"ManagedBy@odata.count": 1,
		},
		"Actions": map[string]any{"#ComputerSystem.Reset": map[string]any{
			"target":                            base + "/Actions/ComputerSystem.Reset",
			"ResetType@Redfish.AllowableValues": resetTypes,
		}},
	}
}

// serialConsoleJSON is the system's SerialConsole (DMTF ComputerSystem
// v1.13): IPMI Serial-over-LAN on the machine's IPMI endpoint when it has
// one (ipmiPort != 0); no SSH or Telnet console.
func serialConsoleJSON(ipmiPort int) map[string]any {
	ipmi := map[string]any{"ServiceEnabled": false}
	if ipmiPort != 0 {
		ipmi = map[string]any{"ServiceEnabled": true, "Port": ipmiPort, "SharedWithManagerCLI": false}
	}
	off := map[string]any{"ServiceEnabled": false}
	return map[string]any{"MaxConcurrentSessions": 1, "IPMI": ipmi, "SSH": off, "Telnet": off}
}

// inventoryJSON renders the sub-resources the redfish inspect interface reads.
func inventoryJSON(m *Machine, base string, sub []string) (map[string]any, bool) {
	hw := m.HW
	switch sub[0] {
	case "Processors":
		return indexed(base+"/Processors", "#ProcessorCollection.ProcessorCollection", "Processors Collection",
			"CPU", hw.Sockets, sub[1:], func(id string, i int) map[string]any {
				return map[string]any{
					"@odata.type": "#Processor.v1_18_0.Processor", "Id": id, "Name": "Processor",
					"Socket": fmt.Sprintf("CPU %d", i), "ProcessorType": "CPU", "ProcessorArchitecture": hw.Arch,
					"InstructionSet": instructionSet(hw.Arch), "Manufacturer": "Anvil", "Model": "Emulated CPU",
					"MaxSpeedMHz": 3000, "TotalCores": hw.CoresPerSocket, "TotalThreads": hw.CoresPerSocket * hw.ThreadsPerCore,
					"Status": enabledOK,
				}
			})
	case "Memory":
		return indexed(base+"/Memory", "#MemoryCollection.MemoryCollection", "Memory Module Collection",
			"DIMM", hw.DIMMs, sub[1:], func(id string, i int) map[string]any {
				return map[string]any{
					"@odata.type": "#Memory.v1_17_0.Memory", "Id": id, "Name": fmt.Sprintf("DIMM Slot %d", i),
					"CapacityMiB": hw.DIMMMiB, "MemoryType": "DRAM", "MemoryDeviceType": "DDR4",
					"BaseModuleType": "RDIMM", "Status": enabledOK,
				}
			})
	case "SimpleStorage":
		return indexed(base+"/SimpleStorage", "#SimpleStorageCollection.SimpleStorageCollection",
			"Simple Storage Collection", "", 1, sub[1:], func(id string, _ int) map[string]any {
				devs := []any{}
				for i, b := range hw.DisksBytes {
					devs = append(devs, map[string]any{"Name": fmt.Sprintf("SATA Bay %d", i+1), "Manufacturer": "Anvil",
						"Model": "Emulated Disk", "CapacityBytes": b, "Status": enabledOK})
				}
				return map[string]any{"@odata.type": "#SimpleStorage.v1_3_0.SimpleStorage", "Id": id,
					"Name": "Simple Storage Controller", "Description": "System SATA", "Status": enabledOK, "Devices": devs}
			})
	case "EthernetInterfaces":
		return nicsJSON(base+"/EthernetInterfaces", hw.MACs, sub[1:])
	}
	return nil, false
}

// indexed renders a collection of n members <prefix>1..n, or member sub[0].
func indexed(id, typ, name, prefix string, n int, sub []string, member func(id string, i int) map[string]any) (map[string]any, bool) {
	if len(sub) == 0 {
		var ms []any
		for i := 1; i <= n; i++ {
			ms = append(ms, odataID(fmt.Sprintf("%s/%s%d", id, prefix, i)))
		}
		return collection(typ, name, id, ms), true
	}
	if len(sub) > 1 {
		return nil, false
	}
	for i := 1; i <= n; i++ {
		mid := fmt.Sprintf("%s%d", prefix, i)
		if sub[0] == mid {
			body := member(mid, i)
			body["@odata.id"] = id + "/" + mid
			return body, true
		}
	}
	return nil, false
}

func nicsJSON(id string, macs []string, sub []string) (map[string]any, bool) {
	nicID := func(mac string) string { return strings.ToUpper(strings.ReplaceAll(mac, ":", "")) }
	if len(sub) == 0 {
		var ms []any
		for _, mac := range macs {
			ms = append(ms, odataID(id+"/"+nicID(mac)))
		}
		return collection("#EthernetInterfaceCollection.EthernetInterfaceCollection", "Ethernet Interface Collection", id, ms), true
	}
	for i, mac := range macs {
		if len(sub) == 1 && sub[0] == nicID(mac) {
			return map[string]any{
				"@odata.type": "#EthernetInterface.v1_6_0.EthernetInterface", "@odata.id": id + "/" + sub[0],
				"Id": sub[0], "Name": "Ethernet Interface", "Description": fmt.Sprintf("System NIC %d", i+1),
				"Status": enabledOK, "EthernetInterfaceType": "Physical", "InterfaceEnabled": true, "LinkStatus": "LinkUp",
				"PermanentMACAddress": strings.ToUpper(mac), "MACAddress": strings.ToUpper(mac), "SpeedMbps": 10000, "FullDuplex": true,
			}, true
		}
	}
	return nil, false
}

func instructionSet(arch string) string {
	switch arch {
	case "x86":
		return "x86-64"
	case "ARM":
		return "ARM-A64"
	}
	return "OEM"
}

// serialOf is the machine's serial number (SerialNumber, the BIOS's
// SystemServiceTag).
func serialOf(m *Machine) string {
	return strings.ToUpper(strings.ReplaceAll(m.UUID[:13], "-", ""))
}
