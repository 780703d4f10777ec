package disk

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// The image pipeline against its parts on this machine: BenchmarkDD is a
// raw sequential file → file copy in 8 MiB blocks with an fsync (dd
// bs=8M conv=fsync), BenchmarkSHA256 hashes the file alone (sha256sum),
// BenchmarkPipeline downloads it over loopback HTTP, hashes and writes it
// with Copy (fsync included). The target is Copy ≥ 0.7 × min(dd, sha256).
// BenchmarkCompare runs the three in turn in each round (the machine's
// load drifts between separate benchmarks) and reports each one's MB/s
// and pipeline/min(dd, sha256).
// Run: go test -run '^$' -bench . -benchtime 3x ./internal/disk/

const benchSize = 256 << 20

func benchFiles(b *testing.B) (src, dst string) {
	b.Helper()
	dir := b.TempDir()
	src, dst = filepath.Join(dir, "src.img"), filepath.Join(dir, "dst.img")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, benchSize); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(dst, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(dst, benchSize); err != nil {
		b.Fatal(err)
	}
	return src, dst
}

func runDD(b *testing.B, src, dst string) {
	buf := make([]byte, 8<<20)
	in, _ := os.Open(src)
	defer in.Close()
	out, _ := os.OpenFile(dst, os.O_WRONLY, 0)
	defer out.Close()
	if _, err := io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, buf); err != nil {
		b.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
}

func runSHA256(b *testing.B, src string) {
	buf := make([]byte, 8<<20)
	in, _ := os.Open(src)
	defer in.Close()
	if _, err := io.CopyBuffer(sha256.New(), struct{ io.Reader }{in}, buf); err != nil {
		b.Fatal(err)
	}
}

func runPipeline(b *testing.B, url, dst string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var progress atomic.Int64
	if n, err := Copy(context.Background(), Target{Path: dst}, resp.Body, sha256.New(), &progress); err != nil || n != benchSize {
		b.Fatalf("Copy = %d, %v", n, err)
	}
}

func serveFile(b *testing.B, src string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, src)
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/img"
}

func BenchmarkDD(b *testing.B) {
	src, dst := benchFiles(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		runDD(b, src, dst)
	}
}

func BenchmarkSHA256(b *testing.B) {
	src, _ := benchFiles(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		runSHA256(b, src)
	}
}

func BenchmarkPipeline(b *testing.B) {
	src, dst := benchFiles(b)
	url := serveFile(b, src)
	b.SetBytes(benchSize)
	for b.Loop() {
		runPipeline(b, url, dst)
	}
}

func BenchmarkCompare(b *testing.B) {
	src, dst := benchFiles(b)
	url := serveFile(b, src)
	var dd, sha, pipe time.Duration
	timed := func(d *time.Duration, f func()) {
		t0 := time.Now()
		f()
		*d += time.Since(t0)
	}
	for b.Loop() {
		timed(&dd, func() { runDD(b, src, dst) })
		timed(&sha, func() { runSHA256(b, src) })
		timed(&pipe, func() { runPipeline(b, url, dst) })
	}
	rate := func(d time.Duration) float64 { return float64(b.N) * benchSize / 1e6 / d.Seconds() }
	b.ReportMetric(rate(dd), "dd_MB/s")
	b.ReportMetric(rate(sha), "sha256_MB/s")
	b.ReportMetric(rate(pipe), "pipeline_MB/s")
	b.ReportMetric(rate(pipe)/min(rate(dd), rate(sha)), "ratio")
}
