package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/testbin"
)

func zstdOf(t testing.TB, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll(b, nil)
}

func gzipOf(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func hexSHA(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestWriteCompressedImage: zstd and gzip images are decompressed as they
// are written, their checksum is the download's (an OCI blob digest), the
// Authorization header is sent, and a stream that is corrupt, has trailing
// bytes or is not what its checksum says fails.
func TestWriteCompressedImage(t *testing.T) {
	img, _ := randomImage(t, 2<<20+5)
	img = append(img, make([]byte, 1<<20)...) // compressible
	blobs := map[string][]byte{"/zst": zstdOf(t, img), "/gz": gzipOf(t, img)}
	blobs["/trailing"] = append(append([]byte{}, blobs["/zst"]...), "junk"...)
	corrupt := append([]byte{}, blobs["/zst"]...)
	corrupt[len(corrupt)/2] ^= 0xff
	blobs["/corrupt"] = corrupt
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		b, ok := blobs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	auth := base64.StdEncoding.EncodeToString([]byte("Bearer tok"))
	tests := []struct {
		name, path, kind, sum, auth, wantErr string
	}{
		{name: "zstd", path: "/zst", kind: "zstd", sum: hexSHA(blobs["/zst"]), auth: auth},
		{name: "gzip", path: "/gz", kind: "gzip", sum: hexSHA(blobs["/gz"]), auth: auth},
		{name: "checksum of the decompressed image", path: "/zst", kind: "zstd", sum: hexSHA(img), auth: auth, wantErr: "checksum mismatch"},
		{name: "trailing bytes", path: "/trailing", kind: "zstd", sum: hexSHA(blobs["/zst"]), auth: auth, wantErr: "magic number mismatch"},
		{name: "corrupt", path: "/corrupt", kind: "zstd", sum: hexSHA(blobs["/corrupt"]), auth: auth, wantErr: "write_image"},
		{name: "no authorization", path: "/zst", kind: "zstd", sum: hexSHA(blobs["/zst"]), wantErr: "HTTP 401"},
		{name: "not gzip", path: "/zst", kind: "gzip", sum: hexSHA(blobs["/zst"]), auth: auth, wantErr: "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := testDisk(t, 8<<20)
			a, err := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			info := map[string]any{ipa.ParamURLs: []any{srv.URL + tt.path}, ipa.ParamOSHashAlgo: "sha256",
				ipa.ParamOSHashValue: tt.sum, ipa.ParamCompression: tt.kind, ipa.ParamDiskFormat: "raw"}
			if tt.auth != "" {
				info[ipa.ParamAuthorization] = tt.auth
			}
			var prog atomic.Int64
			res, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageInfo: info}, &prog)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "tok") {
					t.Fatalf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(disk)
			if !bytes.Equal(got[:len(img)], img) {
				t.Fatal("the disk does not hold the decompressed image")
			}
			if res["checksum"] != tt.sum || res["bytes_written"] != int64(len(img)) || prog.Load() != int64(len(img)) {
				t.Fatalf("result %v, progress %d", res, prog.Load())
			}
		})
	}
	if _, err := ParseImageRequest(map[string]any{ipa.ParamImageSource: "x", ipa.ParamCompression: "lz4"}); err == nil {
		t.Error("lz4 accepted")
	}
	if _, err := ParseImageRequest(map[string]any{ipa.ParamImageSource: "x", ipa.ParamAuthorization: base64.StdEncoding.EncodeToString([]byte("a\r\nX: y"))}); err == nil {
		t.Error("a header with a line break accepted")
	}
}

// TestWriteCompressedQcow2: a zstd-compressed qcow2 image (an OCI layer of
// disktype qcow2) is decompressed, verified by the compressed stream's
// digest and converted to the disk.
func TestWriteCompressedQcow2(t *testing.T) {
	testbin.Need(t, "qemu-img", "qemu-utils")
	raw, _ := randomImage(t, 2<<20)
	dir := t.TempDir()
	rawPath, q := filepath.Join(dir, "d.raw"), filepath.Join(dir, "d.qcow2")
	_ = os.WriteFile(rawPath, raw, 0o600)
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, q).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v %s", err, out)
	}
	qb, _ := os.ReadFile(q)
	blob := zstdOf(t, qb)
	src := filepath.Join(dir, "d.qcow2.zst")
	_ = os.WriteFile(src, blob, 0o600)
	disk := testDisk(t, 4<<20)
	a, _ := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}})
	for _, sum := range []string{hexSHA(qb), hexSHA(blob)} {
		_, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageInfo: map[string]any{
			ipa.ParamURLs: []any{src}, ipa.ParamOSHashAlgo: "sha256", ipa.ParamOSHashValue: sum,
			ipa.ParamCompression: "zstd", ipa.ParamDiskFormat: "qcow2"}}, new(atomic.Int64))
		if sum == hexSHA(qb) {
			if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
				t.Fatalf("checksum of the decompressed qcow2 accepted: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(disk)
	if !bytes.Equal(got[:len(raw)], raw) {
		t.Fatal("the disk does not hold the qcow2 image's content")
	}
}

// TestZstdWindowBound: a zstd stream announcing a window over 128 MiB is
// refused before the decoder sizes its memory by it.
func TestZstdWindowBound(t *testing.T) {
	// A frame by hand: magic, a descriptor without single segment, a
	// window descriptor of 2^28 (exponent 18), one last raw block of "x".
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3, 0x09, 0x00, 0x00, 'x'}
	buf := bytes.NewBuffer(frame)
	d, err := decompress("zstd", bytes.NewReader(buf.Bytes()))
	if err == nil {
		_, err = io.Copy(io.Discard, d)
	}
	if err == nil || !strings.Contains(err.Error(), "window") {
		t.Fatalf("a 256 MiB window accepted: %v", err)
	}
	// The same frame at 128 MiB is read.
	d, _ = decompress("zstd", bytes.NewReader([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 17 << 3, 0x09, 0x00, 0x00, 'x'}))
	if b, err := io.ReadAll(d); err != nil || string(b) != "x" {
		t.Fatalf("128 MiB window: %q %v", b, err)
	}
	d, _ = decompress("zstd", bytes.NewReader(zstdOf(t, []byte("ok"))))
	if b, err := io.ReadAll(d); err != nil || string(b) != "ok" {
		t.Fatalf("small stream: %q %v", b, err)
	}
}
