package api

import (
	"errors"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// Minor versions of node behaviour.
const (
	minorNodeName         = 5
	minorUnrestrictedName = 10
	minorEnrollState      = 11
	minorInspectWait      = 39
	minorResetInterfaces  = 45
	minorInstanceName     = 104
	maxDescriptionLength  = 4096
)

// nodePatchAllowed is Ironic's PATCH_ALLOWED_FIELDS for nodes, in its order
// (the order the error text lists them in).
var nodePatchAllowed = nodeFields.patchAllowed

// reservedNodeNames are the sub-resource names a node may not take.
var reservedNodeNames = []string{"maintenance", "management", "states", "vendor_passthru", "detail", "validate"}

func (hs nodeAPI) nodeRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listNodes, nodeList}, "POST": {hs.createNode, rule("baremetal:node:create")}}, "/v1/nodes")
	s.handle(endpoint{"GET": {hs.listNodesDetail, nodeList}}, "/v1/nodes/detail")
	s.handle(endpoint{"GET": {hs.getNode, nodeRule("baremetal:node:get")},
		"PATCH":  {hs.patchNode, nodeBody("baremetal:node:update")},
		"DELETE": {hs.deleteNode, nodeRule("baremetal:node:delete")}}, "/v1/nodes/{ident}")
}

// nodeIdent validates a node identifier from the URL: a UUID (returned in
// canonical form) or, from 1.5, a logical name. When a ".json" was stripped
// from the path right after it (before 1.91), the identifier with the
// suffix is used if the one without names no node (Ironic's
// get_rpc_node_with_suffix).
func (hs nodeAPI) nodeIdent(rc *call, raw string) (string, error) {
	if rc.auth.node != nil && raw == rc.r.PathValue("ident") {
		return rc.auth.nodeIdent, nil // the route's authorization resolved it
	}
	ident, err := hs.plainNodeIdent(rc, raw)
	if !rc.jsonSuffix || path.Base(rc.r.URL.Path) != raw {
		return ident, err
	}
	switch {
	case err == nil:
		_, gerr := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, ident)
		if !errors.Is(gerr, store.ErrNotFound) {
			return ident, gerr
		}
	case fault.KindOf(err) != fault.NotFound:
		return "", err
	}
	return hs.plainNodeIdent(rc, raw+".json")
}

// plainNodeIdent is nodeIdent without the ".json" fallback.
func (hs nodeAPI) plainNodeIdent(rc *call, raw string) (string, error) {
	if isUUIDLike(raw) {
		return canonicalUUID(raw), nil
	}
	if !isValidLogicalName(raw) {
		return "", fault.New(fault.Invalid, "Expected UUID or name for node: %s", raw).AsRouting()
	}
	if rc.minor < minorNodeName {
		return "", fault.NodeNotFound(raw)
	}
	if rc.minor < minorUnrestrictedName && !isHostnameSafe(raw) {
		return "", invalid("Expected a logical name or UUID but received %s.", raw)
	}
	return raw, nil
}

// loadNode resolves the {ident} of the path to a stored node, once: the
// route's authorization and its handler see the same node.
func (hs nodeAPI) loadNode(rc *call) (*model.Node, string, error) {
	raw := rc.r.PathValue("ident")
	if rc.auth.node != nil {
		return rc.auth.node, raw, nil
	}
	ident, err := hs.nodeIdent(rc, raw)
	if err != nil {
		return nil, raw, err
	}
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		if rc.jsonSuffix && ident == raw+".json" {
			return nil, raw, fault.NodeNotFound(ident)
		}
		return nil, raw, fault.NodeNotFound(raw)
	}
	if err == nil {
		rc.auth.node, rc.auth.nodeIdent = n, ident
	}
	return n, raw, err
}

// GET /v1/nodes/{ident}
func (hs nodeAPI) getNode(rc *call) error {
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	n, _, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if err := hs.checkNodeFields(rc, fields); err != nil {
		return err
	}
	w := &jw{}
	rc.writeNode(w, n, rc.nodePlan(fields))
	return rc.json(200, w)
}

