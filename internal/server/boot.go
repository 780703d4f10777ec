package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/anvil-metal/anvil/internal/boot"
	"github.com/anvil-metal/anvil/internal/driver/pxe"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/isoimage"
)

// BootConfig turns on the network boot endpoint of `anvil serve` (Ironic's
// [deploy]http_url and http_root, [DEFAULT]public_endpoint).
type BootConfig struct {
	// AllowMD5 lets the image cache verify md5 checksums (set from
	// Config.AllowMD5, the one switch of both md5 policies).
	AllowMD5 bool
	// HTTPURL is the boot endpoint as machines reach it, e.g.
	// http://10.0.2.100:6385/boot; its path is served on the API listener.
	// Empty leaves network boot off.
	HTTPURL string
	// Root holds per-node files and the image cache.
	Root string
	// PublicEndpoint is the API URL agents are given (ipa-api-url=).
	PublicEndpoint string
	// FileAllowedPaths restricts local image files to these directories
	// (empty: Root's images directory, boot.DefaultImagesDir).
	FileAllowedPaths []string
	// Private are files no allowed directory may hold (Serve adds the
	// SQLite database).
	Private []string
	// DHCPProxy, when set, is the UDP address of the built-in proxyDHCP
	// server (e.g. 0.0.0.0:67): it answers PXE clients of known MACs with
	// boot information only, never an address.
	DHCPProxy string
	// DHCP6Proxy, when set, is the UDP address of the built-in DHCPv6
	// answer to UEFI HTTP boot firmware (e.g. [::]:547): the boot file URL
	// of http and http-ipxe nodes, never an address.
	DHCP6Proxy string
	// ServerIP is this host's address on the boot network, handed to PXE
	// firmware for TFTP (default: the host of HTTPURL).
	ServerIP string
	// TFTPListen, when set, is the UDP address of the built-in TFTP server
	// of the iPXE binaries in TFTPDir (e.g. 0.0.0.0:69).
	TFTPListen string
	TFTPDir    string
	// EFIBinary is the iPXE binary UEFI firmware gets from the proxyDHCP
	// servers, by TFTP (PXE) or over HTTP (http-ipxe): boot.EFIBinary
	// (default) or boot.SNPOnlyBinary (Ironic's
	// [pxe]uefi_ipxe_bootfile_name).
	EFIBinary string
	// ISOLoaders are the boot loader files of virtual media ISOs (zero
	// values: Debian's paths, see isoimage.DefaultLoaders).
	ISOLoaders isoimage.Loaders
}

// newBoot builds the boot service, the publisher the boot interfaces use and
// the handler that serves HTTPURL's path on the API listener.
// The proxyDHCP and TFTP servers, when configured, are bound before it
// returns and serve until ctx ends; a failure after that is sent on errc.
func newBoot(ctx context.Context, cfg BootConfig, log *slog.Logger, errc chan<- error) (bootPublisher, string, http.Handler, error) {
	var none bootPublisher
	u, err := url.Parse(cfg.HTTPURL)
	if err != nil {
		return none, "", nil, fmt.Errorf("--http-url: %w", err)
	}
	prefix := strings.TrimRight(u.Path, "/")
	if prefix == "" {
		return none, "", nil, fmt.Errorf("--http-url %s needs a path (such as /boot) to share the API's listener", cfg.HTTPURL)
	}
	svc, err := boot.New(boot.Config{Root: cfg.Root, HTTPURL: cfg.HTTPURL, APIURL: cfg.PublicEndpoint,
		FileAllowedPaths: cfg.FileAllowedPaths, Private: cfg.Private, Log: log, ISOLoaders: cfg.ISOLoaders,
		LoaderDir: cfg.TFTPDir, AllowMD5: cfg.AllowMD5})
	if err != nil {
		return none, "", nil, err
	}
	if err := startBootServers(ctx, svc, cfg, u.Hostname(), log, errc); err != nil {
		return none, "", nil, err
	}
	if err := svc.CheckISOLoaders(); err != nil {
		log.Warn("virtual media boot (redfish-virtual-media) cannot build ISOs until the loaders are installed", "err", err)
	}
	return bootPublisher{svc}, prefix, http.StripPrefix(prefix, svc.Handler()), nil
}

