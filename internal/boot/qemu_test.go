package boot

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStockIPXEBootsPublishedRamdisk network-boots a qemu VM (software
// emulation, user networking with restrict=on) whose NIC ROM is qemu's
// stock iPXE: qemu's DHCP names {HTTPURL}/boot.ipxe as the boot file, the
// guest reaches the boot endpoint on a loopback port through a guestfwd,
// and must fetch the generic script, its per-MAC script, the kernel and the
// ramdisk. The kernel is Debian's ipxe.lkrn (a bzImage iPXE accepts).
// Slow (tens of seconds): runs only with ANVIL_VM_TEST=1.
func TestStockIPXEBootsPublishedRamdisk(t *testing.T) {
	if os.Getenv("ANVIL_VM_TEST") != "1" {
		t.Skip("set ANVIL_VM_TEST=1 to boot a qemu VM with stock iPXE")
	}
	const kernel = "/boot/ipxe.lkrn" // Debian package ipxe
	for _, need := range []string{"qemu-system-x86_64", "busybox"} {
		if _, err := exec.LookPath(need); err != nil {
			t.Fatalf("%s not installed: %v", need, err)
		}
	}
	if _, err := os.Stat(kernel); err != nil {
		t.Fatalf("%s missing (apt-get install ipxe): %v", kernel, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	const guestURL = "http://10.0.2.100:6385" // the guestfwd address
	images := t.TempDir()
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: guestURL + "/boot", APIURL: guestURL,
		FileAllowedPaths: []string{filepath.Dir(kernel), images}})
	if err != nil {
		t.Fatal(err)
	}
	ramdisk := filepath.Join(images, "initrd")
	os.WriteFile(ramdisk, blob(5, 1<<20), 0o600)
	mac := "52:54:00:b0:07:01"
	if err := svc.PublishRamdisk(context.Background(), "vm", []string{mac}, Ramdisk{
		Kernel: Image{Source: kernel}, Ramdisk: Image{Source: ramdisk}, KernelParams: "console=ttyS0",
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []string
	handler := http.StripPrefix("/boot", svc.Handler())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
		mu.Lock()
		served = append(served, r.URL.Path)
		mu.Unlock()
	})}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-accel", "tcg", "-m", "256", "-display", "none",
		"-netdev", "user,id=n0,restrict=on,bootfile="+guestURL+"/boot/boot.ipxe,guestfwd=tcp:10.0.2.100:6385-cmd:busybox nc 127.0.0.1 "+port,
		"-device", "virtio-net-pci,netdev=n0,mac="+mac+",bootindex=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	want := []string{"/boot.ipxe", macPath(mac), "/kernel", "/ramdisk"}
	for {
		mu.Lock()
		paths := append([]string(nil), served...)
		mu.Unlock()
		got, i := strings.Join(paths, " "), 0
		for _, p := range paths {
			if i < len(want) && strings.HasSuffix(p, want[i]) {
				i++
			}
		}
		if i == len(want) {
			t.Logf("iPXE fetched, in order: %s", got)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("iPXE fetched only %q; want %q in order", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
