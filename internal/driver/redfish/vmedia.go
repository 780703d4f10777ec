package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// Virtual media device types in Ironic's words (boot_devices.VMEDIA_DEVICES)
// and the Redfish MediaTypes each accepts (a DVD drive takes a CD image, as
// Ironic allows for Cisco's DVD-only slots).
var vmediaTypes = map[string][]string{
	"cdrom":  {"CD", "DVD"},
	"floppy": {"Floppy"},
	"disk":   {"USBStick"},
}

// VMediaDevices are the device types AttachVirtualMedia accepts, sorted.
var VMediaDevices = []string{"cdrom", "disk", "floppy"}

// vmDevice is a VirtualMedia resource, as much of it as the driver reads.
type vmDevice struct {
	Path           string   `json:"@odata.id"`
	ID             string   `json:"Id"`
	Name           string   `json:"Name"`
	MediaTypes     []string `json:"MediaTypes"`
	Image          string   `json:"Image"`
	Inserted       bool     `json:"Inserted"`
	WriteProtected *bool    `json:"WriteProtected"`
	Actions        struct {
		Insert *struct {
			Target string `json:"target"`
		} `json:"#VirtualMedia.InsertMedia"`
		Eject *struct {
			Target string `json:"target"`
		} `json:"#VirtualMedia.EjectMedia"`
	} `json:"Actions"`
}

// accepts reports whether the device takes media of Ironic device type typ.
func (v vmDevice) accepts(typ string) bool {
	for _, mt := range v.MediaTypes {
		if slices.Contains(vmediaTypes[typ], mt) {
			return true
		}
	}
	return false
}

// getJSON reads a resource into v.
func (c *conn) getJSON(ref string, v any) error {
	resp, err := c.Get(ref)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is not a Redfish resource: %w", ref, err)
	}
	return nil
}

type link struct {
	ID string `json:"@odata.id"`
}

// target connects to the node's BMC and finds its system's path.
func (d *Driver) target(ctx context.Context, n *model.Node) (*conn, string, error) {
	in, err := parseInfo(n)
	if err != nil {
		return nil, "", err
	}
	c, err := d.conn(ctx, in)
	if err != nil {
		return nil, "", err
	}
	path := in.systemID
	if path == "" {
		if path, err = onlySystem(c); err != nil {
			return nil, "", err
		}
	}
	return c, path, nil
}