// checkNodeFields gates ?fields= on the version and the field names.
func (hs nodeAPI) checkNodeFields(rc *call, fields []string) error {
	if fields == nil {
		return nil
	}
	if rc.minor < minorFields {
		return notAcceptable()
	}
	for _, f := range fields {
		if fieldMinor(f) > rc.minor {
			return notAcceptable()
		}
	}
	for _, f := range fields {
		fd := nodeFieldIndex[f]
		if fd == nil || fd.place == placeLinks || fd.place == placeSubLinks || f == "created_at" || f == "updated_at" {
			return invalid("Field %s is not a valid field.", f)
		}
	}
	return nil
}

// POST /v1/nodes
func (hs nodeAPI) createNode(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	v, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if v == nil {
		v = map[string]any{}
	}
	doc, err := validateObject("node", v, nodeFields.createProps, "driver")
	if err != nil {
		return err
	}
	if err := nodeFields.runExtraChecks(doc); err != nil {
		return err
	}
	if err := rejectNewerFields(doc, rc.minor); err != nil {
		return err
	}
	if name, ok := doc["name"]; ok && name != nil {
		if err := checkNodeName(name, rc.minor, "Cannot create node with invalid name '%s'"); err != nil {
			return err
		}
	}
	if err := hs.checkNodeLinks(rc, doc, nil); err != nil {
		return err
	}
	n := &model.Node{}
	nodeFields.apply(n, doc)
	if err := s.cfg.Lifecycle.CreateNode(rc.ctx, n, rc.minor < minorEnrollState); err != nil {
		return err
	}
	rc.w.Header().Set("Location", rc.link(false, "nodes", n.UUID))
	w := &jw{}
	rc.writeNode(w, n, rc.nodePlan(nil))
	return rc.json(201, w)
}

// checkNodeName applies Ironic's node name rules; format takes the name.
func checkNodeName(name any, minor int, format string) error {
	if minor < minorNodeName {
		return notAcceptable()
	}
	s, ok := name.(string)
	valid := ok && !isUUIDLike(s)
	if valid && minor < minorUnrestrictedName {
		valid = isHostnameSafe(s)
	} else if valid {
		valid = isValidLogicalName(s)
	}
	if !valid {
		return invalid(format, pyrepr.Str(name))
	}
	if slices.Contains(reservedNodeNames, s) {
		return invalid("The word \"%s\" is reserved and can not be used as a node name. Reserved words are: %s.",
			s, strings.Join(reservedNodeNames, ", "))
	}
	return nil
}

// checkNodeLinks checks the references a node body makes: the chassis and
// a parent node must exist (the parent is stored by UUID). An unknown
// chassis is Ironic's ChassisNotFound turned into a 400.
func (hs nodeAPI) checkNodeLinks(rc *call, doc map[string]any, old *model.Node) error {
	if c, _ := doc["chassis_uuid"].(string); c != "" && (old == nil || c != old.ChassisUUID) {
		if _, err := rc.s.cfg.Catalog.Chassis().GetChassis(rc.ctx, c); errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.Invalid, "%s", fault.MissingText("Chassis", c))
		} else if err != nil {
			return err
		}
	}
	p, _ := doc["parent_node"].(string)
	if p == "" || (old != nil && p == old.ParentNode) {
		return nil
	}
	parent, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return invalid("Unable to apply the requested parent_node '%s'. Requested value was invalid.", p)
	} else if err != nil {
		return err
	}
	doc["parent_node"] = parent.UUID
	return nil
}

// PATCH /v1/nodes/{ident}
func (hs nodeAPI) patchNode(rc *call) error {
	s := hs.s
	if err := rc.checkQuery("reset_interfaces"); err != nil {
		return err
	}
	raw := rc.r.PathValue("ident")
	ident, err := hs.nodeIdent(rc, raw)
	if err != nil {
		return err
	}
	ops, reset, err := hs.nodePatchRequest(rc, raw)
	if err != nil {
		return err
	}
	if err := rc.authorizeNodePatch(ops); err != nil {
		return err
	}
	apply := func(n *model.Node) error { return hs.applyNodePatch(rc, n, raw, ops, reset) }
	n, err := s.cfg.Lifecycle.UpdateNode(rc.ctx, ident, apply)
	if err != nil {
		return err
	}
	w := &jw{}
	rc.writeNode(w, n, rc.nodePlan(nil))
	return rc.json(200, w)
}

