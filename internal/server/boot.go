package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/anvil-metal/anvil/internal/boot"
	"github.com/anvil-metal/anvil/internal/driver/pxe"
)

// BootConfig turns on the network boot endpoint of `anvil serve` (Ironic's
// [deploy]http_url and http_root, [DEFAULT]public_endpoint).
type BootConfig struct {
	// HTTPURL is the boot endpoint as machines reach it, e.g.
	// http://10.0.2.100:6385/boot; its path is served on the API listener.
	// Empty leaves network boot off.
	HTTPURL string
	// Root holds per-node files and the image cache.
	Root string
	// PublicEndpoint is the API URL agents are given (ipa-api-url=).
	PublicEndpoint string
	// FileAllowedPaths restricts local image files to these directories.
	FileAllowedPaths []string
}

// newBoot builds the boot service, the publisher the boot interfaces use and
// the handler that serves HTTPURL's path on the API listener.
func newBoot(cfg BootConfig, log *slog.Logger) (pxe.Publisher, string, http.Handler, error) {
	u, err := url.Parse(cfg.HTTPURL)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--http-url: %w", err)
	}
	prefix := strings.TrimRight(u.Path, "/")
	if prefix == "" {
		return nil, "", nil, fmt.Errorf("--http-url %s needs a path (such as /boot) to share the API's listener", cfg.HTTPURL)
	}
	svc, err := boot.New(boot.Config{Root: cfg.Root, HTTPURL: cfg.HTTPURL, APIURL: cfg.PublicEndpoint,
		FileAllowedPaths: cfg.FileAllowedPaths, Log: log})
	if err != nil {
		return nil, "", nil, err
	}
	return bootPublisher{svc}, prefix, http.StripPrefix(prefix, svc.Handler()), nil
}

// bootPublisher is the boot service as the boot interfaces see it.
type bootPublisher struct{ s *boot.Service }

func (p bootPublisher) PublishRamdisk(ctx context.Context, node string, macs []string, r pxe.Ramdisk) error {
	return p.s.PublishRamdisk(ctx, node, macs, boot.Ramdisk{Kernel: boot.Image(r.Kernel),
		Ramdisk: boot.Image(r.Ramdisk), KernelParams: r.KernelParams})
}

func (p bootPublisher) PublishLocalBoot(ctx context.Context, node string, macs []string) error {
	return p.s.PublishLocalBoot(ctx, node, macs)
}

func (p bootPublisher) Withdraw(ctx context.Context, node string) error {
	return p.s.Withdraw(ctx, node)
}
