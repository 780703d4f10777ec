package api

import (
	"errors"
	"math"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// connectorProps is Ironic's CONNECTOR_SCHEMA, in its property order. The
// type is any string: Ironic documents iqn, ip, mac, wwnn, wwpn, port and
// portgroup but checks none of them (the storage interface reads the ones
// it knows).
var connectorProps = []nodeProp{
	{name: "connector_id", types: []string{"string"}},
	{name: "extra", types: tObj},
	{name: "node_uuid", types: []string{"string"}},
	{name: "type", types: []string{"string"}},
	{name: "uuid", types: tStr},
}

// targetProps is Ironic's TARGET_SCHEMA, in its property order.
var targetProps = []nodeProp{
	{name: "boot_index", types: []string{"integer"}},
	{name: "extra", types: tObj},
	{name: "node_uuid", types: []string{"string"}},
	{name: "properties", types: tObj},
	{name: "volume_id", types: []string{"string"}},
	{name: "volume_type", types: []string{"string"}},
	{name: "uuid", types: tStr},
}

// The PATCH_ALLOWED_FIELDS of connectors and targets.
var (
	connectorPatchAllowed = []string{"connector_id", "extra", "node_uuid", "type"}
	targetPatchAllowed    = []string{"boot_index", "extra", "node_uuid", "properties", "volume_id", "volume_type"}
)

// validateVolume checks a connector or target body (create, or patched)
// against its schema and the validator that follows it (node_uuid and
// uuid are UUIDs, put in canonical form).
func validateVolume(what string, v any, props []nodeProp, required ...string) (map[string]any, error) {
	doc, err := validateObject(what, v, props, required...)
	if err != nil {
		return nil, err
	}
	if err := docUUIDs(doc, "node_uuid", "uuid"); err != nil {
		return nil, err
	}
	if f, ok := doc["boot_index"].(float64); ok && math.Abs(f) > math.MaxInt32 {
		// Ironic's column is an SQL integer; a larger index fails there.
		return nil, invalid("Invalid boot_index %s: out of range", maskedRepr(f))
	}
	return doc, nil
}

func validateConnector(what string, v any) (map[string]any, error) {
	return validateVolume(what, v, connectorProps, "connector_id", "node_uuid", "type")
}

func validateTarget(what string, v any) (map[string]any, error) {
	return validateVolume(what, v, targetProps, "boot_index", "node_uuid", "volume_id", "volume_type")
}

func applyConnectorDoc(c *model.VolumeConnector, doc map[string]any) {
	c.NodeUUID, c.Type, c.ConnectorID = docString(doc["node_uuid"]), docString(doc["type"]), docString(doc["connector_id"])
	c.Extra = docMap(doc["extra"])
}

func applyTargetDoc(t *model.VolumeTarget, doc map[string]any) {
	t.NodeUUID, t.VolumeType, t.VolumeID = docString(doc["node_uuid"]), docString(doc["volume_type"]), docString(doc["volume_id"])
	f, _ := doc["boot_index"].(float64)
	t.BootIndex = int64(f)
	t.Extra, t.Properties = docMap(doc["extra"]), docMap(doc["properties"])
}

// volumeCreateNode finds the node a new connector or target names. An
// unknown one is Ironic's InvalidInput (400), as its API turns the
// NodeNotFound of replace_node_uuid_with_id into one.
func (hs volumeAPI) volumeCreateNode(rc *call, doc map[string]any) error {
	node := docString(doc["node_uuid"])
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, node)
	if errors.Is(err, store.ErrNotFound) {
		return invalid("Invalid input for field/attribute node_uuid. Value: '%s'. ", node)
	} else if err != nil {
		return err
	}
	if err := rc.authorize(n, "baremetal:volume:create"); fault.KindOf(err) == fault.NotFound {
		return invalid("Invalid input for field/attribute node_uuid. Value: '%s'. ", node) // as if absent
	} else if err != nil {
		return err
	}
	return nil
}

