package bmo_test

// Power and DataImage calls of ironicProvisioner (ironic.go): PowerOn,
// PowerOff, GetDataImageStatus, AttachDataImage, DetachDataImage, and the
// phase that drives them as the controller does for a provisioned host
// with a DataImage (handleDataImageActions runs while the host is off and
// should be on: GET vmedia, attach or detach, GET vmedia again, power on).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// changePower is ironic.go's changePower.
func (p *provisioner) changePower(ctx context.Context, n *nodes.Node, target nodes.TargetPowerState) (result, error) {
	if n.TargetProvisionState != "" {
		return operationContinuing(shortRetryDelay)
	}
	opts := nodes.PowerStateOpts{Target: target}
	if target == nodes.SoftPowerOff {
		opts.Timeout = 180
	}
	res := nodes.ChangePowerState(ctx, p.c, n.UUID, opts)
	switch {
	case res.Err == nil:
		p.cachedNode = nil
		return operationContinuing(0)
	case gophercloud.ResponseCodeIs(res.Err, http.StatusConflict):
		return retryAfterDelay(shortRetryDelay)
	}
	return transientError(fmt.Errorf("failed to %s node: %w", target, res.Err))
}

// PowerOn is ironic.go's PowerOn (force false).
func (p *provisioner) PowerOn(ctx context.Context) (result, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		return transientError(err)
	}
	if n.PowerState != string(nodes.PowerOn) {
		if n.TargetPowerState == string(nodes.PowerOn) {
			return operationContinuing(shortRetryDelay)
		}
		if n.LastError != "" {
			return operationFailed("PowerOn operation failed: " + n.LastError)
		}
		return p.changePower(ctx, n, nodes.PowerOn)
	}
	return result{}, nil
}

// PowerOff is ironic.go's PowerOff for the hard reboot mode (force false)
// of a node that is neither inspecting nor cleaning (where
// abortInspectionOrCleaning has nothing to do).
func (p *provisioner) PowerOff(ctx context.Context) (result, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		return transientError(err)
	}
	if n.PowerState != string(nodes.PowerOff) {
		if n.TargetPowerState == string(nodes.PowerOff) || n.TargetPowerState == string(nodes.SoftPowerOff) {
			return operationContinuing(shortRetryDelay)
		}
		if n.TargetPowerState == "" && n.LastError != "" && !strings.Contains(n.LastError, "aborted") {
			return operationFailed(n.LastError)
		}
		target := nodes.PowerOff
		if n.DisablePowerOff {
			target = nodes.Rebooting
		}
		return p.changePower(ctx, n, target)
	}
	return result{}, nil
}

// UpdateHardwareState is ironic.go's: whether the node is powered on.
func (p *provisioner) UpdateHardwareState(ctx context.Context) (bool, error) {
	n, err := p.getNode(ctx)
	if err != nil {
		return false, err
	}
	return n.PowerState == string(nodes.PowerOn), nil
}

// virtualMedia is ironic.go's VirtualMedia.
type virtualMedia struct {
	Image      string   `json:"image"`
	Inserted   bool     `json:"inserted"`
	MediaTypes []string `json:"media_types"`
}

var errNodeIsBusy = errors.New("node is busy")

// GetDataImageStatus is ironic.go's: GET /v1/nodes/{id}/vmedia (1.93).
func (p *provisioner) GetDataImageStatus(ctx context.Context) (bool, error) {
	if !p.features.HasVirtualMediaGetAPI() {
		return false, fmt.Errorf("ironic version=%d doesn't support Virtual Media Get API, needs version>=1.93", p.features.MaxVersion)
	}
	n, err := p.getNode(ctx)
	if err != nil {
		return true, err
	}
	if n.Reservation != "" {
		return false, errNodeIsBusy
	}
	res := nodes.GetVirtualMedia(ctx, p.c, p.nodeID)
	if res.Err != nil {
		return false, res.Err
	}
	var list []virtualMedia
	if err := res.ExtractInto(&list); err != nil {
		return false, err
	}
	for _, v := range list {
		if v.Inserted {
			return true, nil
		}
	}
	return false, nil
}

