package boot

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// asHTTPClient is what OVMF's HTTP boot sends (checked with Debian's
// ovmf: "HTTPClient:Arch:00016:UNDI:003000", option 93 = 16).
var asHTTPClient = []dhcpv4.Modifier{
	dhcpv4.WithOption(dhcpv4.OptClassIdentifier("HTTPClient:Arch:00016:UNDI:003000")),
	withArch(iana.EFI_X86_64_HTTP),
}

func publishHTTP(t testing.TB, svc *Service, node, mac, mode string) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(svc.cache.dir), DefaultImagesDir)
	k, r := filepath.Join(dir, "k"), filepath.Join(dir, "r")
	os.WriteFile(k, []byte("kernel"), 0o600)
	os.WriteFile(r, []byte("ramdisk"), 0o600)
	if err := svc.PublishRamdisk(context.Background(), node, []string{mac}, Ramdisk{Kernel: Image{Source: k}, Ramdisk: Image{Source: r},
		KernelParams: "console=ttyS0", HTTPBoot: mode}); err != nil {
		t.Fatal(err)
	}
}

func TestProxyDHCPAnswersHTTPClients(t *testing.T) {
	h := newDHCPHarness(t, SNPOnlyBinary)
	publishHTTP(t, h.svc, "n1", knownMAC.String(), HTTPBootIPXE)

	offer := h.exchange(t, pxeDiscover(t, knownMAC, asHTTPClient...))
	const want = "http://10.0.2.100:6385/boot/snponly.efi"
	if offer.MessageType() != dhcpv4.MessageTypeOffer || offer.BootFileNameOption() != want || offer.BootFileName != want {
		t.Errorf("answer %s, boot file %q (field %q), want OFFER of %s", offer.MessageType(), offer.BootFileNameOption(), offer.BootFileName, want)
	}
	if offer.ClassIdentifier() != "HTTPClient" {
		t.Errorf("option 60 = %q, want HTTPClient (UEFI ignores offers without it)", offer.ClassIdentifier())
	}
	if !offer.YourIPAddr.IsUnspecified() {
		t.Errorf("yiaddr %v: proxyDHCP must not offer an address", offer.YourIPAddr)
	}
	if offer.Options.Has(dhcpv4.OptionVendorSpecificInformation) {
		t.Error("PXE discovery options (43) in an HTTP boot answer")
	}
	req, err := dhcpv4.NewRequestFromOffer(offer, asHTTPClient...)
	if err != nil {
		t.Fatal(err)
	}
	if ack := h.exchange(t, req); ack.MessageType() != dhcpv4.MessageTypeAck || ack.BootFileNameOption() != want {
		t.Errorf("REQUEST answered %s with %q", ack.MessageType(), ack.BootFileNameOption())
	}

	// The http interface's GRUB loader, for a node published so.
	publishGRUB := func() {
		if _, err := exec.LookPath("grub-mkimage"); err != nil {
			t.Skip("grub-mkimage not installed (grub-common)")
		}
		publishHTTP(t, h.svc, "n2", unknownMAC.String(), HTTPBootGRUB)
	}
	publishGRUB()
	if got := h.exchange(t, pxeDiscover(t, unknownMAC, asHTTPClient...)); got.BootFileNameOption() != "http://10.0.2.100:6385/boot/grubx64.efi" {
		t.Errorf("GRUB node's boot file %q", got.BootFileNameOption())
	}

	// Silence: a PXE-booted node's MAC, another architecture, a withdrawn node.
	other := net.HardwareAddr{0x52, 0x54, 0x00, 0, 0, 9}
	if err := h.svc.PublishLocalBoot(context.Background(), "n3", []string{other.String()}); err != nil {
		t.Fatal(err)
	}
	probe := func() *dhcpv4.DHCPv4 { return pxeDiscover(t, knownMAC, asHTTPClient...) }
	h.exchange(t, pxeDiscover(t, other, asHTTPClient...), probe())
	h.exchange(t, pxeDiscover(t, knownMAC, dhcpv4.WithOption(dhcpv4.OptClassIdentifier("HTTPClient:Arch:00019:UNDI:003000")), withArch(iana.EFI_ARM64_HTTP)), probe())
	h.exchange(t, pxeDiscover(t, knownMAC, dhcpv4.WithOption(dhcpv4.OptClassIdentifier("HTTPClient"))), probe())
	if err := h.svc.Withdraw(context.Background(), "n2"); err != nil {
		t.Fatal(err)
	}
	h.exchange(t, pxeDiscover(t, unknownMAC, asHTTPClient...), probe())

	// iPXE loaded by HTTP boot asks again as iPXE and gets the script.
	if got := h.exchange(t, pxeDiscover(t, knownMAC, asPXE, asIPXE, withArch(iana.EFI_X86_64))); got.BootFileNameOption() != "http://10.0.2.100:6385/boot/boot.ipxe" {
		t.Errorf("iPXE after HTTP boot got %q", got.BootFileNameOption())
	}
}

