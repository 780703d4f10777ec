package disk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureRoot lays out /sys/block, the udev database and /dev/disk/by-path
// of a machine with a SATA HDD (sda), an NVMe SSD, a loop device, a CD-ROM,
// a removable stick and an empty device; only sda and nvme0n1 are disks.
func fixtureRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	// sda: its device link ends in the SCSI address (hctl).
	write("sys/devices/pci0000:00/ata1/host0/target0:0:0/0:0:0:0/model", "ST1000DM003")
	write("sys/devices/pci0000:00/ata1/host0/target0:0:0/0:0:0:0/vendor", "ATA")
	link("../../devices/pci0000:00/ata1/host0/target0:0:0/0:0:0:0", "sys/block/sda/device")
	write("sys/block/sda/size", "1953525168")
	write("sys/block/sda/dev", "8:0")
	write("sys/block/sda/queue/rotational", "1")
	write("sys/block/sda/removable", "0")
	write("run/udev/data/b8:0", "S:disk/by-id/wwn-0x5000c500a1b2c3d4\nE:ID_SERIAL_SHORT=Z1D2A3B4\nE:ID_WWN=0x5000c500a1b2c3d4\nE:ID_WWN_WITH_EXTENSION=0x5000c500a1b2c3d4\n")
	link("../../sda", "dev/disk/by-path/pci-0000:00:1f.2-ata-1")
	// nvme0n1: serial from sysfs, no udev entry.
	write("sys/block/nvme0n1/size", "1000215216")
	write("sys/block/nvme0n1/dev", "259:0")
	write("sys/block/nvme0n1/queue/rotational", "0")
	write("sys/block/nvme0n1/device/model", "Samsung SSD 970")
	write("sys/block/nvme0n1/device/serial", "S4EWNX0N")
	for _, skip := range []string{"loop0", "sr0"} {
		write("sys/block/"+skip+"/size", "2048")
	}
	write("sys/block/sdc/size", "2048")
	write("sys/block/sdc/removable", "1")
	write("sys/block/sdd/size", "0")
	return root
}

func TestDiscover(t *testing.T) {
	devs, err := Discover(fixtureRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{
		{Name: "/dev/nvme0n1", Size: 1000215216 * 512, Model: "Samsung SSD 970", Serial: "S4EWNX0N"},
		{Name: "/dev/sda", Size: 1953525168 * 512, Model: "ST1000DM003", Vendor: "ATA", Serial: "Z1D2A3B4",
			WWN: "0x5000c500a1b2c3d4", WWNWithExtension: "0x5000c500a1b2c3d4", HCTL: "0:0:0:0",
			ByPath: "/dev/disk/by-path/pci-0000:00:1f.2-ata-1", Rotational: true},
	}
	if len(devs) != len(want) {
		t.Fatalf("Discover = %+v, want %d disks", devs, len(want))
	}
	for i := range want {
		if devs[i] != want[i] {
			t.Errorf("disk %d:\n got %+v\nwant %+v", i, devs[i], want[i])
		}
	}
	d, err := Select(devs, map[string]any{"hctl": "0:0:0:0", "rotational": true})
	if err != nil || d.Name != "/dev/sda" {
		t.Fatalf("Select by hctl = %q, %v", d.Name, err)
	}
}

func TestFileDisk(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.img")
	if err := os.WriteFile(p, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := FileDisk(p + ",model=Fake Disk,serial=F1,rotational=true,wwn=0x1,hctl=2:0:0:0,vendor=V")
	if err != nil {
		t.Fatal(err)
	}
	want := Device{Name: p, Size: 3 << 20, Model: "Fake Disk", Serial: "F1", Rotational: true, WWN: "0x1", HCTL: "2:0:0:0", Vendor: "V"}
	if d != want {
		t.Fatalf("FileDisk = %+v, want %+v", d, want)
	}
	for _, bad := range []string{p + ",colour=red", p + ",rotational=maybe", p + ",model", filepath.Join(t.TempDir(), "missing")} {
		if _, err := FileDisk(bad); err == nil {
			t.Errorf("FileDisk(%q) accepted", bad)
		}
	}
}

// TestDiscoverRealRoot: "" means the machine's own /sys (read only).
func TestDiscoverRealRoot(t *testing.T) {
	if _, err := os.Stat("/sys/block"); err != nil {
		t.Skip("no /sys/block here")
	}
	devs, err := Discover("")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if !strings.HasPrefix(d.Name, "/dev/") || d.Size <= 0 {
			t.Errorf("disk %+v", d)
		}
	}
}
