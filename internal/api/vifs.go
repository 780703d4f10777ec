package api

import (
	"github.com/anvil-metal/anvil/internal/conductor"
)

// Minor versions of VIF behaviour.
const (
	minorVIFs          = 28 // /v1/nodes/{node}/vifs
	minorVIFAttachPort = 67 // port_uuid or portgroup_uuid in the attach body
)

func (hs managementAPI) vifRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listVIFs, nodeRule("baremetal:node:vif:list")},
		"POST": {hs.attachVIF, nodeRule("baremetal:node:vif:attach")}}, "/v1/nodes/{ident}/vifs")
	s.handle(endpoint{"DELETE": {hs.detachVIF, nodeRule("baremetal:node:vif:detach")}}, "/v1/nodes/{ident}/vifs/{vif}")
}

// GET /v1/nodes/{ident}/vifs
func (hs managementAPI) listVIFs(rc *call) error {
	s := hs.s
	n, _, err := rc.nodeSub(minorVIFs)
	if err != nil {
		return err
	}
	vifs, err := s.cfg.NodeRecords.ListVIFs(rc.ctx, n.UUID)
	if err != nil {
		return err
	}
	return writeList(rc, "vifs", vifs, 0, 64, func(w *jw, v string) {
		w.obj()
		w.key("id")
		w.str(v)
		w.endObj()
	}, nil)
}

// POST /v1/nodes/{ident}/vifs
func (hs managementAPI) attachVIF(rc *call) error {
	s := hs.s
	if rc.minor < minorVIFs {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	req, err := vifBody(body)
	if err != nil {
		return err
	}
	n, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	if rc.minor >= minorVIFAttachPort {
		if req.PortUUID != "" && req.PortgroupUUID != "" {
			return invalid("Cannot specify both port_uuid and portgroup_uuid")
		}
	}
	if err := s.cfg.NodeRecords.AttachVIF(rc.ctx, n.UUID, req); err != nil {
		return err
	}
	return rc.noContent()
}

// vifBody is Ironic's VIF_VALIDATOR: an object with a string "id" that is
// a UUID or a logical name; other keys are allowed (port_uuid and
// portgroup_uuid choose the target).
func vifBody(body any) (conductor.VIFRequest, error) {
	var req conductor.VIFRequest
	doc, ok := body.(map[string]any)
	if !ok {
		return req, schemaError("vif", "%s is not of type 'object'", maskedRepr(body))
	}
	id, ok := doc["id"]
	if !ok {
		return req, schemaError("vif", "'id' is a required property")
	}
	s, ok := id.(string)
	if !ok {
		return req, schemaError("vif", "%s is not of type 'string'", maskedRepr(id))
	}
	if !isUUIDLike(s) && !isValidLogicalName(s) {
		return req, invalid("Expected UUID or name for id: %s", s)
	}
	req.ID = s
	req.PortUUID, _ = doc["port_uuid"].(string)
	req.PortgroupUUID, _ = doc["portgroup_uuid"].(string)
	return req, nil
}

// DELETE /v1/nodes/{ident}/vifs/{vif}
func (hs managementAPI) detachVIF(rc *call) error {
	s := hs.s
	if rc.minor < minorVIFs {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	vif := rc.r.PathValue("vif")
	if !isUUIDLike(vif) && !isValidLogicalName(vif) {
		return invalid("Expected UUID or name for vif_id: %s", vif)
	}
	n, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	if err := s.cfg.NodeRecords.DetachVIF(rc.ctx, n.UUID, vif); err != nil {
		return err
	}
	return rc.noContent()
}