// POST /v1/volume/connectors
func (hs volumeAPI) createConnector(rc *call) error {
	s := hs.s
	doc, err := hs.volumeCreateBody(rc, "connector", validateConnector)
	if err != nil {
		return err
	}
	c := &model.VolumeConnector{UUID: docString(doc["uuid"])}
	applyConnectorDoc(c, doc)
	if c.UUID == "" {
		c.UUID = uuid.NewString()
	}
	if err := s.cfg.NodeRecords.CreateVolumeConnector(rc.ctx, c); err != nil {
		return err
	}
	return created(rc, c, hs.writeConnector, "volume", "connectors", c.UUID)
}

// POST /v1/volume/targets
func (hs volumeAPI) createTarget(rc *call) error {
	s := hs.s
	doc, err := hs.volumeCreateBody(rc, "target", validateTarget)
	if err != nil {
		return err
	}
	t := &model.VolumeTarget{UUID: docString(doc["uuid"])}
	applyTargetDoc(t, doc)
	if t.UUID == "" {
		t.UUID = uuid.NewString()
	}
	if err := s.cfg.NodeRecords.CreateVolumeTarget(rc.ctx, t); err != nil {
		return err
	}
	return created(rc, t, hs.writeTarget, "volume", "targets", t.UUID)
}

// volumeCreateBody reads and checks a create body (what is its name in
// Ironic's schema errors), and its node.
func (hs volumeAPI) volumeCreateBody(rc *call, what string, validate func(string, any) (map[string]any, error)) (map[string]any, error) {
	if rc.minor < minorVolume {
		return nil, errNotFound()
	}
	v, err := rc.readCreate(false)
	if err != nil {
		return nil, err
	}
	doc, err := validate(what, v)
	if err != nil {
		return nil, err
	}
	return doc, hs.volumeCreateNode(rc, doc)
}

// volumePatch reads a connector or target PATCH: the id of the path and
// the operations.
func (hs volumeAPI) volumePatch(rc *call, k *volumeKind) (string, []patchOp, error) {
	if rc.minor < minorVolume {
		return "", nil, errNotFound()
	}
	return rc.readPatch(false, func() (string, error) { return k.id(rc) })
}

// patchVolumeDoc applies ops to doc as Ironic's volume controllers do:
// allowed fields, a UUID for node_uuid, a node that exists (the node_uuid
// of the document is null while the patch applies, then the new node's or
// the old one's), then the schema.
func (hs volumeAPI) patchVolumeDoc(rc *call, doc map[string]any, ops []patchOp, allowed []string,
	validate func(string, any) (map[string]any, error)) (map[string]any, error) {
	if err := checkAllowedFields(ops, allowed); err != nil {
		return nil, err
	}
	node := doc["node_uuid"]
	for _, v := range patchValues(ops, "/node_uuid") {
		if s, ok := v.(string); !ok || !isUUIDLike(s) {
			return nil, invalid("Expected a UUID for node_uuid, but received %s.", pyrepr.Str(v))
		}
	}
	if vals := patchValues(ops, "/node_uuid"); len(vals) > 0 {
		if err := (portAPI{rc.s}).checkPortNodeLink(rc, vals[0], docString(node)); err != nil {
			return nil, err
		}
		node = canonicalUUID(vals[0].(string))
	}
	doc["node_uuid"] = nil
	patched, err := applyPatch(rc.ctx, doc, ops)
	if err != nil {
		return nil, err
	}
	patched["node_uuid"] = node
	return validate("patch", patched)
}

// PATCH /v1/volume/connectors/{id}
func (hs volumeAPI) patchConnector(rc *call) error {
	s := hs.s
	id, ops, err := hs.volumePatch(rc, connectorKind)
	if err != nil {
		return err
	}
	return updated(rc, id, s.cfg.NodeRecords.UpdateVolumeConnector, func(c *model.VolumeConnector) error {
		doc := map[string]any{"uuid": c.UUID, "node_uuid": c.NodeUUID, "type": c.Type,
			"connector_id": c.ConnectorID, "extra": orEmpty(c.Extra)}
		patched, err := hs.patchVolumeDoc(rc, doc, ops, connectorPatchAllowed, validateConnector)
		if err != nil {
			return err
		}
		applyConnectorDoc(c, patched)
		return nil
	}, hs.writeConnector)
}

