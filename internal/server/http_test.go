package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLongDownloadOutlivesWriteTimeout: a boot file read by a slow but
// steady client takes several WriteTimeouts and still arrives whole, while
// the same server cuts an ordinary answer at WriteTimeout.
func TestLongDownloadOutlivesWriteTimeout(t *testing.T) {
	const size = 48 << 20
	path := filepath.Join(t.TempDir(), "ramdisk")
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xa5}, size), 0o600); err != nil {
		t.Fatal(err)
	}
	lim := Limits{WriteTimeout: 200 * time.Millisecond}.withDefaults()
	files := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) })
	srv := httptest.NewUnstartedServer(withLimits(files, "/boot", lim))
	srv.Config = newHTTPServer(srv.Config.Handler, lim)
	srv.Start()
	defer srv.Close()

	read := func(url string) (int64, error) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		// Pace the reader: 2 MiB per tick, so the whole file takes about
		// 24 ticks (1.2 s), six WriteTimeouts.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var n int64
		for {
			m, err := io.CopyN(io.Discard, resp.Body, 2<<20)
			n += m
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				return n, err
			}
			<-tick.C
		}
	}
	n, err := read(srv.URL + "/boot/ramdisk")
	if err != nil || n != size {
		t.Fatalf("boot download: %d of %d bytes, %v", n, size, err)
	}
	if n, err := read(srv.URL + "/other"); err == nil && n == size {
		t.Fatalf("an ordinary answer outlived WriteTimeout (%d bytes)", n)
	}
}
