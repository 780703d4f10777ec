package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
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

// threeDisks makes three file disks with attributes for hints and an
// agent whose --disk names them.
func threeDisks(t *testing.T) (*Agent, []string) {
	t.Helper()
	dir := t.TempDir()
	var paths, specs []string
	for i, attrs := range []string{"model=Small HDD,serial=S-1,rotational=true", "model=Fast SSD,serial=S-2,vendor=ACME", "model=Big SSD,serial=S-3,wwn=0x5000c500cafe"} {
		p := filepath.Join(dir, "disk"+strconv.Itoa(i))
		if err := os.WriteFile(p, make([]byte, []int{16, 24, 96}[i]<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		paths, specs = append(paths, p), append(specs, p+","+attrs)
	}
	a, err := New(Config{APIURL: "http://127.0.0.1:1", Disks: specs, MACs: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	return a, paths
}

func imageFile(t *testing.T, img []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(p, img, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteImageRootDeviceHints(t *testing.T) {
	img, sum := randomImage(t, 1<<20+3)
	src := imageFile(t, img)
	for _, tc := range []struct {
		name    string
		hints   map[string]any
		want    int // index of the disk written, -1 for none
		wantErr string
	}{
		{"no hints: the first disk", nil, 0, ""},
		{"serial", map[string]any{"serial": "S-2"}, 1, ""},
		{"wwn", map[string]any{"wwn": "0x5000C500CAFE"}, 2, ""},
		{"model <in> and not rotational", map[string]any{"model": "<in> ssd", "rotational": false}, 1, ""},
		{"name", map[string]any{}, 0, ""},
		{"no match", map[string]any{"serial": "S-9"}, -1, "No suitable device was found for deployment using these hints {'serial': 'S-9'}"},
		{"unknown key", map[string]any{"serial": "S-2", "color": "blue"}, -1, `The hints "color" are invalid.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, disks := threeDisks(t)
			p := map[string]any{ipa.ParamImageSource: src, ipa.ParamChecksum: sum}
			if tc.hints != nil {
				p[ipa.ParamRootDevice] = tc.hints
			}
			res, err := a.writeImage(context.Background(), p, new(atomic.Int64))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res["root_device"] != disks[tc.want] {
				t.Errorf("root_device = %v, want %s", res["root_device"], disks[tc.want])
			}
			for i, d := range disks {
				b, _ := os.ReadFile(d)
				if written := bytes.Equal(b[:len(img)], img); written != (i == tc.want) {
					t.Errorf("disk %d written = %v", i, written)
				}
			}
		})
	}
}

func TestWriteImageTruncated(t *testing.T) {
	img, sum := randomImage(t, 2<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(img)))
		_, _ = w.Write(img[:len(img)/2]) // the connection ends early
	}))
	defer srv.Close()
	a, _ := threeDisks(t)
	_, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageSource: srv.URL + "/img", ipa.ParamChecksum: sum}, new(atomic.Int64))
	if err == nil || !(strings.Contains(err.Error(), "truncated") || strings.Contains(err.Error(), "unexpected EOF")) {
		t.Fatalf("a truncated download: err = %v", err)
	}
}

func TestWriteImageWholeDiskConfigDrive(t *testing.T) {
	// A whole-disk image with a GPT holding one 4 MiB partition.
	imgPath := filepath.Join(t.TempDir(), "whole.img")
	if err := os.WriteFile(imgPath, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := disk.WriteTable(imgPath, disk.LabelGPT, []disk.Partition{{Role: disk.RoleRoot, Number: 1, Start: 1 << 20, Size: 4 << 20}}); err != nil {
		t.Fatal(err)
	}
	img, _ := os.ReadFile(imgPath)
	s := sha256.Sum256(img)
	iso, err := disk.BuildConfigDrive(disk.ConfigDrive{MetaData: map[string]any{"uuid": "n1"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, disks := threeDisks(t)
	res, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageInfo: map[string]any{
		ipa.ParamURLs: []any{imgPath}, ipa.ParamOSHashAlgo: "sha256", ipa.ParamOSHashValue: hex.EncodeToString(s[:]),
		ipa.ParamRootDevice: map[string]any{"size": ">= 0.01", "serial": "S-3"}}, ipa.ParamConfigDrive: disk.EncodeConfigDrive(iso)}, new(atomic.Int64))
	if err == nil || !strings.Contains(err.Error(), `Root device hint "size" is not an integer value`) {
		t.Fatalf("a fractional size hint: %v", err)
	}
	res, err = a.writeImage(context.Background(), map[string]any{ipa.ParamImageInfo: map[string]any{
		ipa.ParamURLs: []any{imgPath}, ipa.ParamOSHashAlgo: "sha256", ipa.ParamOSHashValue: hex.EncodeToString(s[:]),
		ipa.ParamRootDevice: map[string]any{"serial": "S-3"}}, ipa.ParamConfigDrive: disk.EncodeConfigDrive(iso)}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(disks[2])
	defer f.Close()
	label, parts, err := disk.ReadTable(f)
	if err != nil || label != disk.LabelGPT || len(parts) != 2 {
		t.Fatalf("table on the disk: %s %+v %v (result %v)", label, parts, err, res)
	}
	cd := parts[1]
	got := make([]byte, len(iso))
	_, _ = f.ReadAt(got, cd.Start)
	if !bytes.Equal(got, iso) {
		t.Fatal("the config drive partition does not hold the config drive")
	}
	if cd.Start+cd.Size < (96<<20)-(1<<20) || cd.Size < 63<<20 {
		t.Fatalf("config drive partition %+v is not ~64 MiB at the end of the 96 MiB disk", cd)
	}
}

func TestWriteImagePartitionQcow2(t *testing.T) {
	testbin.Need(t, "qemu-img", "qemu-utils")
	raw, _ := randomImage(t, 3<<20)
	dir := t.TempDir()
	rawPath, q := filepath.Join(dir, "root.raw"), filepath.Join(dir, "root.qcow2")
	_ = os.WriteFile(rawPath, raw, 0o600)
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, q).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v %s", err, out)
	}
	qb, _ := os.ReadFile(q)
	s := sha256.Sum256(qb)
	iso, _ := disk.BuildConfigDrive(disk.ConfigDrive{MetaData: map[string]any{"uuid": "n1"}}, t.TempDir())
	a, disks := threeDisks(t)
	res, err := a.writeImage(context.Background(), map[string]any{
		ipa.ParamImageSource: q, ipa.ParamChecksum: hex.EncodeToString(s[:]), ipa.ParamDiskFormat: "qcow2",
		ipa.ParamImageType: ipa.ImagePartition, ipa.ParamRootMB: float64(4), ipa.ParamSwapMB: "2",
		ipa.ParamEphemeralMB: float64(3), ipa.ParamBootOption: "netboot", ipa.ParamBootMode: "uefi",
		ipa.ParamConfigDrive: disk.EncodeConfigDrive(iso)}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(disks[0])
	defer f.Close()
	label, parts, err := disk.ReadTable(f)
	if err != nil || label != disk.LabelGPT || len(parts) != 4 {
		t.Fatalf("table: %s %+v %v (result %v)", label, parts, err, res)
	}
	// ephemeral 3, swap 2, config drive 1, root 4 (MiB), from 1 MiB.
	for i, want := range [][2]int64{{1, 3}, {4, 2}, {6, 1}, {7, 4}} {
		if parts[i].Start != want[0]<<20 || parts[i].Size != want[1]<<20 {
			t.Errorf("partition %d = %+v, want start %d MiB size %d MiB", i+1, parts[i], want[0], want[1])
		}
	}
	got := make([]byte, 4<<20)
	_, _ = f.ReadAt(got, 7<<20)
	if !bytes.Equal(got[:len(raw)], raw) || !bytes.Equal(got[len(raw):], make([]byte, len(got)-len(raw))) {
		t.Fatal("the root partition does not hold the qcow2 image's raw content")
	}
	swap := make([]byte, 4096)
	_, _ = f.ReadAt(swap, 4<<20)
	if string(swap[4086:]) != "SWAPSPACE2" {
		t.Error("no swap signature on the swap partition")
	}
	if dumpe2fs, err := exec.LookPath("dumpe2fs"); err == nil {
		out, err := exec.Command(dumpe2fs, "-h", disks[0]+"?offset="+strconv.Itoa(1<<20)).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("Filesystem volume name:   ephemeral0")) {
			t.Errorf("no ext4 ephemeral0 on the ephemeral partition: %v %s", err, out)
		}
	}
	cd := make([]byte, len(iso))
	_, _ = f.ReadAt(cd, 6<<20)
	if !bytes.Equal(cd, iso) {
		t.Error("the config drive partition does not hold the config drive")
	}
}

func TestParseImageRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		p    map[string]any
		want string
	}{
		{map[string]any{}, "image_source is missing"},
		{map[string]any{"image_source": "x", "image_type": "weird"}, "unknown image_type"},
		{map[string]any{"image_source": "x", "disk_format": "vmdk"}, `disk_format "vmdk" is not supported`},
		{map[string]any{"image_source": "x", "image_type": "partition"}, "needs root_mb"},
		{map[string]any{"image_source": "x", "swap_mb": -1.0}, "swap_mb must be a non-negative integer"},
		{map[string]any{"image_source": "x", "configdrive": map[string]any{}}, "configdrive must be a gzip+base64 string"},
	} {
		if _, err := ParseImageRequest(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseImageRequest(%v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	if _, err := New(Config{APIURL: "http://127.0.0.1:1", Disks: []string{"/nonexistent/disk"}}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New with a missing --disk: %v", err)
	}
}

// TestWriteImageFailsBeforePartitioning: a qcow2 partition image with a
// wrong checksum, or with no qemu-img to convert it, fails before the disk
// is partitioned.
func TestWriteImageFailsBeforePartitioning(t *testing.T) {
	q := append(append([]byte(nil), disk.Qcow2Magic...), make([]byte, 4096)...)
	src := imageFile(t, q)
	s := sha256.Sum256(q)
	for _, tc := range []struct {
		name, sum, path, want string
	}{
		{"wrong checksum", strings.Repeat("0", 64), os.Getenv("PATH"), "checksum mismatch"},
		{"no qemu-img", hex.EncodeToString(s[:]), t.TempDir(), "qemu-img, which is not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			a, disks := threeDisks(t)
			_, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageSource: src, ipa.ParamChecksum: tc.sum,
				ipa.ParamImageType: ipa.ImagePartition, ipa.ParamRootMB: 4.0, ipa.ParamBootOption: "netboot"}, new(atomic.Int64))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if b, _ := os.ReadFile(disks[0]); !bytes.Equal(b[:1<<20], make([]byte, 1<<20)) {
				t.Fatal("the disk was partitioned or written")
			}
		})
	}
}
