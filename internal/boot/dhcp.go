package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/insomniacslk/dhcp/iana"

	"github.com/anvil-metal/anvil/internal/model"
)

// The iPXE binaries handed to PXE firmware, as Debian's ipxe package names
// them in /usr/lib/ipxe.
const (
	// BIOSBinary chainloads iPXE from a BIOS PXE ROM through its UNDI driver.
	BIOSBinary = "undionly.kpxe"
	// EFIBinary is iPXE for UEFI x86-64 with its own NIC drivers.
	EFIBinary = "ipxe.efi"
	// SNPOnlyBinary is iPXE for UEFI x86-64 using the firmware's network stack.
	SNPOnlyBinary = "snponly.efi"
	// DefaultTFTPDir is where Debian's ipxe package puts the binaries.
	DefaultTFTPDir = "/usr/lib/ipxe"
)

// iPXE's user class (option 77) and its private encapsulated options
// (option 175), either of which marks a client already running iPXE.
const (
	ipxeUserClass  = "iPXE"
	optionIPXE     = 175
	pxeVendorClass = "PXEClient"
)

// ProxyDHCPConfig configures a ProxyDHCP.
type ProxyDHCPConfig struct {
	// Addr is the UDP address ListenAndServe binds, e.g. "0.0.0.0:67" on
	// the boot network. Off unless the operator asks for it.
	Addr string
	// ServerIP is where PXE firmware fetches the iPXE binary by TFTP
	// (siaddr and option 54). Required.
	ServerIP net.IP
	// EFIBinary is the iPXE binary for UEFI x86-64: EFIBinary (default) or
	// SNPOnlyBinary.
	EFIBinary string
	// Log receives one line per answer; nil discards.
	Log *slog.Logger
}

// ProxyDHCP answers the DHCP discover and request of PXE clients whose MAC
// the Service knows, with boot information only: it never offers an
// address (the site's DHCP server does), as Ironic's dnsmasq in proxy mode
// and Tinkerbell's smee do. PXE firmware gets the iPXE binary by TFTP; iPXE
// gets the URL of the boot script. Everyone else gets no answer.
type ProxyDHCP struct {
	svc *Service
	cfg ProxyDHCPConfig
	log *slog.Logger
}

// NewProxyDHCP checks cfg; serving starts with ListenAndServe or Serve.
func NewProxyDHCP(svc *Service, cfg ProxyDHCPConfig) (*ProxyDHCP, error) {
	if svc == nil {
		return nil, errors.New("proxydhcp: a boot service is required")
	}
	if cfg.ServerIP.To4() == nil || cfg.ServerIP.IsUnspecified() {
		return nil, fmt.Errorf("proxydhcp: ServerIP %v must be an IPv4 address clients can reach", cfg.ServerIP)
	}
	efi, err := efiBinaryOrDefault("proxydhcp", cfg.EFIBinary)
	if err != nil {
		return nil, err
	}
	cfg.EFIBinary = efi
	return &ProxyDHCP{svc: svc, cfg: cfg, log: componentLog(cfg.Log, "proxydhcp")}, nil
}

// efiBinaryOrDefault is the iPXE EFI binary a proxy names: EFIBinary by
// default, or SNPOnlyBinary; anything else is an error of who.
func efiBinaryOrDefault(who, name string) (string, error) {
	switch name {
	case "":
		return EFIBinary, nil
	case EFIBinary, SNPOnlyBinary:
		return name, nil
	}
	return "", fmt.Errorf("%s: EFIBinary %q must be %s or %s", who, name, EFIBinary, SNPOnlyBinary)
}

// componentLog is log (discarding when nil) naming the component.
func componentLog(log *slog.Logger, component string) *slog.Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return log.With("component", component)
}

// ListenAndServe binds (Listen) and serves until ctx ends.
func (p *ProxyDHCP) ListenAndServe(ctx context.Context) error {
	conn, err := p.Listen(ctx)
	if err != nil {
		return err
	}
	return p.Serve(ctx, conn)
}

// Listen binds cfg.Addr with SO_BROADCAST, since clients without an
// address are answered by broadcast.
func (p *ProxyDHCP) Listen(ctx context.Context) (net.PacketConn, error) {
	if p.cfg.Addr == "" {
		return nil, errors.New("proxydhcp: no listen address")
	}
	lc := net.ListenConfig{Control: enableBroadcast}
	conn, err := lc.ListenPacket(ctx, "udp4", p.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("proxydhcp: %w", err)
	}
	return conn, nil
}

