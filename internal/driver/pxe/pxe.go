package pxe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Interface names and modes.
const (
	IPXE = "ipxe"
	PXE  = "pxe"
	// HTTP and HTTPIPXE are UEFI HTTP boot (Ironic's HttpBoot and
	// iPXEHttpBoot): the firmware's own HTTP client downloads GRUB, or
	// iPXE's EFI binary, named by the boot service's DHCP answer to its
	// "HTTPClient" vendor class; no TFTP, no NIC option ROM.
	HTTP     = "http"
	HTTPIPXE = "http-ipxe"
)

// Loaders a Ramdisk's HTTPBoot names (internal/boot's HTTPBootIPXE and
// HTTPBootGRUB).
const (
	LoaderIPXE = "ipxe"
	LoaderGRUB = "grub"
)

// Image is a file the boot service fetches and serves: a URL or a local
// path, and its checksum when known ("" = not checked).
type Image struct {
	Source   string
	Checksum string
}

// Ramdisk is what a node boots into: the agent's kernel and initramfs and
// the kernel command line.
type Ramdisk struct {
	Kernel, Ramdisk Image
	KernelParams    string
	// HTTPBoot is the loader UEFI HTTP boot firmware gets (LoaderIPXE,
	// LoaderGRUB); "" for the PXE interfaces.
	HTTPBoot string
}

// Publisher serves nodes' boot files; internal/boot implements it.
type Publisher interface {
	// PublishRamdisk makes the machine with any of macs boot r next.
	PublishRamdisk(ctx context.Context, node string, macs []string, r Ramdisk) error
	// PublishLocalBoot makes the machine boot from its disk if it network boots.
	PublishLocalBoot(ctx context.Context, node string, macs []string) error
	// Withdraw removes everything published for node.
	Withdraw(ctx context.Context, node string) error
}

// Config configures both interfaces.
type Config struct {
	// Publisher is the boot service; nil means network boot is not
	// configured and validation fails with ErrNotConfigured.
	Publisher Publisher
	// KernelParams is the default kernel command line addition
	// (Ironic's [pxe]kernel_append_params).
	KernelParams string
}

// ErrNotConfigured is returned when no boot service was handed in.
var ErrNotConfigured = errors.New("iPXE boot is enabled but no HTTP URL or HTTP root was specified (network boot is not configured: start anvil serve with --http-url)")

// Boot is the "ipxe", "pxe", "http-ipxe" or "http" boot interface.
type Boot struct {
	cfg  Config
	mode string
}

// New returns the boot interface for mode (IPXE, PXE, HTTPIPXE or HTTP).
func New(mode string, cfg Config) *Boot { return &Boot{cfg: cfg, mode: mode} }

// Mode is IPXE, PXE, HTTPIPXE or HTTP.
func (b *Boot) Mode() string { return b.mode }

// httpLoader is what the mode hands UEFI HTTP boot firmware.
func (b *Boot) httpLoader() string {
	switch b.mode {
	case HTTPIPXE:
		return LoaderIPXE
	case HTTP:
		return LoaderGRUB
	}
	return ""
}

// Properties are the driver_info keys the interfaces read.
func Properties() map[string]string {
	return map[string]string{
		"deploy_kernel":        "URL or path of the deployment kernel. Required.",
		"deploy_ramdisk":       "URL or path of the deployment ramdisk. Required.",
		"rescue_kernel":        "URL or path of the rescue kernel. Required for rescue.",
		"rescue_ramdisk":       "URL or path of the rescue ramdisk. Required for rescue.",
		"kernel_append_params": "Additional kernel parameters for the ramdisk (instance_info overrides). Optional.",
	}
}

// missingError is Ironic's MissingParameterValue from pxe_utils.parse_driver_info.
type missingError struct{ missing []string }

func (e *missingError) Error() string {
	return "Cannot validate PXE bootloader. Some parameters were missing in node's driver_info and configuration. Missing are: " + pyrepr.Strings(e.missing)
}

// ramdiskInfo reads mode's kernel and ramdisk from driver_info.
func ramdiskInfo(n *model.Node, mode string) (kernel, ramdisk string, err error) {
	kk, rk := mode+"_kernel", mode+"_ramdisk"
	kernel, _ = n.DriverInfo[kk].(string)
	ramdisk, _ = n.DriverInfo[rk].(string)
	var missing []string
	if kernel == "" {
		missing = append(missing, kk)
	}
	if ramdisk == "" {
		missing = append(missing, rk)
	}
	if missing != nil {
		return "", "", &missingError{missing: missing}
	}
	return kernel, ramdisk, nil
}

// kernelParams is the node's kernel_append_params over the default.
func (b *Boot) kernelParams(n *model.Node) string {
	return driver.KernelAppendParams(n, b.cfg.KernelParams)
}

// Validate checks network boot is configured and the deploy ramdisk is
// named; for a ramdisk deploy, ValidateRamdiskBoot.
func (b *Boot) Validate(t *driver.Task) error {
	n := t.Node
	if driver.IsRamdiskDeploy(n) {
		return b.ValidateRamdiskBoot(n)
	}
	if b.cfg.Publisher == nil {
		return ErrNotConfigured
	}
	_, _, err := ramdiskInfo(n, driver.RamdiskDeploy)
	return err
}