// startBootServers binds and runs the optional proxyDHCP and TFTP servers.
func startBootServers(ctx context.Context, svc *boot.Service, cfg BootConfig, urlHost string, log *slog.Logger, errc chan<- error) error {
	run := func(name string, serve func(context.Context) error) {
		go func() {
			if err := serve(ctx); err != nil && ctx.Err() == nil {
				select {
				case errc <- fmt.Errorf("%s: %w", name, err):
				default:
				}
			}
		}()
	}
	if cfg.TFTPListen != "" {
		dir := cfg.TFTPDir
		if dir == "" {
			dir = boot.DefaultTFTPDir
		}
		t, err := boot.NewTFTP(dir)
		if err != nil {
			return fmt.Errorf("--tftp-listen: %w", err)
		}
		t.Log = log
		t.Seen = svc.SeenLog()
		conn, err := (&net.ListenConfig{}).ListenPacket(ctx, "udp", cfg.TFTPListen)
		if err != nil {
			return fmt.Errorf("--tftp-listen: %w", err)
		}
		run("tftp", func(ctx context.Context) error { return t.Serve(ctx, conn) })
	}
	if cfg.DHCPProxy != "" {
		ipText := cfg.ServerIP
		if ipText == "" {
			ipText = urlHost
		}
		ip := net.ParseIP(ipText).To4()
		if ip == nil {
			return fmt.Errorf("--dhcp-proxy needs --boot-server-ip (the IPv4 address PXE firmware fetches iPXE from; %q is not one)", ipText)
		}
		p, err := boot.NewProxyDHCP(svc, boot.ProxyDHCPConfig{Addr: cfg.DHCPProxy, ServerIP: ip, EFIBinary: cfg.EFIBinary, Log: log})
		if err != nil {
			return fmt.Errorf("--dhcp-proxy: %w", err)
		}
		conn, err := p.Listen(ctx)
		if err != nil {
			return fmt.Errorf("--dhcp-proxy: %w", err)
		}
		run("proxydhcp", func(ctx context.Context) error { return p.Serve(ctx, conn) })
	}
	if cfg.DHCP6Proxy != "" {
		// The server's DUID: a locally administered MAC derived from the
		// boot endpoint, stable across restarts.
		sum := sha256.Sum256([]byte(cfg.HTTPURL))
		mac := net.HardwareAddr{sum[0]&0xfc | 0x02, sum[1], sum[2], sum[3], sum[4], sum[5]}
		p, err := boot.NewProxyDHCPv6(svc, boot.ProxyDHCPv6Config{Addr: cfg.DHCP6Proxy, ServerMAC: mac, EFIBinary: cfg.EFIBinary, Log: log})
		if err != nil {
			return fmt.Errorf("--dhcp6-proxy: %w", err)
		}
		serve, err := p.Listen()
		if err != nil {
			return fmt.Errorf("--dhcp6-proxy: %w", err)
		}
		run("proxydhcpv6", serve)
	}
	return nil
}

// bootPublisher is the boot service as the boot interfaces see it: the
// network boot interfaces' pxe.Publisher and redfish-virtual-media's
// redfish.ISOPublisher.
type bootPublisher struct{ s *boot.Service }

func (p bootPublisher) PublishISO(ctx context.Context, node string, r redfish.ISORamdisk) (string, error) {
	return p.s.PublishISO(ctx, node, boot.Ramdisk{Kernel: boot.Image{Source: r.Kernel},
		Ramdisk: boot.Image{Source: r.Ramdisk}, KernelParams: r.KernelParams})
}

// CheckISOLoaders reports missing ISO boot loaders (naming their packages).
func (p bootPublisher) CheckISOLoaders() error { return p.s.CheckISOLoaders() }

func (p bootPublisher) PublishRamdisk(ctx context.Context, node string, macs []string, r pxe.Ramdisk) error {
	return p.s.PublishRamdisk(ctx, node, macs, boot.Ramdisk{Kernel: boot.Image(r.Kernel),
		Ramdisk: boot.Image(r.Ramdisk), KernelParams: r.KernelParams, HTTPBoot: r.HTTPBoot})
}

func (p bootPublisher) PublishLocalBoot(ctx context.Context, node string, macs []string) error {
	return p.s.PublishLocalBoot(ctx, node, macs)
}

func (p bootPublisher) Withdraw(ctx context.Context, node string) error {
	return p.s.Withdraw(ctx, node)
}
