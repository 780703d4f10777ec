package disk

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Device is one disk an image may be written to, with the attributes root
// device hints match (IPA's BlockDevice).
type Device struct {
	Name               string `json:"name"` // /dev/sda, or a file disk's path
	Size               int64  `json:"size"` // bytes
	Model              string `json:"model"`
	Vendor             string `json:"vendor"`
	Serial             string `json:"serial"`
	WWN                string `json:"wwn"`
	WWNWithExtension   string `json:"wwn_with_extension"`
	WWNVendorExtension string `json:"wwn_vendor_extension"`
	HCTL               string `json:"hctl"`
	ByPath             string `json:"by_path"`
	Tran               string `json:"tran"`
	Rotational         bool   `json:"rotational"`
}

// attr is the string attribute a hint of that name matches.
func (d Device) attr(name string) string {
	switch name {
	case "name":
		return d.Name
	case "model":
		return d.Model
	case "vendor":
		return d.Vendor
	case "serial":
		return d.Serial
	case "wwn":
		return d.WWN
	case "wwn_with_extension":
		return d.WWNWithExtension
	case "wwn_vendor_extension":
		return d.WWNVendorExtension
	case "hctl":
		return d.HCTL
	case "by_path":
		return d.ByPath
	case "tran":
		return d.Tran
	}
	return ""
}

var hctlRE = regexp.MustCompile(`^\d+:\d+:\d+:\d+$`)

// Discover lists the whole disks under root's /sys/block ("" for the real
// one), in name order, as IPA's list_block_devices does: no partitions,
// loop, ram, zram, floppy, optical, device-mapper, nbd or removable
// devices, none of size 0. Attributes come from sysfs and from the udev
// database (root/run/udev/data/b<major>:<minor>: ID_SERIAL_SHORT, ID_WWN,
// ID_WWN_WITH_EXTENSION, ID_WWN_VENDOR_EXTENSION), by_path from
// root/dev/disk/by-path.
func Discover(root string) ([]Device, error) {
	if root == "" {
		root = "/"
	}
	sys := filepath.Join(root, "sys/block")
	ents, err := os.ReadDir(sys)
	if err != nil {
		return nil, fmt.Errorf("disk: list disks: %w", err)
	}
	read := func(name, file string) string {
		b, _ := os.ReadFile(filepath.Join(sys, name, file))
		return strings.TrimSpace(string(b))
	}
	byPath := byPathLinks(root)
	var out []Device
	for _, e := range ents {
		n := e.Name()
		if hasAnyPrefix(n, "loop", "ram", "zram", "fd", "sr", "dm-", "nbd") || read(n, "removable") == "1" {
			continue
		}
		sectors, _ := strconv.ParseInt(read(n, "size"), 10, 64)
		if sectors <= 0 {
			continue
		}
		udev := udevProps(root, read(n, "dev"))
		d := Device{
			Name: "/dev/" + n, Size: sectors * 512,
			Model: read(n, "device/model"), Vendor: read(n, "device/vendor"),
			Serial:             firstNonEmpty(udev["ID_SERIAL_SHORT"], udev["ID_SERIAL"], read(n, "device/serial")),
			WWN:                udev["ID_WWN"],
			WWNWithExtension:   udev["ID_WWN_WITH_EXTENSION"],
			WWNVendorExtension: udev["ID_WWN_VENDOR_EXTENSION"],
			Rotational:         read(n, "queue/rotational") == "1",
			ByPath:             byPath[n],
		}
		if target, err := os.Readlink(filepath.Join(sys, n, "device")); err == nil && hctlRE.MatchString(filepath.Base(target)) {
			d.HCTL = filepath.Base(target)
		}
		out = append(out, d)
	}
	return out, nil
}

// udevProps reads the udev database entry of a block device ("8:0").
func udevProps(root, devnum string) map[string]string {
	props := map[string]string{}
	if devnum == "" {
		return props
	}
	f, err := os.Open(filepath.Join(root, "run/udev/data", "b"+devnum))
	if err != nil {
		return props
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "E:"); ok {
			if k, v, ok := strings.Cut(kv, "="); ok {
				props[k] = v
			}
		}
	}
	return props
}

// byPathLinks maps a disk's kernel name to its /dev/disk/by-path link.
func byPathLinks(root string) map[string]string {
	dir := filepath.Join(root, "dev/disk/by-path")
	ents, _ := os.ReadDir(dir)
	out := map[string]string{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if _, seen := out[filepath.Base(target)]; !seen {
			out[filepath.Base(target)] = "/dev/disk/by-path/" + e.Name()
		}
	}
	return out
}

// FileDisk describes a regular file used as a disk (tests, demos):
// "PATH[,key=value...]" with keys model, vendor, serial, wwn,
// wwn_with_extension, wwn_vendor_extension, hctl, by_path, tran and
// rotational (true/false). The size is the file's.
func FileDisk(spec string) (Device, error) {
	parts := strings.Split(spec, ",")
	d := Device{Name: parts[0]}
	st, err := os.Stat(d.Name)
	if err != nil {
		return Device{}, fmt.Errorf("disk %s: %w", d.Name, err)
	}
	d.Size = st.Size()
	if !st.Mode().IsRegular() {
		if f, err := os.Open(d.Name); err == nil {
			d.Size, _ = Size(f)
			f.Close()
		}
	}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Device{}, fmt.Errorf("disk %s: attribute %q is not key=value", d.Name, kv)
		}
		switch k {
		case "model":
			d.Model = v
		case "vendor":
			d.Vendor = v
		case "serial":
			d.Serial = v
		case "wwn":
			d.WWN = v
		case "wwn_with_extension":
			d.WWNWithExtension = v
		case "wwn_vendor_extension":
			d.WWNVendorExtension = v
		case "hctl":
			d.HCTL = v
		case "by_path":
			d.ByPath = v
		case "tran":
			d.Tran = v
		case "rotational":
			b, ok := parseBool(v)
			if !ok {
				return Device{}, fmt.Errorf("disk %s: rotational=%q is not a Boolean", d.Name, v)
			}
			d.Rotational = b
		default:
			return Device{}, fmt.Errorf("disk %s: unknown attribute %q", d.Name, k)
		}
	}
	return d, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
