package boot

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
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

// BenchmarkSeenFull fills the boot services' record to its bound (a flood
// of requests from made-up MACs: every key full of events the size of a
// kernel fetch's) and reports the heap it holds.
func BenchmarkSeenFull(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		seen := NewSeen()
		for k := range seenKeys + 100 {
			mac := fmt.Sprintf("52:54:%02x:%02x:%02x:01", k>>16&0xff, k>>8&0xff, k&0xff)
			for range SeenPerKey {
				seen.Add(model.BootEvent{Time: time.Now(), Service: "http", MAC: mac, Node: "7b1d6f8e-2c2a-4f44-9d53-1f2e3d4c5b6a",
					Remote: "10.11.12.13:54321", File: "kernel", Status: "200", Bytes: 1 << 20}, mac)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if seen.Keys() != seenKeys {
			b.Fatalf("%d keys, bound %d", seen.Keys(), seenKeys)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-held")
		runtime.KeepAlive(seen)
	}
}
