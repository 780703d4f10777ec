package api

import (
	"net/url"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Versions of the vmedia API (Ironic's MINOR_89_ATTACH_DETACH_VMEDIA and
// MINOR_93_GET_VMEDIA); below them the resource does not exist (404).
const (
	minorAttachVmedia = 89
	minorGetVmedia    = 93
)

// vmediaDevices are Ironic's boot_devices.VMEDIA_DEVICES, in its order.
var vmediaDevices = []string{"disk", "cdrom", "floppy"}

// vmediaSchemes are Ironic's image_publisher.VMEDIA_SUPPORTED_URL_SCHEMES.
var vmediaSchemes = []string{"http", "https", "nfs", "cifs", "smb"}

// vmediaProp is a property of the attach body and its enum (nil: any string).
type vmediaProp struct {
	prop nodeProp
	enum []string
}

// vmediaProps is VMEDIA_ATTACH_VALIDATOR's properties, in its order.
var vmediaProps = []vmediaProp{
	{nodeProp{name: "device_type", types: []string{"string"}}, vmediaDevices},
	{nodeProp{name: "image_url", types: []string{"string"}}, nil},
	{nodeProp{name: "image_download_source", types: []string{"string"}}, []string{"http", "local", "swift"}},
}

func (hs managementAPI) vmediaRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.getVmedia, nodeRule("baremetal:node:vmedia:get")},
		"POST":   {hs.attachVmedia, nodeRule("baremetal:node:vmedia:attach")},
		"DELETE": {hs.detachVmedia, nodeRule("baremetal:node:vmedia:detach")}}, "/v1/nodes/{ident}/vmedia")
	s.handle(endpoint{"DELETE": {hs.detachVmedia, nodeRule("baremetal:node:vmedia:detach")}}, "/v1/nodes/{ident}/vmedia/{device}")
}

// GET /v1/nodes/{ident}/vmedia (1.93): the node's virtual media devices,
// a JSON list of {"media_types", "inserted", "image"}.
func (hs managementAPI) getVmedia(rc *call) error {
	s := hs.s
	if rc.minor < minorGetVmedia {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	devs, err := s.cfg.Management.GetVirtualMedia(rc.ctx, ident)
	if err != nil {
		return err
	}
	w := &jw{}
	w.open('[')
	for _, d := range devs {
		w.obj()
		w.key("media_types")
		w.strings(d.MediaTypes)
		w.key("inserted")
		w.boolean(d.Inserted)
		w.key("image")
		w.str(d.Image)
		w.endObj()
	}
	w.endArr()
	return rc.json(200, w)
}

// POST /v1/nodes/{ident}/vmedia (1.89): attach an image; 204 at once, a
// failure shows in the node's last_error.
func (hs managementAPI) attachVmedia(rc *call) error {
	s := hs.s
	if rc.minor < minorAttachVmedia {
		return errNotFound()
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	req, err := parseVmediaAttach(body)
	if err != nil {
		return err
	}
	if err := rc.refuseLocalFiles("vmedia", map[string]any{"image_url": req.ImageURL}); err != nil {
		return err
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Management.AttachVirtualMedia(rc.ctx, ident, req); err != nil {
		return err
	}
	return rc.noContent()
}

// parseVmediaAttach validates the body as Ironic's VMEDIA_ATTACH_VALIDATOR
// (the first error jsonschema's best match reports) and the URL's scheme.
func parseVmediaAttach(body any) (conductor.VirtualMediaAttach, error) {
	const what = "vmedia"
	doc, ok := body.(map[string]any)
	if !ok {
		return conductor.VirtualMediaAttach{}, schemaError(what, "%s is not of type 'object'", maskedRepr(body))
	}
	for _, r := range []string{"device_type", "image_url"} {
		if _, ok := doc[r]; !ok {
			return conductor.VirtualMediaAttach{}, schemaError(what, "'%s' is a required property", r)
		}
	}
	var extra []string
	for k := range doc {
		if !slices.ContainsFunc(vmediaProps, func(p vmediaProp) bool { return p.prop.name == k }) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return conductor.VirtualMediaAttach{}, additionalProps(what, extra)
	}
	for _, p := range vmediaProps {
		v, ok := doc[p.prop.name]
		if !ok {
			continue
		}
		if err := checkProp(what, p.prop, v); err != nil {
			return conductor.VirtualMediaAttach{}, err
		}
		if p.enum != nil && !slices.Contains(p.enum, v.(string)) {
			return conductor.VirtualMediaAttach{}, schemaError(what, "%s is not one of %s", maskedRepr(v), pyrepr.Strings(p.enum))
		}
	}
	req := conductor.VirtualMediaAttach{DeviceType: doc["device_type"].(string), ImageURL: doc["image_url"].(string), DownloadSource: "local"}
	if src, ok := doc["image_download_source"].(string); ok {
		req.DownloadSource = src
	}
	if scheme := urlScheme(req.ImageURL); !slices.Contains(vmediaSchemes, scheme) {
		return conductor.VirtualMediaAttach{}, invalid("Unsupported or missing URL scheme: %s", scheme)
	}
	return req, nil
}

// urlScheme is the scheme as Python's urlparse finds it (lower case, "" when none).
func urlScheme(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		scheme, _, found := strings.Cut(s, ":")
		if !found {
			return ""
		}
		return strings.ToLower(scheme)
	}
	return strings.ToLower(u.Scheme)
}

// DELETE /v1/nodes/{ident}/vmedia[/{device}] (1.89): detach the devices of
// ?device_types= (comma-separated, repeatable) or of the path; none: all.
func (hs managementAPI) detachVmedia(rc *call) error {
	s := hs.s
	if rc.minor < minorAttachVmedia {
		return errNotFound()
	}
	if err := rc.checkQuery("device_types"); err != nil {
		return err
	}
	var types []string
	raw := rc.query["device_types"]
	if d := rc.r.PathValue("device"); d != "" {
		raw = append([]string{d}, raw...)
	}
	if raw != nil {
		types = []string{}
		for _, v := range raw {
			for _, item := range strings.Split(v, ",") {
				item = strings.ToLower(strings.TrimSpace(item))
				if item != "" && !slices.Contains(types, item) {
					types = append(types, item)
				}
			}
		}
	}
	var bad []string
	for _, t := range types {
		if !slices.Contains(vmediaDevices, t) {
			bad = append(bad, t)
		}
	}
	if bad != nil {
		return invalid("Invalid device type(s) %s (valid are %s)", strings.Join(bad, ", "), strings.Join(vmediaDevices, ", "))
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Management.DetachVirtualMedia(rc.ctx, ident, "", types); err != nil {
		return err
	}
	return rc.noContent()
}