// PATCH /v1/volume/targets/{id}
func (hs volumeAPI) patchTarget(rc *call) error {
	s := hs.s
	id, ops, err := hs.volumePatch(rc, targetKind)
	if err != nil {
		return err
	}
	return updated(rc, id, s.cfg.NodeRecords.UpdateVolumeTarget, func(t *model.VolumeTarget) error {
		doc := map[string]any{"uuid": t.UUID, "node_uuid": t.NodeUUID, "volume_type": t.VolumeType,
			"volume_id": t.VolumeID, "boot_index": float64(t.BootIndex), "extra": orEmpty(t.Extra),
			"properties": orEmpty(t.Properties)}
		patched, err := hs.patchVolumeDoc(rc, doc, ops, targetPatchAllowed, validateTarget)
		if err != nil {
			return err
		}
		applyTargetDoc(t, patched)
		return nil
	}, hs.writeTarget)
}

// connectorFields are a connector's keys in Ironic's order
// (object_to_dict, links, then node_uuid).
var connectorFields = []docField[model.VolumeConnector]{
	{"uuid", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.str(c.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.timestamp(c.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.timestamp(c.UpdatedAt) }},
	{"connector_id", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.str(c.ConnectorID) }},
	{"extra", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.object(c.Extra) }},
	{"type", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.str(c.Type) }},
	{"links", 1, func(w *jw, rc *call, c *model.VolumeConnector) { rc.links(w, "volume", "connectors", c.UUID) }},
	{"node_uuid", 1, func(w *jw, _ *call, c *model.VolumeConnector) { w.strOrNull(c.NodeUUID) }},
}

// writeConnector renders a connector as Ironic's convert_with_links.
func (hs volumeAPI) writeConnector(rc *call, w *jw, c *model.VolumeConnector, fields []string) {
	writeDoc(w, rc, c, connectorFields, fields)
}

// targetFields are a target's keys in Ironic's order (object_to_dict,
// links, then node_uuid); its properties are masked as target_sanitize
// does (mask_dict_password), or redacted for a principal that may not
// see them.
var targetFields = []docField[model.VolumeTarget]{
	{"uuid", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.str(t.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.timestamp(t.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.timestamp(t.UpdatedAt) }},
	{"boot_index", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.integer(t.BootIndex) }},
	{"extra", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.object(t.Extra) }},
	{"properties", 1, func(w *jw, rc *call, t *model.VolumeTarget) {
		if shown, hidden := (volumeAPI{rc.s}).redactTargetProperties(rc, t); hidden {
			w.any(shown)
		} else {
			w.masked(t.Properties)
		}
	}},
	{"volume_id", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.str(t.VolumeID) }},
	{"volume_type", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.str(t.VolumeType) }},
	{"links", 1, func(w *jw, rc *call, t *model.VolumeTarget) { rc.links(w, "volume", "targets", t.UUID) }},
	{"node_uuid", 1, func(w *jw, _ *call, t *model.VolumeTarget) { w.strOrNull(t.NodeUUID) }},
}

// writeTarget renders a target as Ironic's convert_with_links.
func (hs volumeAPI) writeTarget(rc *call, w *jw, t *model.VolumeTarget, fields []string) {
	writeDoc(w, rc, t, targetFields, fields)
}

// redactTargetProperties is what the request's principal is shown instead
// of a target's properties, if it may not see them.
func (hs volumeAPI) redactTargetProperties(rc *call, t *model.VolumeTarget) (any, bool) {
	if rc.redact == nil {
		return nil, false
	}
	return rc.redact(&model.Node{UUID: t.NodeUUID}, TargetPropertiesField)
}
