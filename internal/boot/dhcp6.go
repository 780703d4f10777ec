package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/server6"
	"github.com/insomniacslk/dhcp/iana"
)

// enterpriseUEFI is the enterprise number (343, Intel) UEFI firmware puts
// in its DHCPv6 vendor class option, followed by "HTTPClient:Arch:...".
const enterpriseUEFI = 343

// ProxyDHCPv6Config configures a ProxyDHCPv6.
type ProxyDHCPv6Config struct {
	// Addr is the UDP address ListenAndServe binds, e.g. "[::]:547"
	// (which joins the all-DHCP-servers multicast groups). Off unless the
	// operator asks for it.
	Addr string
	// ServerMAC names this server in its DUID (option 2); required.
	ServerMAC net.HardwareAddr
	// EFIBinary is the iPXE binary http-ipxe nodes get (EFIBinary or
	// SNPOnlyBinary; default EFIBinary).
	EFIBinary string
	// Log receives one line per answer; nil discards.
	Log *slog.Logger
}

// ProxyDHCPv6 answers UEFI HTTP boot firmware asking over DHCPv6 (vendor
// class option 16 "HTTPClient", architecture 16 in option 61) whose MAC
// belongs to a node booted by the http or http-ipxe interface, with the
// loader's URL as Boot File URL (option 59, Ironic's DHCPV6_BOOTFILE_NAME)
// and vendor class "HTTPClient" — boot information only, no address (no
// IA_NA: the site's DHCPv6 server or SLAAC gives the address). Solicit
// gets an Advertise, Request and Information-request a Reply; relayed
// messages are answered through the relay.
//
// The MAC is read from the client's DUID (DUID-LLT or DUID-LL) or a
// relay's client link-layer address option (79); a client identified by
// DUID-UUID or DUID-EN alone cannot be matched to a node and gets no
// answer. The URL is HTTPURL's: give anvil serve an --http-url the
// IPv6 firmware can reach (e.g. http://[fd00::1]:6385/boot).
type ProxyDHCPv6 struct {
	svc *Service
	cfg ProxyDHCPv6Config
	log *slog.Logger
}

// NewProxyDHCPv6 checks cfg.
func NewProxyDHCPv6(svc *Service, cfg ProxyDHCPv6Config) (*ProxyDHCPv6, error) {
	if svc == nil {
		return nil, errors.New("proxydhcpv6: a boot service is required")
	}
	if len(cfg.ServerMAC) != 6 {
		return nil, errors.New("proxydhcpv6: ServerMAC (the server's DUID) is required")
	}
	efi, err := efiBinaryOrDefault("proxydhcpv6", cfg.EFIBinary)
	if err != nil {
		return nil, err
	}
	cfg.EFIBinary = efi
	return &ProxyDHCPv6{svc: svc, cfg: cfg, log: componentLog(cfg.Log, "proxydhcpv6")}, nil
}

// Listen binds cfg.Addr (joining the all-DHCP-servers multicast groups
// when it is the wildcard address on port 547) and returns the function
// that serves until its context ends.
func (p *ProxyDHCPv6) Listen() (func(context.Context) error, error) {
	if p.cfg.Addr == "" {
		return nil, errors.New("proxydhcpv6: no listen address")
	}
	addr, err := net.ResolveUDPAddr("udp6", p.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("proxydhcpv6: %w", err)
	}
	srv, err := server6.NewServer("", addr, p.handle)
	if err != nil {
		return nil, fmt.Errorf("proxydhcpv6: %w", err)
	}
	return func(ctx context.Context) error { return p.run(ctx, srv) }, nil
}

// Serve answers packets arriving on conn until ctx ends; it closes conn.
func (p *ProxyDHCPv6) Serve(ctx context.Context, conn net.PacketConn) error {
	srv, err := server6.NewServer("", nil, p.handle, server6.WithConn(conn))
	if err != nil {
		conn.Close()
		return fmt.Errorf("proxydhcpv6: %w", err)
	}
	return p.run(ctx, srv)
}

func (p *ProxyDHCPv6) run(ctx context.Context, srv *server6.Server) error {
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err := srv.Serve()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("proxydhcpv6: %w", err)
}

