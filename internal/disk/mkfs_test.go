package disk

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

func TestFormatEphemeral(t *testing.T) {
	dumpe2fs := testbin.Need(t, "dumpe2fs", "e2fsprogs")
	disk := tempDisk(t, 32<<20, 0xAA)
	p := Partition{Role: RoleEphemeral, Number: 1, Start: 4 << 20, Size: 8 << 20}
	if err := FormatEphemeral(context.Background(), disk, p, "ext4"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dumpe2fs, "-h", disk+"?offset="+strconv.FormatInt(p.Start, 10)).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Filesystem volume name:   ephemeral0")) || !bytes.Contains(out, []byte("Block count:              8192")) {
		t.Fatalf("dumpe2fs: %v\n%s", err, out)
	}
	b := readAll(t, disk)
	if b[p.Start-1] != 0xAA || b[p.Start+p.Size] != 0xAA {
		t.Fatal("mkfs wrote outside the partition")
	}
	if err := FormatEphemeral(context.Background(), disk, p, "ntfs"); err == nil {
		t.Fatal("ntfs accepted")
	}
}
