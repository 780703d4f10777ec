package disk

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func tempDisk(t *testing.T, size int, fill byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(p, bytes.Repeat([]byte{fill}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestCopy(t *testing.T) {
	img := randomBytes(t, 3*bufSize+12345) // several buffers and a partial one
	disk := tempDisk(t, 40<<20, 0xAA)
	h := sha256.New()
	var progress atomic.Int64
	n, err := Copy(context.Background(), Target{Path: disk, Offset: 1 << 20}, bytes.NewReader(img), h, &progress)
	if err != nil || n != int64(len(img)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	if want := sha256.Sum256(img); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("hash differs from the image's")
	}
	if progress.Load() != n {
		t.Errorf("progress %d, want %d", progress.Load(), n)
	}
	d, _ := os.ReadFile(disk)
	if !bytes.Equal(d[1<<20:1<<20+len(img)], img) {
		t.Fatal("the disk does not hold the image at the offset")
	}
	if d[0] != 0xAA || d[1<<20+len(img)] != 0xAA || len(d) != 40<<20 {
		t.Fatal("bytes outside the target changed, or the disk file changed size")
	}
}

func TestCopyTooSmall(t *testing.T) {
	disk := tempDisk(t, 8<<20, 0)
	_, err := Copy(context.Background(), Target{Path: disk, Offset: 1 << 20, Limit: 2 << 20}, bytes.NewReader(randomBytes(t, 3<<20)), sha256.New(), nil)
	if !errors.Is(err, ErrTooSmall) {
		t.Fatalf("Copy of 3 MiB into 2 MiB: %v", err)
	}
	d, _ := os.ReadFile(disk)
	if !bytes.Equal(d[3<<20:], make([]byte, 5<<20)) {
		t.Fatal("bytes past the limit were written")
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("connection reset")
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func TestCopyReadError(t *testing.T) {
	disk := tempDisk(t, 64<<20, 0)
	_, err := Copy(context.Background(), Target{Path: disk}, &failingReader{n: 20 << 20}, sha256.New(), nil)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("connection reset")) {
		t.Fatalf("Copy with a failing source: %v", err)
	}
}

func TestCopyCancelled(t *testing.T) {
	disk := tempDisk(t, 64<<20, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Copy(ctx, Target{Path: disk}, io.LimitReader(rand.Reader, 32<<20), sha256.New(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Copy with a cancelled context: %v", err)
	}
}

func TestAlignedBuf(t *testing.T) {
	for range 8 {
		b := alignedBuf(bufSize)
		if len(b) != bufSize || addr(b)%align != 0 {
			t.Fatalf("buffer of %d bytes at %#x", len(b), addr(b))
		}
	}
}

// TestWriterDirect writes through an O_DIRECT descriptor as Copy does on a
// block device (here a regular file, where the filesystem allows it):
// whole blocks go through it, the unaligned tail through the page cache.
func TestWriterDirect(t *testing.T) {
	disk := tempDisk(t, 4<<20, 0xAA)
	d, err := openDirect(disk)
	if err != nil {
		t.Skipf("O_DIRECT unavailable here: %v", err)
	}
	defer d.Close()
	f, err := os.OpenFile(disk, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &writer{f: f, direct: d}
	buf := alignedBuf(2 << 20)
	copy(buf, randomBytes(t, len(buf)))
	const n = 1<<20 + 777 // whole blocks and a tail
	if err := w.writeAt(buf[:n], 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := w.sync(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, disk)
	if !bytes.Equal(got[1<<20:1<<20+n], buf[:n]) || got[1<<20-1] != 0xAA || got[1<<20+n] != 0xAA {
		t.Fatal("the O_DIRECT write did not land exactly")
	}
}

// A size hint sizes the buffers to the image; a hint that is wrong (the
// image larger or smaller) still writes the whole image, and an image that
// fits one buffer allocates one.
func TestCopySizeHint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		img, hint int
	}{
		{"exact", 1 << 20, 1 << 20},
		{"exact and aligned", 64 << 10, 64 << 10},
		{"image larger than the hint", 3<<20 + 5, 1 << 20},
		{"image smaller than the hint", 100, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := randomBytes(t, tc.img)
			disk := tempDisk(t, 8<<20, 0)
			h := sha256.New()
			n, err := Copy(context.Background(), Target{Path: disk, SizeHint: int64(tc.hint)}, bytes.NewReader(img), h, nil)
			if err != nil || n != int64(len(img)) {
				t.Fatalf("Copy = %d, %v", n, err)
			}
			if want := sha256.Sum256(img); !bytes.Equal(h.Sum(nil), want[:]) {
				t.Fatal("hash differs from the image's")
			}
			d, _ := os.ReadFile(disk)
			if !bytes.Equal(d[:len(img)], img) {
				t.Fatal("the disk does not hold the image")
			}
		})
	}
	// one buffer for an image that fits it
	p := &buffers{free: make(chan []byte, bufCount), size: 4096}
	b, _ := p.get(context.Background())
	p.put(b)
	if _, _ = p.get(context.Background()); p.made != 1 {
		t.Fatalf("%d buffers allocated for one in use at a time", p.made)
	}
}