// Serve answers packets arriving on conn until ctx ends; it closes conn.
func (p *ProxyDHCP) Serve(ctx context.Context, conn net.PacketConn) error {
	srv, err := server4.NewServer("", nil, p.handle, server4.WithConn(conn))
	if err != nil {
		conn.Close()
		return fmt.Errorf("proxydhcp: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	p.log.Info("proxyDHCP serving", "addr", conn.LocalAddr().String(), "next_server", p.cfg.ServerIP.String())
	err = srv.Serve()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("proxydhcp: %w", err)
}

func (p *ProxyDHCP) handle(conn net.PacketConn, peer net.Addr, req *dhcpv4.DHCPv4) {
	reply := p.Reply(req)
	p.see(req, reply)
	if reply == nil {
		return
	}
	dst := peer
	if gw := req.GatewayIPAddr; gw != nil && !gw.IsUnspecified() { // through a relay
		dst = &net.UDPAddr{IP: gw, Port: dhcpv4.ServerPort}
	}
	if _, err := conn.WriteTo(reply.ToBytes(), dst); err != nil {
		p.log.Warn("sending proxyDHCP answer", "mac", req.ClientHWAddr.String(), "dst", dst.String(), "err", err)
		return
	}
	p.log.Info("proxyDHCP answer", "mac", req.ClientHWAddr.String(), "type", reply.MessageType().String(), "boot_file", reply.BootFileNameOption(), "dst", dst.String())
}

// see records a PXE client's request and the answer (none for an unknown
// MAC): what the machine's firmware did, for its diagnosis.
func (p *ProxyDHCP) see(req, reply *dhcpv4.DHCPv4) {
	if req.OpCode != dhcpv4.OpcodeBootRequest || len(req.ClientHWAddr) != 6 || !strings.HasPrefix(req.ClassIdentifier(), pxeVendorClass) {
		return
	}
	ev := model.BootEvent{Service: "proxydhcp", MAC: req.ClientHWAddr.String(), Status: "ignored",
		Note: req.MessageType().String() + " from a MAC with no published boot configuration"}
	switch {
	case reply != nil:
		ev.Status, ev.File, ev.Note = strings.ToLower(reply.MessageType().String()), reply.BootFileNameOption(), ""
	case p.svc.KnownMAC(req.ClientHWAddr):
		ev.Status, ev.Note = "no answer", req.MessageType().String()+" not answered (not a DISCOVER or REQUEST, or no iPXE binary for the client's architecture)"
	}
	// The address the client asks for ties its later TFTP fetches (which
	// only know the address) to its MAC.
	if ip := req.RequestedIPAddress(); ip != nil && !ip.IsUnspecified() {
		ev.Remote = net.JoinHostPort(ip.String(), "68")
	}
	p.svc.see(ev)
}

// Reply decides the answer to one packet: nil when the packet gets none.
func (p *ProxyDHCP) Reply(req *dhcpv4.DHCPv4) *dhcpv4.DHCPv4 {
	if req.OpCode != dhcpv4.OpcodeBootRequest || len(req.ClientHWAddr) != 6 {
		return nil
	}
	var typ dhcpv4.MessageType
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		typ = dhcpv4.MessageTypeOffer
	case dhcpv4.MessageTypeRequest:
		typ = dhcpv4.MessageTypeAck
	default:
		return nil
	}
	if strings.HasPrefix(req.ClassIdentifier(), httpVendorClass) {
		return p.httpReply(req)
	}
	if !strings.HasPrefix(req.ClassIdentifier(), pxeVendorClass) || !p.svc.KnownMAC(req.ClientHWAddr) {
		return nil
	}
	file := p.bootFile(req)
	if file == "" {
		p.log.Debug("no iPXE binary for this client architecture", "mac", req.ClientHWAddr.String(), "arch", fmt.Sprint(req.ClientArch()))
		return nil
	}
	reply, err := dhcpv4.NewReplyFromRequest(req,
		dhcpv4.WithMessageType(typ),
		dhcpv4.WithServerIP(p.cfg.ServerIP),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(p.cfg.ServerIP)),
		dhcpv4.WithOption(dhcpv4.OptClassIdentifier(pxeVendorClass)),
		// PXE discovery control: boot the file named here, skip boot server
		// discovery (no menu, no request to port 4011).
		dhcpv4.WithOption(dhcpv4.OptGeneric(dhcpv4.OptionVendorSpecificInformation, []byte{6, 1, 8, 255})),
		dhcpv4.WithOption(dhcpv4.OptBootFileName(file)),
	)
	if err != nil {
		p.log.Warn("building proxyDHCP answer", "err", err)
		return nil
	}
	reply.YourIPAddr = net.IPv4zero // proxyDHCP never offers an address
	if len(file) < 128 {
		reply.BootFileName = file // PXE ROMs read the header field
	}
	if uuid := req.GetOneOption(dhcpv4.OptionClientMachineIdentifier); uuid != nil {
		reply.UpdateOption(dhcpv4.OptGeneric(dhcpv4.OptionClientMachineIdentifier, uuid))
	}
	return reply
}

