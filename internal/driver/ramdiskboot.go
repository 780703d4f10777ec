package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// RamdiskBooter is an optional Boot capability, Ironic's "ramdisk_boot":
// booting the instance's own kernel and ramdisk (instance_info kernel and
// ramdisk) or ISO (instance_info boot_iso) and leaving it running, which
// the "ramdisk" deploy interface needs. Boot interfaces without it cannot
// serve that deploy interface (Ironic's fake boot has none either).
//
// A boot interface with it validates a node whose deploy interface is
// DeployRamdisk with ValidateRamdiskBoot (its Validate answers that), as
// Ironic's boot interfaces validate by the node's boot option.
type RamdiskBooter interface {
	// ValidateRamdiskBoot checks, without touching hardware and in the
	// order of Ironic's boot interface, that the node can boot what
	// InstanceBootOf reads through this interface, and the agent's
	// ramdisk when NeedsAgentRamdisk says cleaning needs it.
	ValidateRamdiskBoot(n *model.Node) error
	// PrepareRamdiskBoot publishes the instance's kernel and ramdisk or
	// ISO and makes every later boot of the node start it (persistent
	// boot device); the caller powers the node on.
	PrepareRamdiskBoot(ctx context.Context, t *Task) error
}

// InstanceBoot is what a ramdisk deploy boots: an ISO, or a kernel and a
// ramdisk with the kernel command line of instance_info
// ramdisk_kernel_arguments (Ironic's name).
type InstanceBoot struct {
	ISO             string
	Kernel, Ramdisk string
	KernelParams    string
}

// InstanceBootOf reads a ramdisk deploy's instance_info as Ironic's
// get_image_instance_info does for the "ramdisk" boot option, with its
// messages: boot_iso, or kernel and ramdisk; image_source is refused beside
// boot_iso.
func InstanceBootOf(n *model.Node) (InstanceBoot, error) {
	str := func(k string) string { s, _ := n.InstanceInfo[k].(string); return strings.TrimSpace(s) }
	b := InstanceBoot{ISO: str("boot_iso"), KernelParams: str("ramdisk_kernel_arguments")}
	if b.ISO != "" {
		if str("image_source") != "" {
			return InstanceBoot{}, errors.New(ErrConflictingImage + ".")
		}
		return b, nil
	}
	b.Kernel, b.Ramdisk = str("kernel"), str("ramdisk")
	var missing []string
	if b.Kernel == "" {
		missing = append(missing, "kernel")
	}
	if b.Ramdisk == "" {
		missing = append(missing, "ramdisk")
	}
	if missing != nil {
		return InstanceBoot{}, fmt.Errorf("Cannot validate image information for node %s because one or more parameters are missing "+
			"from its instance_info and insufficient information is present to boot from a remote volume. Missing are: %s",
			n.UUID, pyrepr.Strings(missing))
	}
	return b, nil
}

// DeployRamdisk is the name of the "ramdisk" deploy interface.
const DeployRamdisk = "ramdisk"

// IsRamdiskDeploy reports whether the node deploys with the "ramdisk"
// deploy interface (Ironic's boot option "ramdisk").
func IsRamdiskDeploy(n *model.Node) bool { return n.Interfaces.Get("deploy") == DeployRamdisk }

// NeedsAgentRamdisk is Ironic's needs_agent_ramdisk for deploys: every
// deploy interface but ramdisk boots the agent; a ramdisk deploy needs it
// only for cleaning, unless the node's automated_clean is off (unset
// counts as on, Anvil's default).
func NeedsAgentRamdisk(n *model.Node) bool {
	return !IsRamdiskDeploy(n) || n.AutomatedClean == nil || *n.AutomatedClean
}

// ErrConflictingImage is pxe_base's refusal of image_source beside
// boot_iso (deploy_utils' has a full stop, InstanceBootOf's).
const ErrConflictingImage = "An 'image_source' and 'boot_iso' parameter may not be specified at the same time"

// ErrNoRamdiskBoot is Ironic's refusal of a ramdisk deploy on a boot
// interface without the ramdisk_boot capability.
const ErrNoRamdiskBoot = "Invalid configuration: The boot interface must have the `ramdisk_boot` capability. You are using an incompatible boot interface."
