package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// VirtualMediaName is the boot interface's name (Ironic's).
const VirtualMediaName = "redfish-virtual-media"

// ISORamdisk is what an ISO is built from: the kernel and ramdisk (URLs or
// local paths) and the node's kernel parameters.
type ISORamdisk struct {
	Kernel, Ramdisk string
	KernelParams    string
}

// ISOPublisher builds and serves nodes' boot ISOs; internal/boot implements it.
type ISOPublisher interface {
	// PublishISO builds (or reuses) the ISO of r and serves it for node;
	// it returns the URL the BMC fetches it from.
	PublishISO(ctx context.Context, node string, r ISORamdisk) (string, error)
	// Withdraw deletes what was published for node.
	Withdraw(ctx context.Context, node string) error
}

// BootConfig configures the redfish-virtual-media boot interface.
type BootConfig struct {
	// Publisher builds and serves ISOs; nil means Anvil's boot endpoint is
	// not configured, and only nodes with deploy_iso/rescue_iso can boot.
	Publisher ISOPublisher
	// KernelParams is the default kernel command line addition
	// (Ironic's [redfish]kernel_append_params).
	KernelParams string
}

// VirtualMediaBoot is the redfish-virtual-media boot interface: the node
// boots the agent from an ISO inserted into its BMC's virtual CD.
type VirtualMediaBoot struct {
	d   *Driver
	cfg BootConfig
}

// NewVirtualMediaBoot returns the boot interface, talking to BMCs through d.
func (d *Driver) NewVirtualMediaBoot(cfg BootConfig) *VirtualMediaBoot {
	return &VirtualMediaBoot{d: d, cfg: cfg}
}

var (
	_ driver.Boot            = (*VirtualMediaBoot)(nil)
	_ driver.RescueValidator = (*VirtualMediaBoot)(nil)
)

// BootProperties are the driver_info keys the interface reads (Ironic's).
func BootProperties() map[string]string {
	return map[string]string{
		"deploy_kernel":        "URL or Glance UUID of the deployment kernel. Required if deploy_iso is not set.",
		"deploy_ramdisk":       "URL or Glance UUID of the ramdisk that is mounted at boot time. Required if deploy_iso is not set.",
		"deploy_iso":           "URL or Glance UUID of the deployment ISO to use. Required if deploy_kernel/deploy_ramdisk are not set.",
		"rescue_kernel":        "URL or Glance UUID of the rescue kernel. Required for rescue mode if rescue_iso is not set.",
		"rescue_ramdisk":       "URL or Glance UUID of the rescue ramdisk with agent that is used at node rescue time. Required for rescue mode if rescue_iso is not set.",
		"rescue_iso":           "URL or Glance UUID of the rescue ISO to use. Required for rescue mode if rescue_kernel/rescue_ramdisk are not set.",
		"kernel_append_params": "Additional kernel parameters to pass down to instance kernel. These parameters can be consumed by the kernel or by the applications by reading /proc/cmdline. Mind severe cmdline size limit. Overrides [redfish]/kernel_append_params ironic option.",
	}
}

// ErrBootNotConfigured: a kernel/ramdisk pair needs Anvil's boot endpoint to serve the ISO.
var ErrBootNotConfigured = errors.New("the redfish-virtual-media boot interface builds its ISO on Anvil's boot endpoint, which is not configured (start anvil serve with --http-url), or set deploy_iso")

// bootSource is what a mode boots: an ISO URL given by the operator, or a
// kernel and ramdisk Anvil builds an ISO of.
type bootSource struct {
	iso             string
	kernel, ramdisk string
}