// vmDevices lists the virtual media of the system when it has any, else
// those of the managers that manage it (Ironic looks in the same order).
func vmDevices(c *conn, sysPath string) ([]vmDevice, error) {
	var sys struct {
		VirtualMedia *link
		Links        struct{ ManagedBy []link }
	}
	if err := c.getJSON(sysPath, &sys); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("Redfish system %s was not found on BMC %s: %w", sysPath, c.in.address, err)
		}
		return nil, err
	}
	var cols []string
	if sys.VirtualMedia != nil && sys.VirtualMedia.ID != "" {
		cols = append(cols, sys.VirtualMedia.ID)
	} else {
		for _, m := range sys.Links.ManagedBy {
			var mgr struct{ VirtualMedia *link }
			if err := c.getJSON(m.ID, &mgr); err != nil {
				return nil, err
			}
			if mgr.VirtualMedia != nil && mgr.VirtualMedia.ID != "" {
				cols = append(cols, mgr.VirtualMedia.ID)
			}
		}
	}
	var out []vmDevice
	for _, col := range cols {
		var members struct{ Members []link }
		if err := c.getJSON(col, &members); err != nil {
			return nil, err
		}
		for _, m := range members.Members {
			var v vmDevice
			if err := c.getJSON(m.ID, &v); err != nil {
				return nil, err
			}
			if v.Path == "" {
				v.Path = m.ID
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// ErrNoVirtualMedia: the BMC offers no virtual media device of the type asked for.
var ErrNoVirtualMedia = errors.New("no suitable virtual media device")

// insertMedia ejects whatever devices of typ hold, then inserts url into
// the first device of typ that takes it (InsertMedia, or a PATCH of Image
// on BMCs without the action) and waits (Config.MediaTimeout) for the BMC
// to report it inserted. A device that refuses (HTTP 400 or 405) is passed
// over for the next; an HTTP 500 has been retried (Config.Attempts) and ends
// the insert.
func (d *Driver) insertMedia(ctx context.Context, n *model.Node, typ, url string) error {
	c, sysPath, err := d.target(ctx, n)
	if err != nil {
		return err
	}
	devs, err := vmDevices(c, sysPath)
	if err != nil {
		return err
	}
	if err := ejectDevices(c, devs, typ); err != nil {
		return err
	}
	var refused []string
	for _, v := range devs {
		if !v.accepts(typ) {
			continue
		}
		err := insertInto(c, v, url)
		var re *Error
		if errors.As(err, &re) && (re.Status == http.StatusBadRequest || re.Status == http.StatusMethodNotAllowed) {
			refused = append(refused, err.Error())
			d.cfg.Log.Warn("virtual media device refused the image, trying the next", "node", n.UUID, "device", v.Path, "err", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("Virtual media mount failed for node %s with image %s. Error: %w", n.UUID, url, err)
		}
		return d.waitInserted(ctx, c, v.Path, url, n)
	}
	if refused != nil {
		return fmt.Errorf("Virtual media mount failed for node %s with image %s. Error: %s", n.UUID, url, strings.Join(refused, "; "))
	}
	return fmt.Errorf("No suitable virtual media device found for node %s to mount image %s: %w", n.UUID, url, ErrNoVirtualMedia)
}

// insertInto asks one device to insert url.
func insertInto(c *conn, v vmDevice, url string) error {
	var (
		resp *http.Response
		err  error
	)
	if v.Actions.Insert != nil && v.Actions.Insert.Target != "" {
		resp, err = c.Post(v.Actions.Insert.Target, map[string]any{"Image": url, "Inserted": true, "WriteProtected": true})
	} else {
		resp, err = c.Patch(v.Path, map[string]any{"Image": url, "Inserted": true})
	}
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// waitInserted polls the device until it reports url inserted. A BMC that
// could not fetch the image either refused the insert (an error above) or
// never shows it inserted; the error says which image and what the BMC
// reports.
func (d *Driver) waitInserted(ctx context.Context, c *conn, path, url string, n *model.Node) error {
	deadline := time.Now().Add(d.cfg.MediaTimeout)
	for {
		var v vmDevice
		err := c.getJSON(path, &v)
		if err == nil && v.Inserted && v.Image == url {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("Virtual media mount failed for node %s with image %s: reading %s: %w", n.UUID, url, path, err)
			}
			return fmt.Errorf("Virtual media mount failed for node %s: the BMC did not report image %s inserted within %s (device %s: Inserted=%t, Image=%q); can the BMC fetch that URL?",
				n.UUID, url, d.cfg.MediaTimeout, path, v.Inserted, v.Image)
		}
		if err := d.sleep(ctx, d.cfg.PollInterval); err != nil {
			return err
		}
	}
}

// ejectDevices ejects the inserted media of the devices of typ ("" = all).
func ejectDevices(c *conn, devs []vmDevice, typ string) error {
	for _, v := range devs {
		if (typ != "" && !v.accepts(typ)) || !v.Inserted {
			continue
		}
		var (
			resp *http.Response
			err  error
		)
		if v.Actions.Eject != nil && v.Actions.Eject.Target != "" {
			resp, err = c.Post(v.Actions.Eject.Target, map[string]any{})
		} else {
			resp, err = c.Patch(v.Path, map[string]any{"Image": nil, "Inserted": false})
		}
		if err != nil {
			return fmt.Errorf("ejecting virtual media from %s: %w", v.Path, err)
		}
		resp.Body.Close()
	}
	return nil
}

// ejectMedia ejects the devices of each of types (none = every device).
func (d *Driver) ejectMedia(ctx context.Context, n *model.Node, types ...string) error {
	c, sysPath, err := d.target(ctx, n)
	if err != nil {
		return err
	}
	devs, err := vmDevices(c, sysPath)
	if err != nil {
		return err
	}
	if len(types) == 0 {
		return ejectDevices(c, devs, "")
	}
	for _, typ := range types {
		if err := ejectDevices(c, devs, typ); err != nil {
			return err
		}
	}
	return nil
}

// GetVirtualMedia lists the node's virtual media devices (Ironic's
// redfish management get_virtual_media).
func (d *Driver) GetVirtualMedia(ctx context.Context, t *driver.Task) ([]driver.VirtualMedia, error) {
	c, sysPath, err := d.target(ctx, t.Node)
	if err != nil {
		return nil, err
	}
	devs, err := vmDevices(c, sysPath)
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("No suitable virtual media device found: %w", ErrNoVirtualMedia)
	}
	out := make([]driver.VirtualMedia, 0, len(devs))
	for _, v := range devs {
		types := v.MediaTypes
		if types == nil {
			types = []string{}
		}
		out = append(out, driver.VirtualMedia{MediaTypes: types, Inserted: v.Inserted, Image: v.Image})
	}
	return out, nil
}

// AttachVirtualMedia inserts url into a device of deviceType (cdrom,
// floppy or disk).
func (d *Driver) AttachVirtualMedia(ctx context.Context, t *driver.Task, deviceType, url string) error {
	if _, ok := vmediaTypes[deviceType]; !ok {
		return fmt.Errorf("Invalid device type %s (valid are %s)", deviceType, strings.Join(VMediaDevices, ", "))
	}
	return d.insertMedia(ctx, t.Node, deviceType, url)
}

// DetachVirtualMedia ejects the devices of deviceTypes (none: all).
func (d *Driver) DetachVirtualMedia(ctx context.Context, t *driver.Task, deviceTypes []string) error {
	return d.ejectMedia(ctx, t.Node, deviceTypes...)
}
