package boot

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// dhcpHarness runs a ProxyDHCP on a loopback port and a client socket
// that sends it real DHCP packets.
type dhcpHarness struct {
	server *net.UDPAddr
	client *net.UDPConn
	svc    *Service
}

func newDHCPHarness(t *testing.T, efi string) *dhcpHarness {
	t.Helper()
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: "http://10.0.2.100:6385/boot"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxyDHCP(svc, ProxyDHCPConfig{ServerIP: net.IPv4(10, 0, 2, 100), EFIBinary: efi})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, conn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return &dhcpHarness{server: conn.LocalAddr().(*net.UDPAddr), client: client, svc: svc}
}

var (
	knownMAC   = net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	unknownMAC = net.HardwareAddr{0x52, 0x54, 0x00, 0x65, 0x43, 0x21}
)

// pxeDiscover builds what PXE firmware (or iPXE) broadcasts.
func pxeDiscover(t *testing.T, mac net.HardwareAddr, mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
	t.Helper()
	m, err := dhcpv4.NewDiscovery(mac, mods...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	asPXE  = dhcpv4.WithOption(dhcpv4.OptClassIdentifier("PXEClient:Arch:00000:UNDI:002001"))
	asIPXE = dhcpv4.WithOption(dhcpv4.OptUserClass("iPXE"))
)

func withArch(a iana.Arch) dhcpv4.Modifier { return dhcpv4.WithOption(dhcpv4.OptClientArch(a)) }

// exchange sends each packet; the last one must be answered, the others
// must not. It returns the answer to the last.
func (h *dhcpHarness) exchange(t *testing.T, pkts ...*dhcpv4.DHCPv4) *dhcpv4.DHCPv4 {
	t.Helper()
	for _, p := range pkts {
		if _, err := h.client.WriteTo(p.ToBytes(), h.server); err != nil {
			t.Fatal(err)
		}
	}
	want := pkts[len(pkts)-1].TransactionID
	var answer *dhcpv4.DHCPv4
	buf := make([]byte, 1500)
	// Read until the last packet's answer, then a little longer for a stray
	// answer to an earlier one.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.client.SetReadDeadline(deadline)
		n, _, err := h.client.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err := dhcpv4.FromBytes(buf[:n])
		if err != nil {
			t.Fatalf("unparseable answer: %v", err)
		}
		if m.TransactionID != want {
			t.Errorf("answer to a packet that must get none (xid %s, chaddr %s, file %q)", m.TransactionID, m.ClientHWAddr, m.BootFileName)
			continue
		}
		answer = m
		deadline = time.Now().Add(200 * time.Millisecond)
	}
	if answer == nil {
		t.Fatal("no answer to the last packet")
	}
	return answer
}

func TestProxyDHCPAnswersKnownPXEClients(t *testing.T) {
	h := newDHCPHarness(t, "")
	if err := h.svc.PublishLocalBoot(context.Background(), "n1", []string{knownMAC.String()}); err != nil {
		t.Fatal(err)
	}
	uuid := append([]byte{0}, make([]byte, 16)...)
	uuid[5] = 0x42
	cases := []struct {
		name string
		mods []dhcpv4.Modifier
		file string
	}{
		{"BIOS PXE", []dhcpv4.Modifier{asPXE, withArch(iana.INTEL_X86PC), dhcpv4.WithOption(dhcpv4.OptGeneric(dhcpv4.OptionClientMachineIdentifier, uuid))}, "undionly.kpxe"},
		{"no arch option", []dhcpv4.Modifier{asPXE}, "undionly.kpxe"},
		{"UEFI x86-64", []dhcpv4.Modifier{asPXE, withArch(iana.EFI_X86_64)}, "ipxe.efi"},
		{"UEFI BC", []dhcpv4.Modifier{asPXE, withArch(iana.EFI_BC)}, "ipxe.efi"},
		{"iPXE by user class", []dhcpv4.Modifier{asPXE, asIPXE, withArch(iana.EFI_X86_64)}, "http://10.0.2.100:6385/boot/boot.ipxe"},
		{"iPXE by option 175", []dhcpv4.Modifier{asPXE, withArch(iana.INTEL_X86PC), dhcpv4.WithOption(dhcpv4.OptGeneric(dhcpv4.GenericOptionCode(175), []byte{0xb1, 1, 1}))}, "http://10.0.2.100:6385/boot/boot.ipxe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := pxeDiscover(t, knownMAC, tc.mods...)
			got := h.exchange(t, req)
			if got.OpCode != dhcpv4.OpcodeBootReply || got.MessageType() != dhcpv4.MessageTypeOffer {
				t.Errorf("answer %s / %s, want BootReply / OFFER", got.OpCode, got.MessageType())
			}
			if got.BootFileName != tc.file || got.BootFileNameOption() != tc.file {
				t.Errorf("boot file %q (option 67 %q), want %q", got.BootFileName, got.BootFileNameOption(), tc.file)
			}
			if !got.YourIPAddr.IsUnspecified() {
				t.Errorf("yiaddr %v: proxyDHCP must not offer an address", got.YourIPAddr)
			}
			if !got.ServerIPAddr.Equal(net.IPv4(10, 0, 2, 100)) || !got.ServerIdentifier().Equal(net.IPv4(10, 0, 2, 100)) {
				t.Errorf("siaddr %v, option 54 %v", got.ServerIPAddr, got.ServerIdentifier())
			}
			if got.ClassIdentifier() != "PXEClient" {
				t.Errorf("option 60 = %q", got.ClassIdentifier())
			}
			if got.ClientHWAddr.String() != knownMAC.String() {
				t.Errorf("chaddr %v", got.ClientHWAddr)
			}
			if want := req.GetOneOption(dhcpv4.OptionClientMachineIdentifier); want != nil && string(got.GetOneOption(dhcpv4.OptionClientMachineIdentifier)) != string(want) {
				t.Error("option 97 not echoed")
			}
		})
	}
	t.Run("REQUEST gets ACK", func(t *testing.T) {
		offer := h.exchange(t, pxeDiscover(t, knownMAC, asPXE, withArch(iana.EFI_X86_64)))
		req, err := dhcpv4.NewRequestFromOffer(offer, asPXE, withArch(iana.EFI_X86_64))
		if err != nil {
			t.Fatal(err)
		}
		ack := h.exchange(t, req)
		if ack.MessageType() != dhcpv4.MessageTypeAck || ack.BootFileName != "ipxe.efi" {
			t.Errorf("answer %s with %q", ack.MessageType(), ack.BootFileName)
		}
	})
}

