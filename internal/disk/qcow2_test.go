package disk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// makeQcow2 converts raw into a qcow2 file with qemu-img (qemu-utils, which
// the test command installs).
func makeQcow2(t *testing.T, raw []byte) string {
	t.Helper()
	testbin.Need(t, "qemu-img", "qemu-utils")
	dir := t.TempDir()
	src := filepath.Join(dir, "img.raw")
	if err := os.WriteFile(src, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "img.qcow2")
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v: %s", err, out)
	}
	return dst
}

func TestConvertQcow2(t *testing.T) {
	raw := randomBytes(t, 3<<20)
	copy(raw[1<<20:], make([]byte, 1<<20)) // a hole in the middle
	q := makeQcow2(t, raw)
	if b := readAll(t, q); !bytes.HasPrefix(b, Qcow2Magic) || bytes.Equal(b, raw) {
		t.Fatal("qemu-img did not make a qcow2 file")
	}
	disk := tempDisk(t, 16<<20, 0xAA)
	n, err := ConvertQcow2(context.Background(), q, Target{Path: disk, Offset: 2 << 20, Limit: 4 << 20})
	if err != nil || n != int64(len(raw)) {
		t.Fatalf("ConvertQcow2 = %d, %v", n, err)
	}
	d := readAll(t, disk)
	if !bytes.Equal(d[2<<20:2<<20+len(raw)], raw) {
		t.Fatal("the disk does not hold the image's raw bytes at the offset")
	}
	if d[2<<20-1] != 0xAA || len(d) != 16<<20 {
		t.Fatal("bytes before the target changed, or the disk changed size")
	}
	if _, err := ConvertQcow2(context.Background(), q, Target{Path: disk, Offset: 2 << 20, Limit: 2 << 20}); !errors.Is(err, ErrTooSmall) {
		t.Fatalf("3 MiB image into 2 MiB: %v", err)
	}
}
