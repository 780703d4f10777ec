package direct

import (
	"context"
	"errors"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/oci"
)

// AutodetectName is Ironic master's "autodetect" deploy interface.
const AutodetectName = "autodetect"

// AutodetectOrder is Anvil's [DEFAULT]autodetect_deploy_interfaces:
// Ironic master's ramdisk, bootc, direct without bootc, which Anvil does
// not have (docs/oci.md); the last is the fallback.
var AutodetectOrder = []string{RamdiskName, Name}

// Autodetect is the "autodetect" deploy interface: when a deploy starts
// the node switches to the first interface of AutodetectOrder that
// supports its image (Ironic's supports_deploy), for that deploy; until
// then, and for cleaning, inspection's agent and rescue, it acts as the
// direct interface (Ironic's AutodetectDeploy keeps the agent's
// heartbeats). An oci:// image that is a bootc container is refused with
// what to do.
type Autodetect struct{ *Direct }

// Autodetect returns the "autodetect" deploy interface sharing d.
func (d *Direct) Autodetect() *Autodetect { return &Autodetect{d} }

// Validate validates as the interface the node would switch to; an
// oci:// image is resolved only when the deploy starts (SwitchDeploy).
func (a *Autodetect) Validate(t *driver.Task) error {
	switch chosen := a.detect(t.Node); chosen {
	case RamdiskName:
		return a.Ramdisk().Validate(t)
	default:
		return a.Direct.Validate(t)
	}
}

// detect is the first interface of AutodetectOrder whose detection
// accepts the node's instance_info, else the last.
func (a *Autodetect) detect(n *model.Node) string {
	for _, name := range AutodetectOrder {
		if name == RamdiskName && supportsRamdisk(n) {
			return name
		}
	}
	return AutodetectOrder[len(AutodetectOrder)-1]
}

// supportsRamdisk is Ironic's RamdiskDeploy.supports_deploy for images
// that are not Glance's: ironic_ramdisk_deploy set (Python truth) and a
// boot_iso, or a kernel and a ramdisk, in instance_info.
func supportsRamdisk(n *model.Node) bool {
	if !truthy(n.InstanceInfo["ironic_ramdisk_deploy"]) {
		return false
	}
	return truthy(n.InstanceInfo["boot_iso"]) || truthy(n.InstanceInfo["kernel"]) && truthy(n.InstanceInfo["ramdisk"])
}

// truthy is Python's bool() of a JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}

// SwitchDeploy names the interface the deploy uses (driver.DeploySwitcher).
// An oci:// image is looked at in its registry, as Ironic's bootc
// detection does, so a bootc container image fails here, before anything
// starts, rather than in the agent.
func (a *Autodetect) SwitchDeploy(ctx context.Context, n *model.Node) (string, error) {
	chosen := a.detect(n)
	if chosen == Name && isOCI(n) {
		ref, err := oci.ParseRef(infoString(n, "image_source"))
		if err != nil {
			return "", err
		}
		arch, _ := n.Properties["cpu_arch"].(string)
		im, err := a.oci().Resolve(ctx, ref, arch, pullSecret(n))
		if err != nil {
			return "", err
		}
		if im.DiskFormat == "bootc" {
			return "", fmt.Errorf("autodetect: the image %s is a bootc container image, which Ironic deploys with its bootc "+
				"deploy interface; Anvil has none (docs/oci.md): use a disk image artifact (disktype raw or qcow2)", ref)
		}
	}
	return chosen, nil
}

// Deploy is not reached: the conductor switches the node first (Ironic's
// error otherwise).
func (a *Autodetect) Deploy(context.Context, *driver.Task) (driver.Result, error) {
	return driver.Done, errors.New("Autodetect deploy interface did not switch to a concrete interface during switch_interface(). " +
		"This indicates a bug or misconfiguration.")
}

// NoopName is Ironic master's "noop" deploy interface (NoDeploy).
const NoopName = "noop"

// Noop is the "noop" deploy interface: it accepts any node, deploys
// nothing and succeeds at once, tears down nothing and has no clean
// steps (Ironic's NoDeploy, of its manual-management hardware type: the
// operator installs the machine by other means). No agent is involved.
type Noop struct{}

// Noop returns the "noop" deploy interface.
func (d *Direct) Noop() *Noop { return &Noop{} }

// Validate accepts any node.
func (*Noop) Validate(*driver.Task) error { return nil }

// Steps: the one deploy step, deploy; no clean or service steps.
func (*Noop) Steps(_ *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if kind == driver.DeploySteps && iface == "deploy" {
		return []driver.Step{{Interface: "deploy", Step: "deploy", Priority: 100}}
	}
	return nil
}

// ExecuteStep runs deploy: nothing, done.
func (*Noop) ExecuteStep(_ context.Context, _ *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind == driver.DeploySteps && s.Step == "deploy" {
		return driver.Done, nil
	}
	return driver.Done, fmt.Errorf("unknown step %s", s.Step)
}

// Deploy does nothing and succeeds.
func (*Noop) Deploy(context.Context, *driver.Task) (driver.Result, error) { return driver.Done, nil }

// TearDown does nothing: the node's power is left as it is.
func (*Noop) TearDown(context.Context, *driver.Task) error { return nil }