// AttachDataImage is ironic.go's: POST /v1/nodes/{id}/vmedia.
func (p *provisioner) AttachDataImage(ctx context.Context, url string) error {
	return nodes.AttachVirtualMedia(ctx, p.c, p.nodeID, nodes.AttachVirtualMediaOpts{
		DeviceType: nodes.VirtualMediaCD, ImageURL: url}).ExtractErr()
}

// DetachDataImage is ironic.go's: DELETE /v1/nodes/{id}/vmedia?device_types=cdrom.
func (p *provisioner) DetachDataImage(ctx context.Context) error {
	return nodes.DetachVirtualMedia(ctx, p.c, p.nodeID, nodes.DetachVirtualMediaOpts{
		DeviceTypes: []nodes.VirtualMediaDeviceType{nodes.VirtualMediaCD}}).ExtractErr()
}

// dataImage is the controller's power management of a provisioned host
// with a DataImage: power off (a reboot requested with the hard mode),
// then, while off and wanted on, handleDataImageActions until nothing is
// left to do, then power on. attach says whether the DataImage exists
// (attach it) or was deleted (detach it).
func (h *hostRun) dataImageCycle(t *testing.T, url string, attach bool) {
	t.Helper()
	if r := h.reconcile(t, "power off", 30*time.Second, h.registered(h.p.PowerOff)); r.ErrorMessage != "" {
		t.Fatalf("power off: %s", r.ErrorMessage)
	}
	attachedURL := ""
	if !attach {
		attachedURL = url
	}
	r := h.reconcile(t, "data image", 30*time.Second, h.registered(func(ctx context.Context) (result, error) {
		// UpdateHardwareState: once the node is on, the host is where it
		// should be and the DataImage is not looked at again
		if on, err := h.p.UpdateHardwareState(ctx); err != nil || on {
			return result{}, err
		}
		attached, err := h.p.GetDataImageStatus(ctx)
		if errors.Is(err, errNodeIsBusy) {
			return retryAfterDelay(10 * time.Second)
		}
		if err != nil {
			return result{}, fmt.Errorf("GetDataImageStatus: %w", err)
		}
		if !attached && attachedURL != "" {
			attachedURL = ""
			return operationContinuing(0)
		}
		switch {
		case !attach && attached:
			if err := h.p.DetachDataImage(ctx); err != nil {
				return result{}, fmt.Errorf("DetachDataImage: %w", err)
			}
			return operationContinuing(10 * time.Second)
		case attach && attachedURL != url:
			if err := h.p.AttachDataImage(ctx, url); err != nil {
				return result{}, fmt.Errorf("AttachDataImage: %w", err)
			}
			attachedURL = url
			return operationContinuing(10 * time.Second)
		}
		return h.p.PowerOn(ctx)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("data image: %s", r.ErrorMessage)
	}
}

func (h *hostRun) dataImage(t *testing.T) {
	url := h.env.files + "/dataimage/config.iso"
	h.dataImageCycle(t, url, true)
	n := h.node(t)
	if n.PowerState != string(nodes.PowerOn) || n.LastError != "" || n.ProvisionState != string(nodes.Active) {
		t.Errorf("after attaching the DataImage: %s", h.nodeState(t))
	}
	if md := h.m.Media(); !md.Inserted {
		t.Errorf("the BMC's virtual CD is empty after AttachDataImage: %+v", md)
	}
	if h.env.fetches("/dataimage/config.iso") == 0 {
		t.Errorf("the DataImage was never fetched")
	}
	h.dataImageCycle(t, url, false)
	if md := h.m.Media(); md.Inserted {
		t.Errorf("the BMC's virtual CD still holds %s after DetachDataImage", md.Image)
	}
	if st := h.m.Status(); st.Power != "On" || st.Running != bmcemu.RunningImage {
		t.Errorf("machine power %s, running %q after the DataImage cycles; want On, the image", st.Power, st.Running)
	}
}