// bootFile is the boot script URL for iPXE, else the iPXE binary for the
// firmware's architecture (option 93; BIOS when absent), "" for others.
func (p *ProxyDHCP) bootFile(req *dhcpv4.DHCPv4) string {
	if slices.Contains(req.UserClass(), ipxeUserClass) || req.Options.Has(dhcpv4.GenericOptionCode(optionIPXE)) {
		return p.svc.ScriptURL()
	}
	arch := iana.INTEL_X86PC
	if archs := req.ClientArch(); len(archs) > 0 {
		arch = archs[0]
	}
	switch arch {
	case iana.INTEL_X86PC:
		return BIOSBinary
	case iana.EFI_X86_64, iana.EFI_BC:
		return p.cfg.EFIBinary
	}
	return ""
}

// httpVendorClass starts the vendor class (option 60) of UEFI HTTP boot
// firmware ("HTTPClient:Arch:00016:UNDI:003000"), and is what its answer
// must carry back.
const httpVendorClass = "HTTPClient"

// httpReply answers UEFI HTTP boot firmware of a MAC whose node boots by
// HTTP (the http and http-ipxe boot interfaces) with option 60
// "HTTPClient" and the loader's URL as boot file (Ironic's
// dhcp_options_for_instance with http_boot_enabled), no address: the
// firmware takes its address from the site's DHCP server and the URL from
// this answer. Only x86-64 UEFI (architecture 16) is answered: the loaders
// served are x86-64 binaries.
func (p *ProxyDHCP) httpReply(req *dhcpv4.DHCPv4) *dhcpv4.DHCPv4 {
	if !IsHTTPClient(req) {
		p.log.Debug("no UEFI HTTP boot loader for this client architecture", "mac", req.ClientHWAddr.String(), "arch", fmt.Sprint(req.ClientArch()))
		return nil
	}
	url := p.svc.HTTPBootURL(req.ClientHWAddr, p.cfg.EFIBinary)
	if url == "" {
		return nil
	}
	reply, err := HTTPBootAnswer(req, p.cfg.ServerIP, url)
	if err != nil {
		p.log.Warn("building proxyDHCP answer", "err", err)
		return nil
	}
	return reply
}

// HTTPBootAnswer is the proxy answer (OFFER to a DISCOVER, ACK to a
// REQUEST; nil for other messages) that hands UEFI HTTP boot firmware url:
// option 60 "HTTPClient", the URL as boot file (option 67, and the file
// field when it fits), serverIP as server, no address. UEFI takes such an
// answer with an address from another DHCP server (its "proxy offer with
// an IP-address URI"). The BMC emulator answers its VMs' HttpBootUri with
// it too.
func HTTPBootAnswer(req *dhcpv4.DHCPv4, serverIP net.IP, url string) (*dhcpv4.DHCPv4, error) {
	var typ dhcpv4.MessageType
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		typ = dhcpv4.MessageTypeOffer
	case dhcpv4.MessageTypeRequest:
		typ = dhcpv4.MessageTypeAck
	default:
		return nil, nil
	}
	reply, err := dhcpv4.NewReplyFromRequest(req,
		dhcpv4.WithMessageType(typ),
		dhcpv4.WithServerIP(serverIP),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(serverIP)),
		dhcpv4.WithOption(dhcpv4.OptClassIdentifier(httpVendorClass)),
		dhcpv4.WithOption(dhcpv4.OptBootFileName(url)),
	)
	if err != nil {
		return nil, err
	}
	reply.YourIPAddr = net.IPv4zero
	if len(url) < 128 {
		reply.BootFileName = url
	}
	return reply, nil
}

// IsHTTPClient reports whether req comes from x86-64 UEFI HTTP boot
// firmware (vendor class HTTPClient, architecture 16).
func IsHTTPClient(req *dhcpv4.DHCPv4) bool {
	archs := req.ClientArch()
	return strings.HasPrefix(req.ClassIdentifier(), httpVendorClass) && len(archs) > 0 && archs[0] == iana.EFI_X86_64_HTTP
}