// ValidateRescue checks the rescue ramdisk is named.
func (b *Boot) ValidateRescue(n *model.Node) error {
	if b.cfg.Publisher == nil {
		return ErrNotConfigured
	}
	_, _, err := ramdiskInfo(n, driver.RamdiskRescue)
	return err
}

// ValidatePorts checks the node has a port to network boot from.
func (b *Boot) ValidatePorts(t *driver.Task) error {
	_, err := macs(t)
	return err
}

// macs are the node's ports' addresses; a node without ports cannot network boot.
func macs(t *driver.Task) ([]string, error) {
	var out []string
	for _, p := range t.Ports {
		if p.Address != "" {
			out = append(out, strings.ToLower(p.Address))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Node %s does not have any port associated with it", t.Node.UUID)
	}
	return out, nil
}

// PrepareRamdisk publishes mode's ramdisk for the node's MACs and sets the
// boot device to pxe for the next boot.
func (b *Boot) PrepareRamdisk(ctx context.Context, t *driver.Task, mode string) error {
	if b.cfg.Publisher == nil {
		return ErrNotConfigured
	}
	kernel, ramdisk, err := ramdiskInfo(t.Node, mode)
	if err != nil {
		return err
	}
	m, err := macs(t)
	if err != nil {
		return err
	}
	r := Ramdisk{Kernel: Image{Source: kernel}, Ramdisk: Image{Source: ramdisk}, KernelParams: b.kernelParams(t.Node), HTTPBoot: b.httpLoader()}
	if err := b.cfg.Publisher.PublishRamdisk(ctx, t.Node.UUID, m, r); err != nil {
		return fmt.Errorf("publishing the %s ramdisk: %w", mode, err)
	}
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "pxe"})
}

// CleanUpRamdisk withdraws the node's files.
func (b *Boot) CleanUpRamdisk(ctx context.Context, t *driver.Task) error { return b.withdraw(ctx, t) }

// PrepareInstance publishes a local-boot script (a machine that still
// network boots goes on to its disk) and sets the boot device to disk.
func (b *Boot) PrepareInstance(ctx context.Context, t *driver.Task) error {
	if b.cfg.Publisher == nil {
		return ErrNotConfigured
	}
	m, err := macs(t)
	if err != nil {
		return err
	}
	if err := b.cfg.Publisher.PublishLocalBoot(ctx, t.Node.UUID, m); err != nil {
		return fmt.Errorf("publishing local boot: %w", err)
	}
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "disk", Persistent: true})
}

// CleanUpInstance withdraws the node's files.
func (b *Boot) CleanUpInstance(ctx context.Context, t *driver.Task) error { return b.withdraw(ctx, t) }

func (b *Boot) withdraw(ctx context.Context, t *driver.Task) error {
	if b.cfg.Publisher == nil {
		return nil // nothing can have been published
	}
	if err := b.cfg.Publisher.Withdraw(ctx, t.Node.UUID); err != nil {
		return fmt.Errorf("withdrawing boot files: %w", err)
	}
	return nil
}

var _ driver.RamdiskBooter = (*Boot)(nil)

// ValidateRamdiskBoot checks, in the order of Ironic's PXE validation,
// that network boot is configured, that image_source and boot_iso are not
// both set, the agent's ramdisk when cleaning needs it, and that
// instance_info names a kernel and ramdisk (driver.InstanceBootOf). A
// boot_iso is refused: Anvil's network boot serves kernels and ramdisks,
// it does not sanboot ISOs as Ironic's iPXE can.
func (b *Boot) ValidateRamdiskBoot(n *model.Node) error {
	if b.cfg.Publisher == nil {
		return ErrNotConfigured
	}
	if s, _ := n.InstanceInfo["image_source"].(string); s != "" {
		if iso, _ := n.InstanceInfo["boot_iso"].(string); iso != "" {
			return errors.New(driver.ErrConflictingImage)
		}
	}
	if driver.NeedsAgentRamdisk(n) {
		if _, _, err := ramdiskInfo(n, driver.RamdiskDeploy); err != nil {
			return err
		}
	}
	ib, err := driver.InstanceBootOf(n)
	if err != nil {
		return err
	}
	if ib.ISO != "" {
		return fmt.Errorf("instance_info boot_iso of node %s cannot be booted by the %s boot interface: it boots instance_info kernel and ramdisk (use redfish-virtual-media for an ISO)", n.UUID, b.mode)
	}
	return nil
}

// PrepareRamdiskBoot publishes the instance's kernel and ramdisk for the
// node's MACs, with instance_info ramdisk_kernel_arguments, and sets the
// boot device to pxe persistently: the node boots them on every boot.
func (b *Boot) PrepareRamdiskBoot(ctx context.Context, t *driver.Task) error {
	if err := b.ValidateRamdiskBoot(t.Node); err != nil {
		return err
	}
	ib, _ := driver.InstanceBootOf(t.Node)
	m, err := macs(t)
	if err != nil {
		return err
	}
	r := Ramdisk{Kernel: Image{Source: ib.Kernel}, Ramdisk: Image{Source: ib.Ramdisk}, KernelParams: ib.KernelParams, HTTPBoot: b.httpLoader()}
	if err := b.cfg.Publisher.PublishRamdisk(ctx, t.Node.UUID, m, r); err != nil {
		return fmt.Errorf("publishing the instance's kernel and ramdisk: %w", err)
	}
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "pxe", Persistent: true})
}