func (p *ProxyDHCPv6) handle(conn net.PacketConn, peer net.Addr, m dhcpv6.DHCPv6) {
	reply := p.Reply(m)
	if reply == nil {
		return
	}
	if _, err := conn.WriteTo(reply.ToBytes(), peer); err != nil {
		p.log.Warn("sending DHCPv6 answer", "dst", peer.String(), "err", err)
		return
	}
	p.log.Info("DHCPv6 answer", "type", reply.Type().String(), "dst", peer.String())
}

// Reply decides the answer to one message: nil when it gets none.
func (p *ProxyDHCPv6) Reply(m dhcpv6.DHCPv6) dhcpv6.DHCPv6 {
	var mac net.HardwareAddr
	inner := m
	if m.IsRelay() {
		// The relay next to the client (the innermost) adds option 79.
		last, err := dhcpv6.DecapsulateRelayIndex(m, -1)
		if err != nil {
			return nil
		}
		r, ok := last.(*dhcpv6.RelayMessage)
		if !ok {
			return nil
		}
		if ht, lla := r.Options.ClientLinkLayerAddress(); ht == iana.HWTypeEthernet && len(lla) == 6 {
			mac = lla
		}
		if inner, err = dhcpv6.DecapsulateRelay(r); err != nil {
			return nil
		}
	}
	msg, ok := inner.(*dhcpv6.Message)
	if !ok || !isHTTPClient6(msg) {
		return nil
	}
	if mac == nil {
		mac = duidMAC(msg.Options.ClientID())
	}
	if mac == nil {
		p.log.Debug("DHCPv6 HTTP boot client without a MAC in its DUID", "duid", fmt.Sprint(msg.Options.ClientID()))
		return nil
	}
	url := p.svc.HTTPBootURL(mac, p.cfg.EFIBinary)
	if url == "" {
		return nil
	}
	mods := []dhcpv6.Modifier{
		dhcpv6.WithServerID(&dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: p.cfg.ServerMAC}),
		dhcpv6.WithOption(dhcpv6.OptBootFileURL(url)),
		dhcpv6.WithOption(&dhcpv6.OptVendorClass{EnterpriseNumber: enterpriseUEFI, Data: [][]byte{[]byte(httpVendorClass)}}),
	}
	var reply *dhcpv6.Message
	var err error
	switch msg.Type() {
	case dhcpv6.MessageTypeSolicit:
		reply, err = dhcpv6.NewAdvertiseFromSolicit(msg, mods...)
	case dhcpv6.MessageTypeRequest, dhcpv6.MessageTypeInformationRequest:
		reply, err = dhcpv6.NewReplyFromMessage(msg, mods...)
	default:
		return nil
	}
	if err != nil {
		p.log.Warn("building DHCPv6 answer", "err", err)
		return nil
	}
	if r, ok := m.(*dhcpv6.RelayMessage); ok {
		out, err := dhcpv6.NewRelayReplFromRelayForw(r, reply)
		if err != nil {
			p.log.Warn("building DHCPv6 relay answer", "err", err)
			return nil
		}
		return out
	}
	return reply
}

// isHTTPClient6 reports whether msg comes from x86-64 UEFI HTTP boot
// firmware: vendor class "HTTPClient..." and architecture 16.
func isHTTPClient6(msg *dhcpv6.Message) bool {
	if !msg.Options.ArchTypes().Contains(iana.EFI_X86_64_HTTP) {
		return false
	}
	for _, vc := range msg.Options.VendorClasses() {
		for _, d := range vc.Data {
			if strings.HasPrefix(string(d), httpVendorClass) {
				return true
			}
		}
	}
	return false
}

// duidMAC is the Ethernet address in a DUID-LLT or DUID-LL, else nil.
func duidMAC(d dhcpv6.DUID) net.HardwareAddr {
	switch d := d.(type) {
	case *dhcpv6.DUIDLLT:
		if d.HWType == iana.HWTypeEthernet && len(d.LinkLayerAddr) == 6 {
			return d.LinkLayerAddr
		}
	case *dhcpv6.DUIDLL:
		if d.HWType == iana.HWTypeEthernet && len(d.LinkLayerAddr) == 6 {
			return d.LinkLayerAddr
		}
	}
	return nil
}
