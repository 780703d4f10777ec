package agent

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Inventory is the hardware an agent reports (a subset of IPA's).
type Inventory struct {
	CPU          CPU         `json:"cpu"`
	Memory       Memory      `json:"memory"`
	Disks        []Disk      `json:"disks"`
	Interfaces   []Interface `json:"interfaces"`
	SystemVendor Vendor      `json:"system_vendor"`
	Boot         Boot        `json:"boot"`
}

// CPU summary.
type CPU struct {
	ModelName    string `json:"model_name"`
	Count        int    `json:"count"`
	Architecture string `json:"architecture"`
}

// Memory summary.
type Memory struct {
	Total      int64 `json:"total"`
	PhysicalMB int64 `json:"physical_mb"`
}

// Disk is one block device.
type Disk struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	Rotational bool   `json:"rotational"`
	Serial     string `json:"serial,omitempty"`
}

// Interface is one NIC.
type Interface struct {
	Name       string `json:"name"`
	MACAddress string `json:"mac_address"`
	HasCarrier bool   `json:"has_carrier"`
}

// Vendor is the DMI system identity.
type Vendor struct {
	Manufacturer string `json:"manufacturer"`
	ProductName  string `json:"product_name"`
	SerialNumber string `json:"serial_number"`
}

// Boot is the firmware boot mode.
type Boot struct {
	CurrentBootMode string `json:"current_boot_mode"`
}

// ReadInventory reads /proc and /sys under root ("" for the real ones). A
// disk given as a regular file is reported as one more disk.
func ReadInventory(root, disk string) (*Inventory, error) {
	inv := &Inventory{}
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(root, p))
		return strings.TrimSpace(string(b))
	}
	inv.CPU.Architecture = read("/proc/sys/kernel/arch") // uname -m
	if inv.CPU.Architecture == "" {
		inv.CPU.Architecture = unameArch(runtime.GOARCH)
	}
	if f, err := os.Open(filepath.Join(root, "/proc/cpuinfo")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case ok && k == "processor":
				inv.CPU.Count++
			case ok && k == "model name" && inv.CPU.ModelName == "":
				inv.CPU.ModelName = v
			}
		}
		f.Close()
	}
	for _, line := range strings.Split(read("/proc/meminfo"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			inv.Memory.Total, inv.Memory.PhysicalMB = kb*1024, kb/1024
		}
	}
	blocks, _ := os.ReadDir(filepath.Join(root, "/sys/block"))
	for _, b := range blocks {
		name := b.Name()
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
			continue
		}
		sectors, _ := strconv.ParseInt(read("/sys/block/"+name+"/size"), 10, 64)
		inv.Disks = append(inv.Disks, Disk{Name: "/dev/" + name, Size: sectors * 512,
			Rotational: read("/sys/block/"+name+"/queue/rotational") == "1",
			Serial:     read("/sys/block/" + name + "/device/serial")})
	}
	if st, err := os.Stat(disk); err == nil && st.Mode().IsRegular() {
		inv.Disks = append(inv.Disks, Disk{Name: disk, Size: st.Size()})
	}
	nets, _ := os.ReadDir(filepath.Join(root, "/sys/class/net"))
	for _, n := range nets {
		if n.Name() == "lo" {
			continue
		}
		dir := "/sys/class/net/" + n.Name()
		inv.Interfaces = append(inv.Interfaces, Interface{Name: n.Name(), MACAddress: read(dir + "/address"),
			HasCarrier: read(dir+"/carrier") == "1"})
	}
	inv.SystemVendor = Vendor{Manufacturer: read("/sys/class/dmi/id/sys_vendor"),
		ProductName: read("/sys/class/dmi/id/product_name"), SerialNumber: read("/sys/class/dmi/id/product_serial")}
	inv.Boot.CurrentBootMode = "bios"
	if _, err := os.Stat(filepath.Join(root, "/sys/firmware/efi")); err == nil {
		inv.Boot.CurrentBootMode = "uefi"
	}
	return inv, nil
}

// unameArch maps a Go architecture to the kernel's (uname -m) name.
func unameArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	case "ppc64le", "s390x", "riscv64":
		return goarch
	}
	return goarch
}
