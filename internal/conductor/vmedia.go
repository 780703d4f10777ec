package conductor

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// VirtualMediaAttach is a request to attach an image (POST /v1/nodes/{node}/vmedia).
type VirtualMediaAttach struct {
	DeviceType string // cdrom, floppy or disk
	ImageURL   string
	// DownloadSource is Ironic's image_download_source (http, local or
	// swift); Anvil hands the BMC ImageURL itself whatever it says.
	DownloadSource string
	User           string
}

// unsupported is Ironic's UnsupportedDriverExtension.
func unsupported(n *model.Node, extension string) error {
	return fault.New(fault.Invalid, "Driver %s does not support %s (disabled or not implemented).", n.Driver, extension)
}

// vmediaManager is the node's management interface, validated, as a
// virtual media manager; ok is false when the interface has no virtual media.
func (svc *Management) vmediaManager(n *model.Node) (vm driver.VirtualMediaManager, ok bool, err error) {
	m, err := svc.management(n)
	if err != nil {
		return nil, false, err
	}
	vm, ok = m.(driver.VirtualMediaManager)
	return vm, ok, nil
}

// GetVirtualMedia lists the node's virtual media devices (GET
// /v1/nodes/{node}/vmedia), synchronously, as Ironic.
func (svc *Management) GetVirtualMedia(ctx context.Context, ident string) ([]driver.VirtualMedia, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	vm, ok, err := svc.vmediaManager(n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, unsupported(n, "get_virtual_media")
	}
	devs, err := vm.GetVirtualMedia(ctx, &driver.Task{Node: n})
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	return devs, nil
}

// AttachVirtualMedia starts attaching an image: the request is checked
// and the node locked before it returns; a worker inserts the image and
// records a failure in last_error (as Ironic, where a driver without
// virtual media fails there too).
func (svc *Management) AttachVirtualMedia(ctx context.Context, ident string, req VirtualMediaAttach) error {
	return svc.vmediaAction(ctx, ident, req.User, "attaching virtual media", func(ctx context.Context, t *task, vm driver.VirtualMediaManager) error {
		if vm == nil {
			return unsupported(t.node, "attach_virtual_media")
		}
		return vm.AttachVirtualMedia(ctx, t.driverTask(ctx), req.DeviceType, req.ImageURL)
	}, func(node string, err error) string {
		return fmt.Sprintf("Could not attach device %s to node %s: %v", req.DeviceType, node, err)
	})
}

// DetachVirtualMedia starts detaching the devices of deviceTypes (none:
// all), as AttachVirtualMedia.
func (svc *Management) DetachVirtualMedia(ctx context.Context, ident, user string, deviceTypes []string) error {
	return svc.vmediaAction(ctx, ident, user, "detaching virtual media", func(ctx context.Context, t *task, vm driver.VirtualMediaManager) error {
		if vm == nil {
			return unsupported(t.node, "detach_virtual_media")
		}
		return vm.DetachVirtualMedia(ctx, t.driverTask(ctx), deviceTypes)
	}, func(node string, err error) string {
		return fmt.Sprintf("Could not detach device(s) %s from node %s: %v", pyTypes(deviceTypes), node, err)
	})
}

// pyTypes shows device types as Ironic's message does (a Python list, or None).
func pyTypes(types []string) string {
	if types == nil {
		return "None"
	}
	return pyrepr.Strings(types)
}

// vmediaAction locks the node, validates its management interface, clears
// last_error and runs act in a worker; a failure becomes last_error (made
// by msg) and an error history event.
func (svc *Management) vmediaAction(ctx context.Context, ident, user, purpose string,
	act func(ctx context.Context, t *task, vm driver.VirtualMediaManager) error, msg func(node string, err error) string) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, user)
	if err != nil {
		return err
	}
	vm, _, err := svc.vmediaManager(t.node)
	if err != nil {
		t.release()
		return err
	}
	return svc.runRecorded(ctx, t, "vmedia", purpose, func(ctx context.Context) error { return act(ctx, t, vm) },
		func(err error) string { return msg(t.node.UUID, err) })
}
