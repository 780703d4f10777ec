package api

import (
	"github.com/anvil-metal/anvil/internal/model"
)

// Minor versions of portgroup behaviour.
const (
	minorPortgroupSub      = 24  // /v1/nodes/{node}/portgroups, /v1/portgroups/{pg}/ports
	minorPortgroupMode     = 26  // mode and properties
	minorPortgroupPhysnet  = 102 // physical_network shown
	minorPortgroupCategory = 103 // category shown
	minorPortgroupShard    = 106 // ?shard=
)

// defaultPortgroupMode is Ironic's [DEFAULT]default_portgroup_mode.
const defaultPortgroupMode = "active-backup"

// portgroupProps is Ironic's PORTGROUP_SCHEMA, in its property order.
var portgroupProps = []nodeProp{
	{name: "address", types: tStr},
	{name: "category", types: tStr, maxLen: 80},
	{name: "extra", types: tObj},
	{name: "mode", types: tStr},
	{name: "name", types: tStr},
	{name: "node_uuid", types: []string{"string"}},
	{name: "physical_network", types: tStr, maxLen: 64},
	{name: "properties", types: tObj},
	{name: "standalone_ports_supported", types: tStrBool},
	{name: "uuid", types: tStr},
}

// portgroupPatchAllowed is Ironic's PATCH_ALLOWED_FIELDS for portgroups.
var portgroupPatchAllowed = []string{"address", "extra", "mode", "name", "node_uuid",
	"properties", "standalone_ports_supported", "physical_network", "category"}

// validatePortgroup checks a portgroup body (create or patched) against
// the schema and PORTGROUP_VALIDATOR_EXTRA, normalising the MAC, UUIDs and
// the boolean.
func validatePortgroup(what string, v any) (map[string]any, error) {
	doc, err := validateObject(what, v, portgroupProps, "node_uuid")
	if err != nil {
		return nil, err
	}
	if addr, ok := doc["address"].(string); ok {
		mac, valid := normalizeMAC(addr)
		if !valid {
			return nil, invalid("Expected valid MAC address for address: %s", addr)
		}
		doc["address"] = mac
	}
	if err := docUUIDs(doc, "node_uuid", "uuid"); err != nil {
		return nil, err
	}
	if v, ok := doc["standalone_ports_supported"]; ok && v != nil {
		b, err := argBool("standalone_ports_supported", v)
		if err != nil {
			return nil, err
		}
		doc["standalone_ports_supported"] = *b
	}
	return doc, nil
}

// portgroupDoc is the patchable document of a portgroup.
func portgroupDoc(pg *model.Portgroup) map[string]any {
	return map[string]any{
		"address": nilIfEmpty(pg.Address), "category": nilIfEmpty(pg.Category), "extra": orEmpty(pg.Extra),
		"mode": nilIfEmpty(pg.Mode), "name": nilIfEmpty(pg.Name), "node_uuid": pg.NodeUUID,
		"physical_network": nilIfEmpty(pg.PhysicalNetwork), "properties": orEmpty(pg.Properties),
		"standalone_ports_supported": pg.StandalonePortsSupported, "uuid": pg.UUID,
	}
}

// applyPortgroupDoc writes a validated document into pg.
func applyPortgroupDoc(pg *model.Portgroup, doc map[string]any) {
	for k, v := range doc {
		switch k {
		case "address":
			pg.Address = docString(v)
		case "category":
			pg.Category = docString(v)
		case "extra":
			pg.Extra = docMap(v)
		case "mode":
			pg.Mode = docString(v)
		case "name":
			pg.Name = docString(v)
		case "node_uuid":
			pg.NodeUUID = docString(v)
		case "physical_network":
			pg.PhysicalNetwork = docString(v)
		case "properties":
			pg.Properties = docMap(v)
		case "standalone_ports_supported":
			pg.StandalonePortsSupported = v == nil || docBool(v)
		case "uuid":
			pg.UUID = docString(v)
		}
	}
}

// portgroupFields lists the portgroup keys in Ironic's order
// (object_to_dict, then links and ports).
var portgroupFields = []docField[model.Portgroup]{
	{"uuid", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.str(pg.UUID) }},
	{"created_at", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.timestamp(pg.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.timestamp(pg.UpdatedAt) }},
	{"address", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.strOrNull(pg.Address) }},
	{"extra", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.object(pg.Extra) }},
	{"internal_info", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.masked(pg.InternalInfo) }},
	{"mode", minorPortgroupMode, func(w *jw, _ *call, pg *model.Portgroup) { w.strOrNull(pg.Mode) }},
	{"name", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.strOrNull(pg.Name) }},
	{"properties", minorPortgroupMode, func(w *jw, _ *call, pg *model.Portgroup) { w.object(pg.Properties) }},
	{"standalone_ports_supported", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.boolean(pg.StandalonePortsSupported) }},
	{"node_uuid", 1, func(w *jw, _ *call, pg *model.Portgroup) { w.str(pg.NodeUUID) }},
	{"physical_network", minorPortgroupPhysnet, func(w *jw, _ *call, pg *model.Portgroup) { w.strOrNull(pg.PhysicalNetwork) }},
	{"category", minorPortgroupCategory, func(w *jw, _ *call, pg *model.Portgroup) { w.strOrNull(pg.Category) }},
	{"dynamic_portgroup", minorDynamicPortgroup, func(w *jw, _ *call, pg *model.Portgroup) { w.boolean(pg.DynamicPortgroup) }},
	{"links", 1, func(w *jw, rc *call, pg *model.Portgroup) { rc.links(w, "portgroups", pg.UUID) }},
	{"ports", 1, func(w *jw, rc *call, pg *model.Portgroup) { rc.links(w, "portgroups", pg.UUID, "ports") }},
}

// briefPortgroupFields are the keys of a portgroup in a plain list.
var briefPortgroupFields = []string{"uuid", "address", "name"}

// writePortgroup writes a portgroup with the fields visible at the request
// version (all of them, or the requested subset plus links).
func (hs portAPI) writePortgroup(rc *call, w *jw, pg *model.Portgroup, fields []string) {
	writeDoc(w, rc, pg, portgroupFields, fields)
}
