package ramdisk

import (
	"bytes"
	"debug/elf"
	"fmt"
	"strings"
)

// ModInfo is what a kernel module's .modinfo section says about it (what
// modinfo(8) prints and depmod(8) reads).
type ModInfo struct {
	Name     string   // canonical name: the file name without .ko, '-' as '_'
	Version  string   // kernel release from vermagic, e.g. 6.1.0-57-amd64
	Depends  []string // modules it needs loaded first (canonical names)
	SoftPre  []string // softdep "pre:" modules, loaded first when present
	Aliases  []string // modalias patterns (fnmatch) it drives
	Firmware []string // firmware files it may request, relative to /lib/firmware
}

// ReadModInfo reads the .modinfo section of the uncompressed module at path.
func ReadModInfo(path string) (ModInfo, error) {
	f, err := elf.Open(path)
	if err != nil {
		return ModInfo{}, fmt.Errorf("module %s: %w", path, err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return ModInfo{}, fmt.Errorf("module %s has no .modinfo section", path)
	}
	b, err := s.Data()
	if err != nil {
		return ModInfo{}, fmt.Errorf("module %s: .modinfo: %w", path, err)
	}
	mi := ParseModInfo(b)
	if mi.Name == "" {
		mi.Name = moduleName(path)
	}
	return mi, nil
}

// ParseModInfo parses a .modinfo section: NUL-separated key=value strings.
func ParseModInfo(b []byte) ModInfo {
	var mi ModInfo
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok {
			continue
		}
		switch k {
		case "name":
			mi.Name = CanonicalName(v)
		case "vermagic":
			mi.Version, _, _ = strings.Cut(strings.TrimSpace(v), " ")
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d = strings.TrimSpace(d); d != "" {
					mi.Depends = append(mi.Depends, CanonicalName(d))
				}
			}
		case "softdep":
			mi.SoftPre = append(mi.SoftPre, parseSoftdepPre(v)...)
		case "alias":
			if v != "" {
				mi.Aliases = append(mi.Aliases, v)
			}
		case "firmware":
			mi.Firmware = append(mi.Firmware, v)
		}
	}
	return mi
}

// parseSoftdepPre returns the "pre:" modules of a softdep value such as
// "pre: crc32c post: foo".
func parseSoftdepPre(v string) []string {
	var out []string
	pre := false
	for _, w := range strings.Fields(v) {
		switch w {
		case "pre:":
			pre = true
		case "post:":
			pre = false
		default:
			if pre {
				out = append(out, CanonicalName(w))
			}
		}
	}
	return out
}

// CanonicalName is a module name as the kernel knows it: "nvme-core" and
// "nvme_core" are the same module.
func CanonicalName(name string) string { return strings.ReplaceAll(name, "-", "_") }