// parseBootInfo reads mode's ISO or kernel and ramdisk from driver_info
// (Ironic's _parse_driver_info), with Ironic's message when missing;
// redfish_deploy_iso and redfish_rescue_iso are Ironic's deprecated names
// of the ISOs.
func parseBootInfo(n *model.Node, mode string) (bootSource, error) {
	str := func(k string) string { s, _ := n.DriverInfo[k].(string); return strings.TrimSpace(s) }
	iso := str(mode + "_iso")
	if iso == "" {
		iso = str("redfish_" + mode + "_iso")
	}
	if iso != "" {
		u, err := url.Parse(iso)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bootSource{}, fmt.Errorf("Invalid %s_iso %q of node %s: the BMC needs an http(s) URL", mode, iso, n.UUID)
		}
		return bootSource{iso: iso}, nil
	}
	src := bootSource{kernel: str(mode + "_kernel"), ramdisk: str(mode + "_ramdisk")}
	var missing []string
	if src.kernel == "" {
		missing = append(missing, mode+"_kernel")
	}
	if src.ramdisk == "" {
		missing = append(missing, mode+"_ramdisk")
	}
	if missing != nil {
		return bootSource{}, fmt.Errorf("Error validating Redfish virtual media. Some parameters were missing in node's driver_info. Missing are: %s", pyrepr.Strings(missing))
	}
	return src, nil
}

func (b *VirtualMediaBoot) validate(n *model.Node, mode string) error {
	if _, err := parseInfo(n); err != nil {
		return err
	}
	src, err := parseBootInfo(n, mode)
	if err != nil {
		return err
	}
	if src.iso != "" {
		return nil
	}
	if b.cfg.Publisher == nil {
		return ErrBootNotConfigured
	}
	if lc, ok := b.cfg.Publisher.(loaderChecker); ok {
		return lc.CheckISOLoaders()
	}
	return nil
}

// loaderChecker is an optional ISOPublisher capability: whether the boot
// loaders ISOs need are installed (the error names their packages).
type loaderChecker interface{ CheckISOLoaders() error }

// Validate checks the BMC settings and the deploy ramdisk without
// contacting the BMC; for a ramdisk deploy, ValidateRamdiskBoot.
func (b *VirtualMediaBoot) Validate(t *driver.Task) error {
	n := t.Node
	if driver.IsRamdiskDeploy(n) {
		return b.ValidateRamdiskBoot(n)
	}
	return b.validate(n, driver.RamdiskDeploy)
}

// ValidateRescue checks the rescue ramdisk is named.
func (b *VirtualMediaBoot) ValidateRescue(n *model.Node) error {
	return b.validate(n, driver.RamdiskRescue)
}

// kernelParams is the node's kernel_append_params over the default.
func (b *VirtualMediaBoot) kernelParams(n *model.Node) string {
	return driver.KernelAppendParams(n, b.cfg.KernelParams)
}

// PrepareRamdisk publishes mode's ISO (or takes the operator's), inserts
// it into the node's virtual CD (ejecting what was there) and sets a
// one-time boot from it; the caller powers the node on. On failure the
// published ISO is withdrawn.
func (b *VirtualMediaBoot) PrepareRamdisk(ctx context.Context, t *driver.Task, mode string) (err error) {
	if err := b.validate(t.Node, mode); err != nil {
		return err
	}
	src, _ := parseBootInfo(t.Node, mode)
	isoURL := src.iso
	if isoURL == "" {
		isoURL, err = b.cfg.Publisher.PublishISO(ctx, t.Node.UUID, ISORamdisk{Kernel: src.kernel, Ramdisk: src.ramdisk, KernelParams: b.kernelParams(t.Node)})
		if err != nil {
			return fmt.Errorf("building the %s ISO: %w", mode, err)
		}
		defer func() {
			if err != nil {
				if werr := b.withdraw(ctx, t); werr != nil {
					b.d.cfg.Log.Error("withdrawing the ISO after a failed insert", "node", t.Node.UUID, "err", werr)
				}
			}
		}()
	}
	if err := b.d.insertMedia(ctx, t.Node, "cdrom", isoURL); err != nil {
		return err
	}
	if err := t.SetBootDevice(ctx, driver.BootDevice{Device: "cdrom"}); err != nil {
		return err
	}
	b.d.cfg.Log.Info("virtual media inserted, next boot from it", "node", t.Node.UUID, "mode", mode)
	return nil
}

// CleanUpRamdisk ejects the virtual CD and withdraws the ISO. The ISO is
// withdrawn even when the BMC cannot be reached.
func (b *VirtualMediaBoot) CleanUpRamdisk(ctx context.Context, t *driver.Task) error {
	return b.ejectAndWithdraw(ctx, t)
}