// nodePatchRequest decodes a node PATCH and runs Ironic's checks that need
// no node: schema, allowed fields, versions, names.
func (hs nodeAPI) nodePatchRequest(rc *call, raw string) ([]patchOp, bool, error) {
	v, err := rc.decodeBody(rc.s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, false, err
	}
	if v == nil {
		v = map[string]any{}
	}
	ops, err := parsePatch(v, rc.minor)
	if err != nil {
		return nil, false, err
	}
	reset, err := rc.boolParam("reset_interfaces")
	if err != nil {
		return nil, false, err
	}
	if reset != nil && rc.minor < minorResetInterfaces {
		return nil, false, notAcceptable()
	}
	if err := checkAllowedFields(ops, nodePatchAllowed); err != nil {
		return nil, false, err
	}
	for _, p := range ops {
		if fieldMinor(p.field()) > rc.minor && len(patchValues(ops, "/"+p.field())) > 0 {
			return nil, false, notAcceptable()
		}
	}
	if reset != nil && *reset && len(patchValues(ops, "/driver")) == 0 {
		return nil, false, invalid("The reset_interfaces parameter can only be used when changing the node's driver.")
	}
	if d := patchValues(ops, "/description"); len(d) > 0 {
		if s, ok := d[0].(string); ok && len([]rune(s)) > maxDescriptionLength {
			return nil, false, invalid("Cannot update node with description exceeding %d characters", maxDescriptionLength)
		}
	}
	for _, name := range patchValues(ops, "/name") {
		if err := checkNodeName(name, rc.minor, "Node "+strings.ReplaceAll(raw, "%", "%%")+": Cannot change name to invalid name '%s'"); err != nil {
			return nil, false, err
		}
	}
	return ops, reset != nil && *reset, nil
}

// inspectWaits says whether a node in state refuses updates of itself,
// its ports and portgroups while it inspects (Ironic's 409, from 1.39).
func (hs nodeAPI) inspectWaits(rc *call, state string) bool {
	return state == fsm.Inspecting && rc.minor >= minorInspectWait
}

// applyNodePatch runs under the node lock: Ironic's state rules, then the
// patch applied to the node's document, validated and written back.
func (hs nodeAPI) applyNodePatch(rc *call, n *model.Node, raw string, ops []patchOp, reset bool) error {
	onlyInstanceRemoval := len(ops) == 1 && ops[0].Op == "remove" && ops[0].Path == "/instance_uuid"
	switch {
	case n.Maintenance && onlyInstanceRemoval:
	case n.TargetProvisionState != "" && !fsm.UpdateAllowed(n.ProvisionState):
		return fault.New(fault.Conflict, "Node %s can not be updated while a state transition is in progress.", raw)
	case hs.inspectWaits(rc, n.ProvisionState):
		return fault.New(fault.Conflict, "Cannot update node \"%s\" while it is in state \"%s\".", n.UUID, fsm.Inspecting)
	}
	patched, err := applyPatch(rc.ctx, nodeFields.doc(n), ops)
	if err != nil {
		return err
	}
	if _, ok := patched["driver"]; !ok {
		return schemaError("patch", "'driver' is a required property")
	}
	fillRemoved(patched, nodeFields.patchProps)
	doc, err := validateObject("patch", patched, nodeFields.patchProps, "driver")
	if err != nil {
		return err
	}
	if err := nodeFields.runExtraChecks(doc); err != nil {
		return err
	}
	if err := hs.checkNodeLinks(rc, doc, n); err != nil {
		return err
	}
	if reset {
		for _, kind := range model.InterfaceNames {
			if len(patchValues(ops, "/"+kind+"_interface")) == 0 {
				doc[kind+"_interface"] = nil
			}
		}
	}
	oldInfo := n.InstanceInfo
	nodeFields.apply(n, doc)
	syncInstanceName(n, oldInfo)
	return nil
}

// syncInstanceName is Ironic's forward compatibility for Nova: a PATCH
// that changes instance_info of a node without an instance_name takes the
// name from instance_info.display_name (at any version).
func syncInstanceName(n *model.Node, oldInfo model.JSON) {
	if n.InstanceName != "" || (len(oldInfo) == 0 && len(n.InstanceInfo) == 0) || reflect.DeepEqual(oldInfo, n.InstanceInfo) {
		return
	}
	if dn, ok := n.InstanceInfo["display_name"].(string); ok && dn != "" {
		n.InstanceName = dn
	}
}

// DELETE /v1/nodes/{ident}
func (hs nodeAPI) deleteNode(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Lifecycle.DeleteNode(rc.ctx, ident); err != nil {
		return err
	}
	return rc.noContent()
}
