package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pin/tftp/v3"

	"github.com/anvil-metal/anvil/internal/testbin"
)

func TestNewBoot(t *testing.T) {
	if _, _, _, err := newBoot(context.Background(), BootConfig{HTTPURL: "http://10.0.2.100:6385", Root: t.TempDir()}, nil, nil); err == nil {
		t.Error("an --http-url without a path was accepted (it would shadow the API)")
	}
	pub, prefix, h, err := newBoot(context.Background(), BootConfig{HTTPURL: "http://10.0.2.100:6385/boot/", Root: t.TempDir(),
		PublicEndpoint: "http://10.0.2.100:6385"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "/boot" {
		t.Errorf("prefix = %q, want /boot", prefix)
	}
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, body := get("/boot/boot.ipxe"); code != 200 || !strings.Contains(body, "chain http://10.0.2.100:6385/boot/mac/") {
		t.Errorf("GET /boot/boot.ipxe: %d %s", code, body)
	}
	if code, _ := get("/boot/mac/52-54-00-00-00-01"); code != 404 {
		t.Errorf("unknown MAC: %d", code)
	}
	if err := pub.PublishLocalBoot(context.Background(), "node-1", []string{"52:54:00:00:00:01"}); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/boot/mac/52-54-00-00-00-01"); code != 200 || !strings.Contains(body, "#!ipxe") {
		t.Errorf("published MAC: %d %s", code, body)
	}
	if err := pub.Withdraw(context.Background(), "node-1"); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/boot/mac/52-54-00-00-00-01"); code != 404 {
		t.Errorf("withdrawn MAC: %d", code)
	}
}

// TestBootServers: --tftp-listen serves the iPXE binaries (read back with a
// real TFTP client) and --dhcp-proxy binds its port; a bad server address
// is refused at start.
func TestBootServers(t *testing.T) {
	binary := testbin.Need(t, "/usr/lib/ipxe/undionly.kpxe", "ipxe")
	want, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	free := func() string {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	bad := BootConfig{HTTPURL: "http://boot.invalid/boot", Root: t.TempDir(), DHCPProxy: free()}
	if _, _, _, err := newBoot(ctx, bad, nil, errc); err == nil || !strings.Contains(err.Error(), "--boot-server-ip") {
		t.Errorf("proxyDHCP without an IPv4 server address: %v", err)
	}
	tftpAddr, dhcpAddr := free(), free()
	cfg := BootConfig{HTTPURL: "http://127.0.0.1:6385/boot", Root: t.TempDir(), TFTPListen: tftpAddr, TFTPDir: "/usr/lib/ipxe",
		DHCPProxy: dhcpAddr}
	if _, _, _, err := newBoot(ctx, cfg, nil, errc); err != nil {
		t.Fatal(err)
	}
	c, err := tftp.NewClient(tftpAddr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(5 * time.Second)
	wt, err := c.Receive("undionly.kpxe", "octet")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := wt.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("TFTP gave %d bytes, want %s's %d", got.Len(), binary, len(want))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.ListenPacket("udp4", dhcpAddr)
		if err != nil {
			break // bound by the proxyDHCP server
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the proxyDHCP server did not bind its address")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-errc:
		t.Fatalf("boot server failed: %v", err)
	default:
	}
}

// TestBootDHCPv6Server: --dhcp6-proxy binds its address before serve
// goes on (a taken or malformed address fails at once, naming the flag).
func TestBootDHCPv6Server(t *testing.T) {
	c, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	taken := c.LocalAddr().String()
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	for _, addr := range []string{taken, "not-an-address"} {
		cfg := BootConfig{HTTPURL: "http://[::1]:6385/boot", Root: t.TempDir(), DHCP6Proxy: addr}
		if _, _, _, err := newBoot(ctx, cfg, nil, errc); err == nil || !strings.Contains(err.Error(), "--dhcp6-proxy") {
			t.Errorf("--dhcp6-proxy %s: %v", addr, err)
		}
	}
	c2, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	free := c2.LocalAddr().String()
	c2.Close()
	cfg := BootConfig{HTTPURL: "http://[::1]:6385/boot", Root: t.TempDir(), DHCP6Proxy: free}
	if _, _, _, err := newBoot(ctx, cfg, nil, errc); err != nil {
		t.Fatal(err)
	}
	if c, err := net.ListenPacket("udp6", free); err == nil {
		c.Close()
		t.Error("the DHCPv6 server did not bind its address")
	}
}

// TestBootLoaderFlags: the boot endpoint serves UEFI HTTP boot's iPXE
// binaries from --tftp-dir (the directory TFTP serves them from), and a
// --uefi-ipxe-bootfile-name that is not an iPXE binary is refused.
func TestBootLoaderFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "snponly.efi"), []byte("MZ-snp"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := BootConfig{HTTPURL: "http://127.0.0.1:6385/boot", Root: t.TempDir(), TFTPDir: dir}
	_, prefix, h, err := newBoot(ctx, cfg, nil, errc)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", prefix+"/snponly.efi", nil))
	if rec.Code != 200 || rec.Body.String() != "MZ-snp" {
		t.Errorf("GET %s/snponly.efi: %d %q", prefix, rec.Code, rec.Body.String())
	}
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := c.LocalAddr().String()
	c.Close()
	bad := BootConfig{HTTPURL: "http://127.0.0.1:6385/boot", Root: t.TempDir(), DHCPProxy: free, EFIBinary: "grubx64.efi"}
	if _, _, _, err := newBoot(ctx, bad, nil, errc); err == nil || !strings.Contains(err.Error(), "grubx64.efi") {
		t.Errorf("EFIBinary grubx64.efi: %v", err)
	}
}