func TestHTTPBootLoadersAndGRUBConfig(t *testing.T) {
	if _, err := exec.LookPath("grub-mkimage"); err != nil {
		t.Skip("grub-mkimage not installed (grub-common)")
	}
	if _, err := os.Stat(filepath.Join(DefaultGRUBModules, "http.mod")); err != nil {
		t.Skip("grub-efi-amd64-bin not installed")
	}
	ipxeDir := t.TempDir()
	os.WriteFile(filepath.Join(ipxeDir, SNPOnlyBinary), []byte("MZ snponly"), 0o644)
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: "http://10.0.2.100:6385/boot", APIURL: "http://10.0.2.100:6385", LoaderDir: ipxeDir})
	if err != nil {
		t.Fatal(err)
	}
	mac := "52:54:00:ab:cd:01"
	publishHTTP(t, svc, "n1", mac, HTTPBootGRUB)
	srv := httptest.NewServer(http.StripPrefix("/boot", svc.Handler()))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + "/boot" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/snponly.efi"); code != 200 || body != "MZ snponly" {
		t.Errorf("snponly.efi: %d %q", code, body)
	}
	if code, _ := get("/ipxe.efi"); code != 404 {
		t.Errorf("missing ipxe.efi: %d, want 404", code)
	}
	code, body := get("/grubx64.efi")
	if code != 200 || !strings.HasPrefix(body, "MZ") {
		t.Fatalf("grubx64.efi: %d, %d bytes, want a PE image", code, len(body))
	}
	// The image embeds the endpoint it reads configurations from.
	if !strings.Contains(body, "(http,10.0.2.100:6385)/boot/grub/${net_default_mac}") {
		t.Error("the GRUB image does not embed the per-MAC configuration path")
	}
	code, cfg := get("/grub/" + mac)
	if code != 200 {
		t.Fatalf("grub config: %d", code)
	}
	for _, want := range []string{"linux (http,10.0.2.100:6385)/boot/n/", "/kernel console=ttyS0 BOOTIF=${net_default_mac} ipa-api-url=http://10.0.2.100:6385\n",
		"initrd (http,10.0.2.100:6385)/boot/n/", "/ramdisk\nboot\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("grub config lacks %q:\n%s", want, cfg)
		}
	}
	if code, _ := get("/grub/52:54:00:ab:cd:02"); code != 404 {
		t.Errorf("unknown MAC's grub config: %d", code)
	}
	// Local boot keeps the node's HTTP boot loader: GRUB exits to the disk.
	if err := svc.PublishLocalBoot(context.Background(), "n1", []string{mac}); err != nil {
		t.Fatal(err)
	}
	if code, cfg := get("/grub/" + mac); code != 200 || !strings.Contains(cfg, "exit 0") || strings.Contains(cfg, "linux") {
		t.Errorf("local boot grub config: %d %q", code, cfg)
	}
	if got := svc.HTTPBootURL(net.HardwareAddr{0x52, 0x54, 0, 0xab, 0xcd, 1}, SNPOnlyBinary); got != "http://10.0.2.100:6385/boot/grubx64.efi" {
		t.Errorf("after local boot HTTPBootURL = %q", got)
	}
	// A restarted service serves what was published.
	svc2, err := New(Config{Root: filepath.Dir(svc.nodesDir), HTTPURL: "http://10.0.2.100:6385/boot", LoaderDir: ipxeDir})
	if err != nil {
		t.Fatal(err)
	}
	if got := svc2.HTTPBootURL(net.HardwareAddr{0x52, 0x54, 0, 0xab, 0xcd, 1}, SNPOnlyBinary); got != "http://10.0.2.100:6385/boot/grubx64.efi" {
		t.Errorf("after restart HTTPBootURL = %q", got)
	}
}

func TestHTTPBootRefusals(t *testing.T) {
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: "https://10.0.2.100:6385/boot"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(svc.cache.dir), DefaultImagesDir)
	os.WriteFile(filepath.Join(dir, "k"), []byte("k"), 0o600)
	r := Ramdisk{Kernel: Image{Source: filepath.Join(dir, "k")}, Ramdisk: Image{Source: filepath.Join(dir, "k")}, HTTPBoot: HTTPBootGRUB}
	err = svc.PublishRamdisk(context.Background(), "n", []string{"52:54:00:00:00:01"}, r)
	if err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("GRUB over an https endpoint: %v", err)
	}
	r.HTTPBoot = "shim"
	if err := svc.PublishRamdisk(context.Background(), "n", []string{"52:54:00:00:00:01"}, r); err == nil || !strings.Contains(err.Error(), "unknown HTTP boot loader") {
		t.Errorf("unknown loader: %v", err)
	}
	if got := grubQuote("a=$(x);b|c ${net_default_mac} 'q'"); got != `a=\$(x)\;b\|c ${net_default_mac} \'q\'` {
		t.Errorf("grubQuote = %s", got)
	}
}
