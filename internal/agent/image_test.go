package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/anvil-metal/anvil/internal/ipa"
)

func randomImage(t testing.TB, n int) ([]byte, string) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	s := sha256.Sum256(b)
	return b, hex.EncodeToString(s[:])
}

func testDisk(t testing.TB, size int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteImage(t *testing.T) {
	img, sum := randomImage(t, 3<<20+17)
	s512 := sha512.Sum512(img)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img":
			_, _ = w.Write(img)
		case "/chunked": // no Content-Length
			w.(http.Flusher).Flush()
			_, _ = w.Write(img)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	local := filepath.Join(t.TempDir(), "local.img")
	if err := os.WriteFile(local, img, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src, sum, algo string
		disk                 int
		allowMD5             bool
		wantErr              string
	}{
		{name: "http sha256", src: srv.URL + "/img", sum: sum, disk: 8 << 20},
		{name: "http sha512 by length", src: srv.URL + "/img", sum: hex.EncodeToString(s512[:]), disk: 8 << 20},
		{name: "chunked", src: srv.URL + "/chunked", sum: sum, disk: 8 << 20},
		{name: "local path", src: local, sum: sum, disk: 8 << 20},
		{name: "file url", src: "file://" + local, sum: sum, disk: 8 << 20},
		{name: "exact fit", src: local, sum: sum, disk: len(img)},
		{name: "wrong checksum", src: local, sum: strings.Repeat("0", 64), disk: 8 << 20, wantErr: "checksum mismatch"},
		{name: "missing", src: srv.URL + "/nope", sum: sum, disk: 8 << 20, wantErr: "unreachable: HTTP 404"},
		{name: "missing file", src: local + ".nope", sum: sum, disk: 8 << 20, wantErr: "unreachable"},
		{name: "too small", src: srv.URL + "/img", sum: sum, disk: 1 << 20, wantErr: "disk too small"},
		{name: "too small chunked", src: srv.URL + "/chunked", sum: sum, disk: 1 << 20, wantErr: "disk too small"},
		{name: "md5 refused", src: local, sum: strings.Repeat("0", 32), disk: 8 << 20, wantErr: "md5 image checksums are not allowed"},
		{name: "bad hex", src: local, sum: "zz", disk: 8 << 20, wantErr: "not hexadecimal"},
		{name: "no checksum", src: local, disk: 8 << 20, wantErr: "no image checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := testDisk(t, tt.disk)
			a, err := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}, AllowMD5: tt.allowMD5})
			if err != nil {
				t.Fatal(err)
			}
			var prog atomic.Int64
			_, err = a.writeImage(context.Background(), map[string]any{ipa.ParamImageSource: tt.src,
				ipa.ParamChecksum: tt.sum, ipa.ParamChecksumAlgo: tt.algo}, &prog)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(disk)
			if len(got) != tt.disk || !bytes.Equal(got[:len(img)], img) {
				t.Fatalf("disk (%d bytes) does not start with the image", len(got))
			}
			if prog.Load() != int64(len(img)) {
				t.Fatalf("progress %d, want %d", prog.Load(), len(img))
			}
		})
	}
}

func TestQcow2WithoutQemuImg(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	img := append([]byte{'Q', 'F', 'I', 0xfb}, make([]byte, 1000)...)
	s := sha256.Sum256(img)
	src := filepath.Join(t.TempDir(), "img.qcow2")
	_ = os.WriteFile(src, img, 0o600)
	a, _ := New(Config{APIURL: "http://127.0.0.1:1", Disk: testDisk(t, 1<<20), MACs: []string{"x"}})
	_, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageSource: src,
		ipa.ParamChecksum: hex.EncodeToString(s[:])}, new(atomic.Int64))
	if err == nil || !strings.Contains(err.Error(), "qemu-img, which is not installed") {
		t.Fatalf("err = %v", err)
	}
}

func TestEraseMetadata(t *testing.T) {
	disk := filepath.Join(t.TempDir(), "disk")
	_ = os.WriteFile(disk, bytes.Repeat([]byte{0xAA}, 4<<20), 0o600)
	a, _ := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}})
	if _, err := a.eraseMetadata(context.Background(), nil, new(atomic.Int64)); err != nil {
		t.Fatal(err)
	}
	d, _ := os.ReadFile(disk)
	if len(d) != 4<<20 || d[0] != 0 || d[1<<20-1] != 0 || d[1<<20] != 0xAA || d[3<<20-1] != 0xAA || d[3<<20] != 0 || d[len(d)-1] != 0 {
		t.Fatal("erase_devices_metadata must zero exactly the first and last MiB")
	}
	if st, err := os.Stat(disk); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && runtime.GOOS == "linux" && sys.Blocks*512 > 2<<20+64<<10 {
			t.Errorf("the disk file holds %d bytes after erasing 2 of its 4 MiB: holes were not punched", sys.Blocks*512)
		}
	}
	if _, err := a.eraseDevices(context.Background(), nil, new(atomic.Int64)); err != nil {
		t.Fatal(err)
	}
	d, _ = os.ReadFile(disk)
	if !bytes.Equal(d, make([]byte, 4<<20)) {
		t.Fatal("erase_devices left data behind")
	}
}

func TestInventoryFixture(t *testing.T) {
	root := t.TempDir()
	w := func(p, s string) {
		full := filepath.Join(root, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU\n\nprocessor\t: 1\nmodel name\t: Test CPU\n")
	w("proc/meminfo", "MemTotal:       16384000 kB\n")
	w("sys/block/sda/size", "2000000\n")
	w("sys/block/sda/queue/rotational", "1\n")
	w("sys/block/sda/device/serial", "SER123\n")
	w("sys/block/loop0/size", "8\n")
	w("sys/class/net/eth0/address", "52:54:00:00:00:01\n")
	w("sys/class/net/lo/address", "00:00:00:00:00:00\n")
	w("sys/class/dmi/id/sys_vendor", "Anvil\n")
	w("sys/firmware/efi/x", "")
	inv, err := ReadInventory(root, "")
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPU.Count != 2 || inv.CPU.ModelName != "Test CPU" || inv.Memory.PhysicalMB != 16000 ||
		len(inv.Disks) != 1 || inv.Disks[0] != (Disk{Name: "/dev/sda", Size: 2000000 * 512, Rotational: true, Serial: "SER123"}) ||
		len(inv.Interfaces) != 1 || inv.Interfaces[0].MACAddress != "52:54:00:00:00:01" ||
		inv.SystemVendor.Manufacturer != "Anvil" || inv.Boot.CurrentBootMode != "uefi" {
		t.Fatalf("inventory = %+v", inv)
	}
	if macs := systemMACs(root); len(macs) != 1 || macs[0] != "52:54:00:00:00:01" {
		t.Fatalf("systemMACs = %v", macs)
	}
}

// BenchmarkStreamImage measures write_image's throughput: a 256 MiB file
// served over loopback HTTP, hashed and written to a file disk, fsynced.
func BenchmarkStreamImage(b *testing.B) {
	const size = 256 << 20
	dir := b.TempDir()
	src := filepath.Join(dir, "image")
	img, sum := randomImage(b, size)
	if err := os.WriteFile(src, img, 0o600); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	disk := filepath.Join(dir, "disk")
	_ = os.WriteFile(disk, nil, 0o600)
	if err := os.Truncate(disk, size); err != nil {
		b.Fatal(err)
	}
	a, _ := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}})
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		if _, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageSource: srv.URL + "/image",
			ipa.ParamChecksum: sum}, new(atomic.Int64)); err != nil {
			b.Fatal(err)
		}
	}
}
