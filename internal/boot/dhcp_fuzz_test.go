package boot

import (
	"bytes"
	"net"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
)

// FuzzProxyDHCPReply: whatever a machine on the boot network sends, the
// proxyDHCP servers (v4 and v6) do not panic, and they answer only the
// MAC of a node booted by network (here one published for UEFI HTTP
// boot): a packet that names another MAC, or none, gets no answer.
func FuzzProxyDHCPReply(f *testing.F) {
	v4, err := dhcpv4.NewDiscovery(knownMAC, withArch(iana.EFI_X86_64_HTTP),
		dhcpv4.WithOption(dhcpv4.OptClassIdentifier("HTTPClient:Arch:00016:UNDI:003001")))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v4.ToBytes())
	v6, err := dhcpv6.NewMessage(dhcpv6.WithClientID(&dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: knownMAC}),
		dhcpv6.WithArchType(iana.EFI_X86_64_HTTP),
		dhcpv6.WithOption(&dhcpv6.OptVendorClass{EnterpriseNumber: 343, Data: [][]byte{[]byte("HTTPClient")}}))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v6.ToBytes())
	f.Add([]byte{})
	svc, err := New(Config{Root: f.TempDir(), HTTPURL: "http://10.0.2.100:6385/boot"})
	if err != nil {
		f.Fatal(err)
	}
	publishHTTP(f, svc, "n1", knownMAC.String(), HTTPBootIPXE)
	p4, err := NewProxyDHCP(svc, ProxyDHCPConfig{ServerIP: net.IPv4(10, 0, 2, 100)})
	if err != nil {
		f.Fatal(err)
	}
	p6, err := NewProxyDHCPv6(svc, ProxyDHCPv6Config{ServerMAC: net.HardwareAddr{0x52, 0x55, 0, 0, 0, 1}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := dhcpv4.FromBytes(b); err == nil {
			if r := p4.Reply(m); r != nil && !bytes.Equal(m.ClientHWAddr, knownMAC) {
				t.Fatalf("a DHCPv4 answer to MAC %s, which no node has", m.ClientHWAddr)
			}
		}
		if m, err := dhcpv6.FromBytes(b); err == nil {
			_ = p6.Reply(m) // must not panic
		}
	})
}