// PrepareInstance ejects the ramdisk's ISO and makes the node boot its disk.
func (b *VirtualMediaBoot) PrepareInstance(ctx context.Context, t *driver.Task) error {
	if err := b.ejectAndWithdraw(ctx, t); err != nil {
		return err
	}
	return t.SetBootDevice(ctx, driver.BootDevice{Device: "disk", Persistent: true})
}

// CleanUpInstance ejects the virtual CD and withdraws any ISO.
func (b *VirtualMediaBoot) CleanUpInstance(ctx context.Context, t *driver.Task) error {
	return b.ejectAndWithdraw(ctx, t)
}

func (b *VirtualMediaBoot) ejectAndWithdraw(ctx context.Context, t *driver.Task) error {
	eerr := b.d.ejectMedia(ctx, t.Node, "cdrom")
	if eerr != nil {
		eerr = fmt.Errorf("ejecting the virtual media of node %s: %w", t.Node.UUID, eerr)
	}
	return errors.Join(eerr, b.withdraw(ctx, t))
}

func (b *VirtualMediaBoot) withdraw(ctx context.Context, t *driver.Task) error {
	if b.cfg.Publisher == nil {
		return nil
	}
	if err := b.cfg.Publisher.Withdraw(ctx, t.Node.UUID); err != nil {
		return fmt.Errorf("withdrawing the ISO: %w", err)
	}
	return nil
}

var _ driver.RamdiskBooter = (*VirtualMediaBoot)(nil)

// ValidateRamdiskBoot checks, in the order of Ironic's redfish boot
// validation, the BMC settings, what a ramdisk deploy boots
// (driver.InstanceBootOf), the agent's ramdisk when cleaning needs it,
// then that the BMC can have it: an http(s) boot_iso the BMC inserts as
// it is, or a kernel and ramdisk Anvil builds an ISO of (which needs its
// boot endpoint).
func (b *VirtualMediaBoot) ValidateRamdiskBoot(n *model.Node) error {
	if _, err := parseInfo(n); err != nil {
		return err
	}
	ib, err := driver.InstanceBootOf(n)
	if err != nil {
		return err
	}
	if driver.NeedsAgentRamdisk(n) {
		if err := b.validate(n, driver.RamdiskDeploy); err != nil {
			return err
		}
	}
	if ib.ISO != "" {
		u, err := url.Parse(ib.ISO)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("Invalid boot_iso %q of node %s: the BMC needs an http(s) URL", ib.ISO, n.UUID)
		}
		return nil
	}
	if b.cfg.Publisher == nil {
		return ErrBootNotConfigured
	}
	if lc, ok := b.cfg.Publisher.(loaderChecker); ok {
		return lc.CheckISOLoaders()
	}
	return nil
}

// PrepareRamdiskBoot inserts the instance's ISO (boot_iso as it is, or one
// built of its kernel and ramdisk with ramdisk_kernel_arguments) into the
// node's virtual CD and sets the CD as the persistent boot device, so the
// instance runs from it on every boot (Ironic's ramdisk deploy).
func (b *VirtualMediaBoot) PrepareRamdiskBoot(ctx context.Context, t *driver.Task) (err error) {
	if err := b.ValidateRamdiskBoot(t.Node); err != nil {
		return err
	}
	ib, _ := driver.InstanceBootOf(t.Node)
	isoURL := ib.ISO
	if isoURL == "" {
		isoURL, err = b.cfg.Publisher.PublishISO(ctx, t.Node.UUID, ISORamdisk{Kernel: ib.Kernel, Ramdisk: ib.Ramdisk, KernelParams: ib.KernelParams})
		if err != nil {
			return fmt.Errorf("building the instance's ISO: %w", err)
		}
		defer func() {
			if err != nil {
				if werr := b.withdraw(ctx, t); werr != nil {
					b.d.cfg.Log.Error("withdrawing the ISO after a failed insert", "node", t.Node.UUID, "err", werr)
				}
			}
		}()
	}
	if err := b.d.insertMedia(ctx, t.Node, "cdrom", isoURL); err != nil {
		return err
	}
	if err := t.SetBootDevice(ctx, driver.BootDevice{Device: "cdrom", Persistent: true}); err != nil {
		return err
	}
	b.d.cfg.Log.Info("instance ISO inserted, the node boots it from now on", "node", t.Node.UUID)
	return nil
}
