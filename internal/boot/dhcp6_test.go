package boot

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
)

// dhcp6Harness runs a ProxyDHCPv6 on [::1] and a client socket that
// exchanges real DHCPv6 messages with it.
type dhcp6Harness struct {
	server *net.UDPAddr
	client *net.UDPConn
	svc    *Service
}

func newDHCP6Harness(t *testing.T) *dhcp6Harness {
	t.Helper()
	conn, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: "http://[fd00::1]:6385/boot"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxyDHCPv6(svc, ProxyDHCPv6Config{ServerMAC: net.HardwareAddr{0x52, 0x55, 0, 0, 0, 1}, EFIBinary: SNPOnlyBinary})
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
	client, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return &dhcp6Harness{server: conn.LocalAddr().(*net.UDPAddr), client: client, svc: svc}
}

// exchange sends each message; the last must be answered, the others not.
func (h *dhcp6Harness) exchange(t *testing.T, msgs ...dhcpv6.DHCPv6) dhcpv6.DHCPv6 {
	t.Helper()
	for _, m := range msgs {
		if _, err := h.client.WriteTo(m.ToBytes(), h.server); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := dhcpv6.GetTransactionID(msgs[len(msgs)-1])
	var answer dhcpv6.DHCPv6
	buf := make([]byte, 2048)
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
		m, err := dhcpv6.FromBytes(buf[:n])
		if err != nil {
			t.Fatalf("unparseable answer: %v", err)
		}
		if xid, _ := dhcpv6.GetTransactionID(m); xid != want {
			t.Errorf("answer to a message that must get none: %s", m.Summary())
			continue
		}
		answer = m
		deadline = time.Now().Add(200 * time.Millisecond)
	}
	if answer == nil {
		t.Fatal("no answer to the last message")
	}
	return answer
}

// httpSolicit is what UEFI HTTP boot firmware multicasts: vendor class
// (enterprise 343) "HTTPClient:Arch:00016:UNDI:003000", architecture 16.
func httpSolicit(t *testing.T, mac net.HardwareAddr, mods ...dhcpv6.Modifier) *dhcpv6.Message {
	t.Helper()
	base := []dhcpv6.Modifier{dhcpv6.WithArchType(iana.EFI_X86_64_HTTP),
		dhcpv6.WithOption(&dhcpv6.OptVendorClass{EnterpriseNumber: 343, Data: [][]byte{[]byte("HTTPClient:Arch:00016:UNDI:003000")}}),
		dhcpv6.WithRequestedOptions(dhcpv6.OptionBootfileURL, dhcpv6.OptionVendorClass)}
	m, err := dhcpv6.NewSolicit(mac, append(base, mods...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProxyDHCPv6AnswersHTTPClients(t *testing.T) {
	h := newDHCP6Harness(t)
	publishHTTP(t, h.svc, "n1", knownMAC.String(), HTTPBootIPXE)
	const want = "http://[fd00::1]:6385/boot/snponly.efi"

	sol := httpSolicit(t, knownMAC)
	adv, ok := h.exchange(t, sol).(*dhcpv6.Message)
	if !ok || adv.Type() != dhcpv6.MessageTypeAdvertise {
		t.Fatalf("answer to SOLICIT: %v", adv)
	}
	if got := adv.Options.BootFileURL(); got != want {
		t.Errorf("boot file URL %q, want %q", got, want)
	}
	if vc := adv.Options.VendorClass(343); len(vc) != 1 || string(vc[0]) != "HTTPClient" {
		t.Errorf("vendor class %q, want HTTPClient (enterprise 343)", vc)
	}
	if adv.Options.ServerID() == nil || !adv.Options.ClientID().Equal(sol.Options.ClientID()) {
		t.Error("server or client DUID missing")
	}
	if len(adv.Options.IANA()) != 0 {
		t.Error("an address offered: the proxy gives boot information only")
	}
	// Information-request (stateless) gets a Reply with the URL too.
	ir, err := dhcpv6.NewMessage(dhcpv6.WithClientID(sol.Options.ClientID()), dhcpv6.WithArchType(iana.EFI_X86_64_HTTP),
		dhcpv6.WithOption(&dhcpv6.OptVendorClass{EnterpriseNumber: 343, Data: [][]byte{[]byte("HTTPClient")}}))
	if err != nil {
		t.Fatal(err)
	}
	ir.MessageType = dhcpv6.MessageTypeInformationRequest
	if rep, ok := h.exchange(t, ir).(*dhcpv6.Message); !ok || rep.Type() != dhcpv6.MessageTypeReply || rep.Options.BootFileURL() != want {
		t.Errorf("answer to INFORMATION-REQUEST: %v", rep)
	}

	// Through a relay that names the client's link-layer address; the
	// client's DUID carries none (DUID-UUID).
	uuidSol := httpSolicit(t, unknownMAC)
	uuidSol.UpdateOption(dhcpv6.OptClientID(&dhcpv6.DUIDUUID{UUID: [16]byte{1, 2, 3}}))
	relay, err := dhcpv6.EncapsulateRelay(uuidSol, dhcpv6.MessageTypeRelayForward, net.ParseIP("fd00::1"), net.ParseIP("fe80::1"))
	if err != nil {
		t.Fatal(err)
	}
	relay.AddOption(dhcpv6.OptClientLinkLayerAddress(iana.HWTypeEthernet, knownMAC))
	got := h.exchange(t, relay)
	rr, ok := got.(*dhcpv6.RelayMessage)
	if !ok || rr.Type() != dhcpv6.MessageTypeRelayReply {
		t.Fatalf("answer to RELAY-FORW: %v", got)
	}
	inner, err := dhcpv6.DecapsulateRelay(rr)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := inner.(*dhcpv6.Message); !ok || m.Type() != dhcpv6.MessageTypeAdvertise || m.Options.BootFileURL() != want {
		t.Errorf("relayed answer: %v", inner)
	}

	// Silence: an unknown MAC, a DUID-UUID client without relay, a PXE
	// client, another architecture; each followed by a probe that must be
	// answered.
	probe := func() dhcpv6.DHCPv6 { return httpSolicit(t, knownMAC) }
	noArch, err := dhcpv6.NewSolicit(knownMAC, dhcpv6.WithArchType(iana.EFI_ARM64_HTTP),
		dhcpv6.WithOption(&dhcpv6.OptVendorClass{EnterpriseNumber: 343, Data: [][]byte{[]byte("HTTPClient:Arch:00019")}}))
	if err != nil {
		t.Fatal(err)
	}
	pxe, err := dhcpv6.NewSolicit(knownMAC, dhcpv6.WithArchType(iana.EFI_X86_64),
		dhcpv6.WithOption(&dhcpv6.OptVendorClass{EnterpriseNumber: 343, Data: [][]byte{[]byte("PXEClient:Arch:00007")}}))
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]dhcpv6.DHCPv6{
		"unknown MAC": httpSolicit(t, net.HardwareAddr{0x52, 0x54, 0, 9, 9, 9}),
		"DUID-UUID":   uuidSol,
		"ARM64":       noArch,
		"PXE client":  pxe,
	} {
		t.Run(name, func(t *testing.T) { h.exchange(t, m, probe()) })
	}
	// A node booted by PXE (no HTTP loader) gets nothing.
	if err := h.svc.PublishLocalBoot(context.Background(), "n2", []string{"52:54:00:09:09:08"}); err != nil {
		t.Fatal(err)
	}
	h.exchange(t, httpSolicit(t, net.HardwareAddr{0x52, 0x54, 0, 9, 9, 8}), probe())
}
