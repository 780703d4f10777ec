package boot

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pin/tftp/v3"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// startTFTP serves dir on a loopback port and returns its address.
func startTFTP(t *testing.T, dir string) string {
	t.Helper()
	srv, err := NewTFTP(dir)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, conn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return conn.LocalAddr().String()
}

func tftpFixture(t *testing.T) (dir string, binary []byte) {
	t.Helper()
	dir = t.TempDir()
	binary = blob(9, 74_213) // the size of Debian's undionly.kpxe; several blocks
	if err := os.WriteFile(filepath.Join(dir, "undionly.kpxe"), binary, 0o644); err != nil {
		t.Fatal(err)
	}
	// A link out of the directory, as Debian's ipxe.efi -> /boot/ipxe.efi.
	elsewhere := filepath.Join(t.TempDir(), "ipxe.efi")
	os.WriteFile(elsewhere, binary[:5000], 0o644)
	if err := os.Symlink(elsewhere, filepath.Join(dir, "ipxe.efi")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "x"), []byte("x"), 0o644)
	return dir, binary
}

func tftpClient(t *testing.T, addr string) *tftp.Client {
	t.Helper()
	c, err := tftp.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(2 * time.Second)
	c.SetRetries(2)
	return c
}

func TestTFTPServesFilesByteForByte(t *testing.T) {
	dir, binary := tftpFixture(t)
	addr := startTFTP(t, dir)
	for name, want := range map[string][]byte{
		"undionly.kpxe": binary, "/undionly.kpxe": binary, "ipxe.efi": binary[:5000],
	} {
		for _, blksize := range []int{0, 1468} {
			c := tftpClient(t, addr)
			if blksize > 0 {
				c.SetBlockSize(blksize)
			}
			wt, err := c.Receive(name, "octet")
			if err != nil {
				t.Fatalf("RRQ %s: %v", name, err)
			}
			var got bytes.Buffer
			if _, err := wt.WriteTo(&got); err != nil {
				t.Fatalf("RRQ %s: %v", name, err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("RRQ %s (blksize %d): %d bytes, differ from the file's %d", name, blksize, got.Len(), len(want))
			}
		}
	}
}

func TestTFTPRefusesTraversalAndWrites(t *testing.T) {
	dir, _ := tftpFixture(t)
	addr := startTFTP(t, dir)
	c := tftpClient(t, addr)
	for _, name := range []string{"../etc/passwd", "/../../etc/passwd", "/etc/passwd", "sub/x", "sub", "..", "", "missing.efi", `..\x`} {
		wt, err := c.Receive(name, "octet")
		if err == nil {
			var got bytes.Buffer
			_, err = wt.WriteTo(&got)
		}
		if err == nil || !strings.Contains(err.Error(), "file not found") {
			t.Errorf("RRQ %q: err = %v, want a refusal", name, err)
		}
	}
	rf, err := c.Send("new.efi", "octet")
	if err == nil {
		_, err = rf.ReadFrom(strings.NewReader("payload"))
	}
	if err == nil {
		t.Error("WRQ accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.efi")); !os.IsNotExist(err) {
		t.Errorf("write created a file: %v", err)
	}
}

// TestTFTPWithTFTPHPA fetches with Debian's tftp-hpa client when installed.
func TestTFTPWithTFTPHPA(t *testing.T) {
	tftpBin := testbin.Need(t, "tftp", "tftp-hpa")
	dir, binary := tftpFixture(t)
	addr := startTFTP(t, dir)
	host, port, _ := net.SplitHostPort(addr)
	out := filepath.Join(t.TempDir(), "got")
	cmd := exec.Command(tftpBin, host, port, "-m", "binary", "-c", "get", "undionly.kpxe", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tftp: %v: %s", err, b)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, binary) {
		t.Errorf("tftp-hpa got %d bytes, want %d identical", len(got), len(binary))
	}
}
