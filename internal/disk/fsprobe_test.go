package disk

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// blkidAt is blkid's TYPE and UUID of the file system at off in path.
func blkidAt(t *testing.T, path string, off int64) (string, string) {
	t.Helper()
	blkid := testbin.Need(t, "blkid", "util-linux")
	out, err := exec.Command(blkid, "-p", "-O", strconv.FormatInt(off, 10), "-o", "export", path).CombinedOutput()
	if err != nil {
		t.Fatalf("blkid: %v\n%s", err, out)
	}
	var typ, id string
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "TYPE="); ok {
			typ = v
		}
		if v, ok := strings.CutPrefix(l, "UUID="); ok {
			id = v
		}
	}
	return typ, id
}

func TestFSProbeExt(t *testing.T) {
	mkfs := testbin.Need(t, "mkfs.ext4", "e2fsprogs")
	for _, fs := range []string{"ext2", "ext3", "ext4"} {
		t.Run(fs, func(t *testing.T) {
			disk := tempDisk(t, 16<<20, 0)
			if out, err := exec.Command(mkfs, "-q", "-F", "-t", fs, "-E", "offset=1048576", disk, "8M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs: %v\n%s", err, out)
			}
			f, err := os.Open(disk)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			typ, id, err := FSProbe(f, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			wantType, wantID := blkidAt(t, disk, 1<<20)
			if typ != wantType || id != wantID || id == "" {
				t.Fatalf("FSProbe = %s %s, blkid says %s %s", typ, id, wantType, wantID)
			}
			if _, _, err := FSProbe(f, 0); err == nil {
				t.Fatal("FSProbe found a file system in the zeroed first MiB")
			}
		})
	}
}

func TestFormatESP(t *testing.T) {
	fsck := testbin.Need(t, "fsck.fat", "dosfstools")
	disk := tempDisk(t, 64<<20, 0xAA)
	p := Partition{Role: RoleEFI, Number: 1, Start: 1 << 20, Size: 40 << 20}
	id, err := FormatESP(disk, p)
	if err != nil {
		t.Fatal(err)
	}
	typ, wantID := blkidAt(t, disk, p.Start)
	if typ != FSVFAT || id != wantID {
		t.Fatalf("FormatESP = %s, blkid says %s %s", id, typ, wantID)
	}
	b := readAll(t, disk)
	if b[p.Start-1] != 0xAA || b[p.Start+p.Size] != 0xAA {
		t.Fatal("FormatESP wrote outside the partition")
	}
	part := t.TempDir() + "/esp.img"
	if err := os.WriteFile(part, b[p.Start:p.Start+p.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(fsck, "-n", part).CombinedOutput(); err != nil || bytes.Contains(out, []byte("Fix")) {
		t.Fatalf("fsck.fat -n: %v\n%s", err, out)
	}
}

func TestPartitionDevice(t *testing.T) {
	for dev, want := range map[string]string{"/dev/sda": "/dev/sda2", "/dev/vda": "/dev/vda2",
		"/dev/nvme0n1": "/dev/nvme0n1p2", "/dev/mmcblk0": "/dev/mmcblk0p2", "/dev/loop3": "/dev/loop3p2"} {
		if got := PartitionDevice(dev, 2); got != want {
			t.Errorf("PartitionDevice(%s, 2) = %s, want %s", dev, got, want)
		}
	}
}
