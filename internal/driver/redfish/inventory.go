package redfish

import (
	"log/slog"
	"sort"

	"github.com/stmcginnis/gofish/redfish"
)

// ipaInventory renders what the BMC tells of a system in IPA's inventory
// format, as Ironic's redfish inspection stores it since 2023.2 (what GET
// /v1/nodes/{node}/inventory serves and Metal3 reads): cpu (count,
// architecture, model_name, frequency), memory (physical_mb), disks (name,
// size: Storage drives, else SimpleStorage devices), interfaces
// (mac_address, name, speed_mbps), system_vendor and boot
// (current_boot_mode). inv is what ReadInventory found; every resource read
// here is optional, as there (a failure leaves its part out).
func ipaInventory(sys *redfish.ComputerSystem, inv Inventory, log *slog.Logger) map[string]any {
	cpu := map[string]any{"count": inv.CPUs, "architecture": inv.CPUArch}
	if procs, err := sys.Processors(); err == nil && len(procs) > 0 {
		sort.SliceStable(procs, func(i, j int) bool { return procs[i].ID < procs[j].ID })
		if p := procs[0]; p != nil {
			if p.Model != "" {
				cpu["model_name"] = p.Model
			}
			if p.MaxSpeedMHz > 0 {
				cpu["frequency"] = int(p.MaxSpeedMHz)
			}
		}
	} else if err != nil {
		log.Debug("redfish inventory: processors unavailable", "err", err)
	}
	out := map[string]any{"cpu": cpu, "interfaces": ipaInterfaces(sys, log)}
	if inv.MemoryMB > 0 {
		out["memory"] = map[string]any{"physical_mb": inv.MemoryMB}
	}
	if disks, ok := ipaDisks(sys, log); ok {
		out["disks"] = disks
	}
	vendor := map[string]any{}
	for k, v := range map[string]string{"product_name": sys.Model, "serial_number": sys.SerialNumber,
		"manufacturer": sys.Manufacturer, "system_uuid": sys.UUID} {
		if v != "" {
			vendor[k] = v
		}
	}
	if len(vendor) > 0 {
		out["system_vendor"] = vendor
	}
	switch sys.Boot.BootSourceOverrideMode {
	case redfish.UEFIBootSourceOverrideMode:
		out["boot"] = map[string]any{"current_boot_mode": BootModeUEFI}
	case redfish.LegacyBootSourceOverrideMode:
		out["boot"] = map[string]any{"current_boot_mode": BootModeBIOS}
	}
	return out
}

// ipaDisks lists Storage drives, else SimpleStorage devices; ok is false
// when the system has neither (Ironic then leaves "disks" out).
func ipaDisks(sys *redfish.ComputerSystem, log *slog.Logger) ([]any, bool) {
	disks := []any{}
	storages, err := sys.Storage()
	if err != nil {
		log.Debug("redfish inventory: storage unavailable", "err", err)
	}
	for _, s := range storages {
		if s == nil {
			continue
		}
		drives, err := s.Drives()
		if err != nil {
			log.Debug("redfish inventory: drives unavailable", "storage", s.ID, "err", err)
		}
		for _, d := range drives {
			if d != nil && !absent(d.Status) {
				disks = append(disks, map[string]any{"name": d.Name, "size": d.CapacityBytes})
			}
		}
	}
	if len(storages) > 0 {
		return disks, true
	}
	simples, err := sys.SimpleStorages()
	if err != nil || len(simples) == 0 {
		return nil, false
	}
	for _, s := range simples {
		for _, d := range s.Devices {
			if !absent(d.Status) {
				disks = append(disks, map[string]any{"name": d.Name, "size": d.CapacityBytes})
			}
		}
	}
	return disks, true
}

// ipaInterfaces lists the EthernetInterfaces with a valid MAC.
func ipaInterfaces(sys *redfish.ComputerSystem, log *slog.Logger) []any {
	out := []any{}
	nics, err := sys.EthernetInterfaces()
	if err != nil {
		log.Debug("redfish inventory: ethernet interfaces unavailable", "err", err)
		return out
	}
	sort.SliceStable(nics, func(i, j int) bool { return nics[i].ID < nics[j].ID })
	for _, nic := range nics {
		if nic == nil {
			continue
		}
		mac, ok := normalMAC(nic.MACAddress)
		if !ok {
			continue
		}
		intf := map[string]any{"mac_address": mac, "name": nic.ID}
		if nic.SpeedMbps > 0 {
			intf["speed_mbps"] = nic.SpeedMbps
		}
		out = append(out, intf)
	}
	return out
}
