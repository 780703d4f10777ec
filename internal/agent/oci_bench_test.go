package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/oci"
	"github.com/anvil-metal/anvil/internal/oci/ocitest"
)

// benchImage is a 128 MiB disk image as real ones are: half data (random),
// half unused (zeros), interleaved by MiB.
func benchImage(b *testing.B) []byte {
	const size = 128 << 20
	img := make([]byte, size)
	for off := 0; off < size; off += 2 << 20 {
		_, _ = rand.Read(img[off : off+1<<20])
	}
	return img
}

// BenchmarkPullAndWrite compares write_image of the same image served
// plain over loopback HTTP and pulled from an OCI registry (in process,
// bearer token authentication): raw, zstd and gzip layers. Each OCI
// iteration resolves the reference and obtains a pull token as a deploy
// does, then the agent downloads, decompresses, hashes and writes it to a
// file disk, fsynced. Bytes/s are of the image written.
func BenchmarkPullAndWrite(b *testing.B) {
	img := benchImage(b)
	dir := b.TempDir()
	// Served from memory, as the test registry serves its blobs.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "image", time.Time{}, bytes.NewReader(img))
	}))
	defer plain.Close()
	reg := ocitest.New(b, ocitest.BearerAuth, "u", "p")
	reg.PushArtifact(b, "bench", "raw", img, "application/octet-stream", "disk.raw")
	reg.PushArtifact(b, "bench", "zstd", zstdOf(b, img), "application/zstd", "disk.raw.zst")
	reg.PushArtifact(b, "bench", "gzip", gzipOf(b, img), "application/gzip", "disk.raw.gz")
	disk := filepath.Join(dir, "disk")
	_ = os.WriteFile(disk, nil, 0o600)
	if err := os.Truncate(disk, int64(len(img))); err != nil {
		b.Fatal(err)
	}
	a, _ := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}})
	write := func(b *testing.B, info map[string]any) {
		if _, err := a.writeImage(context.Background(), map[string]any{ipa.ParamImageInfo: info}, new(atomic.Int64)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("http", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		for range b.N {
			write(b, map[string]any{ipa.ParamURLs: []any{plain.URL + "/image"}, ipa.ParamOSHashAlgo: "sha256",
				ipa.ParamOSHashValue: hexSHA(img), ipa.ParamDiskFormat: "raw"})
		}
	})
	c := oci.NewClient(oci.Config{AllowHTTP: true})
	for _, tag := range []string{"raw", "zstd", "gzip"} {
		b.Run("oci-"+tag, func(b *testing.B) {
			b.SetBytes(int64(len(img)))
			ref, _ := oci.ParseRef("oci://" + reg.Host + "/bench:" + tag)
			sec := oci.ParseSecret("u:p")
			for range b.N {
				im, err := c.Resolve(context.Background(), ref, "", sec)
				if err != nil {
					b.Fatal(err)
				}
				auth, err := c.Authorization(context.Background(), ref, sec)
				if err != nil {
					b.Fatal(err)
				}
				write(b, map[string]any{ipa.ParamURLs: []any{im.URL}, ipa.ParamOSHashAlgo: "sha256",
					ipa.ParamOSHashValue: im.Checksum, ipa.ParamDiskFormat: "raw", ipa.ParamCompression: im.Compression,
					ipa.ParamAuthorization: base64.StdEncoding.EncodeToString([]byte(auth))})
			}
		})
	}
}
