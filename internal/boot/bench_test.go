package boot

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkServeRamdisk measures the boot endpoint serving a 64 MiB ramdisk
// to 50 concurrent clients over loopback; one op is all 50 downloads.
func BenchmarkServeRamdisk(b *testing.B) {
	const size, clients = 64 << 20, 50
	dir := b.TempDir()
	src := filepath.Join(dir, "initrd")
	if err := os.WriteFile(src, blob(3, size), 0o600); err != nil {
		b.Fatal(err)
	}
	kernel := filepath.Join(dir, "vmlinuz")
	os.WriteFile(kernel, blob(4, 1<<20), 0o600)
	srv := httptest.NewUnstartedServer(nil)
	svc, err := New(Config{Root: filepath.Join(dir, "root"), HTTPURL: "http://" + srv.Listener.Addr().String(), FileAllowedPaths: []string{dir}})
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = svc.Handler()
	srv.Start()
	defer srv.Close()
	if err := svc.PublishRamdisk(context.Background(), "bench", []string{"52:54:00:be:00:01"}, Ramdisk{
		Kernel: Image{Source: kernel}, Ramdisk: Image{Source: src},
	}); err != nil {
		b.Fatal(err)
	}
	svc.mu.RLock()
	url := srv.URL + "/n/" + svc.byNode["bench"].Token + "/" + ramdiskFile
	svc.mu.RUnlock()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	defer client.CloseIdleConnections()

	b.SetBytes(size * clients)
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for range clients {
			wg.Go(func() {
				resp, err := client.Get(url)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				n, err := io.Copy(io.Discard, resp.Body)
				if err == nil && n != size {
					err = io.ErrUnexpectedEOF
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
}
