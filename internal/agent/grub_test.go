package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anvil-metal/anvil/internal/disk"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// blkid is blkid's value of tag for the file system at off in path.
func blkid(t *testing.T, path string, off int64, tag string) string {
	t.Helper()
	bin := testbin.Need(t, "blkid", "util-linux")
	out, err := exec.Command(bin, "-p", "-O", strconv.FormatInt(off, 10), "-s", tag, "-o", "value", path).CombinedOutput()
	if err != nil {
		t.Fatalf("blkid: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestPartitionImageUUIDs: after a partition image with local boot is
// written, standby.get_partition_uuids answers as IPA does — the root file
// system's UUID and, in UEFI mode, the UUID of the EFI system partition
// the agent formatted (FAT, label efi-part) — so that the conductor passes
// them to image.install_bootloader; prepare_image's message names the root.
func TestPartitionImageUUIDs(t *testing.T) {
	mkfs := testbin.Need(t, "mkfs.ext4", "e2fsprogs")
	dir := t.TempDir()
	root := filepath.Join(dir, "root.img")
	if out, err := exec.Command(mkfs, "-q", "-F", "-L", "testroot", root, "4M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(root)
	sum := sha256.Sum256(b)
	wantRoot := blkid(t, root, 0, "UUID")
	for _, mode := range []string{"uefi", "bios"} {
		t.Run(mode, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "disk")
			if err := os.WriteFile(d, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(d, 600<<20); err != nil { // sparse: the ESP is IPA's 550 MiB
				t.Fatal(err)
			}
			a, err := New(Config{APIURL: "http://127.0.0.1:1", Disks: []string{d}, MACs: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.writeImageInfo(context.Background(), map[string]any{"id": "img", "urls": []any{root},
				"checksum": hex.EncodeToString(sum[:]), ipa.ParamImageType: ipa.ImagePartition,
				ipa.ParamRootMB: float64(8), ipa.ParamBootOption: "local", ipa.ParamBootMode: mode}, nil, new(atomic.Int64))
			if err != nil {
				t.Fatal(err)
			}
			if msg, _ := res["result"].(string); !strings.HasSuffix(msg, "root_uuid="+wantRoot) {
				t.Errorf("prepare_image result %q does not name root_uuid=%s", msg, wantRoot)
			}
			got, err := a.getPartitionUUIDs(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got["root uuid"] != wantRoot {
				t.Errorf("root uuid = %v, want %s", got["root uuid"], wantRoot)
			}
			f, _ := os.Open(d)
			_, parts, err := disk.ReadTable(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if mode == "bios" {
				if _, ok := got["efi system partition uuid"]; ok || len(parts) != 1 {
					t.Errorf("BIOS: %v, partitions %+v", got, parts)
				}
				return
			}
			if len(parts) != 2 || parts[0].Size != 550<<20 {
				t.Fatalf("partitions %+v, want the ESP and the root", parts)
			}
			if efi := blkid(t, d, parts[0].Start, "UUID"); efi == "" || got["efi system partition uuid"] != efi {
				t.Errorf("efi system partition uuid = %v, blkid says %q", got["efi system partition uuid"], efi)
			}
			if l := blkid(t, d, parts[0].Start, "LABEL"); l != "EFI-PART" {
				t.Errorf("ESP label %q", l)
			}
		})
	}
}

// TestGRUBConfig: without GRUB of its own, the image gets an entry for its
// newest kernel and that kernel's initrd, on the root found by UUID, with
// /etc/default/grub's parameters; without a kernel, an error that says so.
func TestGRUBConfig(t *testing.T) {
	root := t.TempDir()
	for name, data := range map[string]string{
		"boot/vmlinuz-6.1.0-9-amd64": "k", "boot/vmlinuz-6.1.0-10-amd64": "k", "boot/initrd.img-6.1.0-10-amd64": "i",
		"boot/initrd.img-6.1.0-9-amd64": "i",
		"etc/default/grub": "# comment\nGRUB_TIMEOUT=0\nGRUB_CMDLINE_LINUX=\"console=ttyS0,115200\"\nGRUB_CMDLINE_LINUX_DEFAULT='quiet'\n" +
			"GRUB_TERMINAL=serial\nGRUB_SERIAL_COMMAND=\"serial --unit=0 --speed=115200\"\n",
	} {
		p := filepath.Join(root, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := grubConfig(root, "0b5c4f1e-1111-2222-3333-444455556666")
	if err != nil {
		t.Fatal(err)
	}
	// 6.1.0-10 is newer than 6.1.0-9 (sort -V), though not bytewise.
	for _, want := range []string{
		"set timeout=0\n",
		"search --no-floppy --fs-uuid --set=root 0b5c4f1e-1111-2222-3333-444455556666\n",
		"serial serial --unit=0 --speed=115200\nterminal_input serial console\n",
		"\tlinux /boot/vmlinuz-6.1.0-10-amd64 root=UUID=0b5c4f1e-1111-2222-3333-444455556666 ro console=ttyS0,115200 quiet\n",
		"\tinitrd /boot/initrd.img-6.1.0-10-amd64\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("grub.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if _, err := grubConfig(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "no kernel in /boot") {
		t.Errorf("no kernel: %v", err)
	}
}