func TestProxyDHCPIgnoresOthers(t *testing.T) {
	h := newDHCPHarness(t, SNPOnlyBinary)
	if err := h.svc.PublishLocalBoot(context.Background(), "n1", []string{knownMAC.String()}); err != nil {
		t.Fatal(err)
	}
	inform, err := dhcpv4.New(dhcpv4.WithHwAddr(knownMAC), dhcpv4.WithMessageType(dhcpv4.MessageTypeInform), asPXE)
	if err != nil {
		t.Fatal(err)
	}
	silent := map[string]*dhcpv4.DHCPv4{
		"unknown MAC":         pxeDiscover(t, unknownMAC, asPXE, withArch(iana.INTEL_X86PC)),
		"unknown MAC on iPXE": pxeDiscover(t, unknownMAC, asPXE, asIPXE),
		"not a PXE client":    pxeDiscover(t, knownMAC, withArch(iana.INTEL_X86PC)),
		"other vendor class":  pxeDiscover(t, knownMAC, dhcpv4.WithOption(dhcpv4.OptClassIdentifier("MSFT 5.0"))),
		"ARM64 firmware":      pxeDiscover(t, knownMAC, asPXE, withArch(iana.EFI_ARM64)),
		"INFORM":              inform,
	}
	for name, pkt := range silent {
		t.Run(name, func(t *testing.T) {
			// Send the packet that must get nothing, then one that must get an
			// answer: the answer proves the server saw both.
			probe := pxeDiscover(t, knownMAC, asPXE, withArch(iana.EFI_X86_64))
			if got := h.exchange(t, pkt, probe); got.BootFileName != SNPOnlyBinary {
				t.Errorf("probe boot file %q, want %s", got.BootFileName, SNPOnlyBinary)
			}
		})
	}
	t.Run("withdrawn node", func(t *testing.T) {
		if err := h.svc.Withdraw(context.Background(), "n1"); err != nil {
			t.Fatal(err)
		}
		if err := h.svc.PublishLocalBoot(context.Background(), "n2", []string{unknownMAC.String()}); err != nil {
			t.Fatal(err)
		}
		h.exchange(t, pxeDiscover(t, knownMAC, asPXE), pxeDiscover(t, unknownMAC, asPXE))
	})
}

func TestNewProxyDHCPValidates(t *testing.T) {
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: "http://127.0.0.1/boot"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []ProxyDHCPConfig{
		{},
		{ServerIP: net.IPv4zero},
		{ServerIP: net.ParseIP("::1")},
		{ServerIP: net.IPv4(127, 0, 0, 1), EFIBinary: "grub.efi"},
	} {
		if _, err := NewProxyDHCP(svc, cfg); err == nil {
			t.Errorf("NewProxyDHCP(%+v) accepted", cfg)
		}
	}
	if _, err := NewProxyDHCP(nil, ProxyDHCPConfig{ServerIP: net.IPv4(127, 0, 0, 1)}); err == nil {
		t.Error("nil service accepted")
	}
}
