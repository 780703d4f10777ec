package api

import (
	"regexp"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// portProps is Ironic's PORT_SCHEMA, in its property order.
var portProps = []nodeProp{
	{name: "address", types: []string{"string"}},
	{name: "extra", types: tObj},
	{name: "is_smartnic", types: tStrBool},
	{name: "local_link_connection", types: []string{"null", "object"}},
	{name: "node_ident", types: []string{"string"}},
	{name: "node_uuid", types: []string{"string"}},
	{name: "physical_network", types: tStr, maxLen: 64},
	{name: "portgroup_uuid", types: tStr},
	{name: "pxe_enabled", types: tStrBool},
	{name: "uuid", types: tStr},
	{name: "name", types: tStr},
	{name: "description", types: tStr, maxLen: 255},
	{name: "vendor", types: tStr, maxLen: 32},
	{name: "category", types: tStr, maxLen: 80},
	{name: "available_for_dynamic_portgroup", types: []string{"boolean"}},
}

// portPatchAllowed is Ironic's PATCH_ALLOWED_FIELDS for ports.
var portPatchAllowed = []string{"address", "extra", "is_smartnic", "local_link_connection",
	"node_ident", "node_uuid", "physical_network", "portgroup_uuid", "pxe_enabled", "name",
	"description", "vendor", "category", "available_for_dynamic_portgroup"}

// portFieldMinor is the version that introduced each port field.
var portFieldMinor = map[string]int{
	"internal_info": 18, "pxe_enabled": 19, "local_link_connection": 19, "portgroup_uuid": 24,
	"physical_network": 34, "is_smartnic": 53, "local_link_connection/network_type": 64,
	"name": 88, "node_ident": 94, "description": 97, "vendor": 100, "category": 101,
	"available_for_dynamic_portgroup": minorDynamicPortgroup,
}

var (
	macRe        = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`)
	datapathIDRe = regexp.MustCompile(`^([0-9a-f]{2}:){7}[0-9a-f]{2}$|^[0-9a-f]{16}$`)
)

// normalizeMAC is Ironic's validate_and_normalize_mac.
func normalizeMAC(s string) (string, bool) {
	l := strings.ToLower(s)
	return l, macRe.MatchString(l)
}

// validatePort checks a port body (create or patched) against the schema
// and Ironic's extra validators, normalising MACs, UUIDs and booleans.
func validatePort(what string, v any) (map[string]any, error) {
	doc, err := validateObject(what, v, portProps, "address")
	if err != nil {
		return nil, err
	}
	_, hasIdent := doc["node_ident"]
	_, hasUUID := doc["node_uuid"]
	switch {
	case !hasIdent && !hasUUID:
		return nil, schemaError(what, "'node_uuid' is a required property")
	case hasIdent && hasUUID:
		return nil, schemaError(what, "%s is valid under each of {'required': ['node_ident']}, {'required': ['node_uuid']}", maskedRepr(doc))
	}
	addr := doc["address"].(string)
	mac, ok := normalizeMAC(addr)
	if !ok {
		return nil, invalid("Expected valid MAC address for address: %s", addr)
	}
	doc["address"] = mac
	if err := portExtraChecks(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// portExtraChecks is the rest of PORT_VALIDATOR_EXTRA, in its order.
func portExtraChecks(doc map[string]any) error {
	if err := docUUIDs(doc, "node_uuid"); err != nil {
		return err
	}
	for _, name := range []string{"is_smartnic", "local_link_connection", "portgroup_uuid",
		"pxe_enabled", "uuid", "available_for_dynamic_portgroup"} {
		v, ok := doc[name]
		if !ok || v == nil {
			continue
		}
		switch name {
		case "local_link_connection":
			if err := checkLocalLink(v.(map[string]any)); err != nil {
				return err
			}
		case "portgroup_uuid", "uuid":
			s, _ := v.(string)
			if !isUUIDLike(s) {
				return invalid("Expected UUID for %s: %s", name, s)
			}
			doc[name] = canonicalUUID(s)
		default:
			b, err := argBool(name, v)
			if err != nil {
				return err
			}
			doc[name] = *b
		}
	}
	return nil
}

var localLinkKeys = []string{"port_id", "switch_id", "hostname", "switch_info", "network_type",
	"vtep-logical-switch", "vtep-physical-switch"}

// checkLocalLink is Ironic's LOCAL_LINK_CONN_SCHEMA (one of: port_id with
// switch_id, port_id with hostname, an unmanaged network_type, OVN VTEP
// switches, or empty) and its switch_id normalisation.
func checkLocalLink(m map[string]any) error {
	bad := func() error {
		msg := "Schema error for local_link_connection: " + maskedRepr(m) + " is not valid under any of the given schemas"
		for _, k := range []string{"port_id", "switch_id"} {
			if _, ok := m[k]; !ok {
				return fault.New(fault.Invalid, "%s. Possible root cause: '%s' is a required property", msg, k)
			}
		}
		return fault.New(fault.Invalid, "%s", msg)
	}
	for k, v := range m {
		if _, ok := v.(string); !ok || !slices.Contains(localLinkKeys, k) {
			return bad()
		}
	}
	if nt, ok := m["network_type"]; ok && nt != "managed" && nt != "unmanaged" {
		return bad()
	}
	_, lsw := m["vtep-logical-switch"]
	_, psw := m["vtep-physical-switch"]
	has := func(k string) bool { _, ok := m[k]; return ok }
	valid := len(m) == 0 || (lsw == psw && (has("port_id") && (has("switch_id") || has("hostname") || lsw) ||
		m["network_type"] == "unmanaged"))
	if !valid {
		return bad()
	}
	if sw, ok := m["switch_id"].(string); ok {
		l := strings.ToLower(sw)
		if !macRe.MatchString(l) && !datapathIDRe.MatchString(l) {
			return invalid("Expected a MAC address or OpenFlow datapath ID but received %s.", sw)
		}
		m["switch_id"] = l
	}
	return nil
}

// OVN VTEP switches in local_link_connection: accepted from 1.90, and
// from 1.105 (which removed the feature) no longer (Ironic's
// allow_ovn_vtep_version).
const (
	minorOVNVTEP       = 90
	minorRemoveOVNVTEP = 105
	// llcVTEP is the pseudo field of a create body whose
	// local_link_connection names a VTEP logical switch.
	llcVTEP = "local_link_connection/vtep-logical-switch"
)

var llcVTEPKeys = []string{"vtep-logical-switch", "vtep-physical-switch"}

func ovnVTEPAllowed(minor int) bool { return minor >= minorOVNVTEP && minor < minorRemoveOVNVTEP }

// checkPortFieldVersions refuses fields the request's version does not
// know (406).
func checkPortFieldVersions(fields []string, minor int) error {
	for _, f := range fields {
		if m, ok := portFieldMinor[f]; ok && m > minor && f != "internal_info" {
			return notAcceptable()
		}
		if f == llcVTEP && !ovnVTEPAllowed(minor) {
			return notAcceptable()
		}
	}
	return nil
}

// portBodyFields lists the keys a create body sets, with the
// local_link_connection keys that have their own versions. (A PATCH is
// checked on its paths only, so, as in Ironic, it may set VTEP keys at any
// version; they are then hidden outside 1.90-1.104.)
func portBodyFields(doc map[string]any) []string {
	fields := make([]string, 0, len(doc)+2)
	for k := range doc {
		fields = append(fields, k)
	}
	if llc, ok := doc["local_link_connection"].(map[string]any); ok {
		if _, ok := llc["network_type"]; ok {
			fields = append(fields, "local_link_connection/network_type")
		}
		if _, ok := llc["vtep-logical-switch"]; ok {
			fields = append(fields, llcVTEP)
		}
	}
	return fields
}

// shownLocalLink is a port's local_link_connection at the request's
// version: outside 1.90-1.104 one naming VTEP switches reads {}.
func shownLocalLink(llc map[string]any, minor int) map[string]any {
	if ovnVTEPAllowed(minor) {
		return llc
	}
	for _, k := range llcVTEPKeys {
		if _, ok := llc[k]; ok {
			return nil
		}
	}
	return llc
}

// portDoc is the patchable document of a port.
func portDoc(p *model.Port) map[string]any {
	return map[string]any{
		"address": p.Address, "extra": orEmpty(p.Extra), "is_smartnic": p.IsSmartNIC,
		"local_link_connection": orEmpty(p.LocalLinkConnection), "node_uuid": p.NodeUUID,
		"physical_network": nilIfEmpty(p.PhysicalNetwork), "portgroup_uuid": nilIfEmpty(p.PortgroupUUID),
		"pxe_enabled": p.PXEEnabled, "uuid": p.UUID, "name": nilIfEmpty(p.Name),
		"description": nilIfEmpty(p.Description), "vendor": nilIfEmpty(p.Vendor), "category": nilIfEmpty(p.Category),
		"available_for_dynamic_portgroup": p.DynamicPortgroupAvailable(),
	}
}

// applyPortDoc writes a validated document into p (fresh maps: the
// conductor's copy of the port may share them with the stored one).
func applyPortDoc(p *model.Port, doc map[string]any) {
	for k, v := range doc {
		switch k {
		case "address":
			p.Address = docString(v)
		case "extra":
			p.Extra = docMap(v)
		case "is_smartnic":
			p.IsSmartNIC = docBool(v)
		case "local_link_connection":
			p.LocalLinkConnection = docMap(v)
		case "node_uuid":
			p.NodeUUID = docString(v)
		case "physical_network":
			p.PhysicalNetwork = docString(v)
		case "portgroup_uuid":
			p.PortgroupUUID = docString(v)
		case "pxe_enabled":
			p.PXEEnabled = v == nil || docBool(v)
		case "uuid":
			p.UUID = docString(v)
		case "name":
			p.Name = docString(v)
		case "description":
			p.Description = docString(v)
		case "vendor":
			p.Vendor = docString(v)
		case "category":
			p.Category = docString(v)
		case "available_for_dynamic_portgroup":
			p.AvailableForDynamicPortgroup = nil // true, Ironic's default
			if b, ok := v.(bool); ok && !b {
				p.AvailableForDynamicPortgroup = new(false)
			}
		}
	}
}

// checkPortSemantics is the part of Ironic's port create/patch checks that
// looks at values alone (the portgroup is checkPortPortgroup's): a new
// smart NIC port needs a port_id and hostname, and a physical network may
// not be empty.
func checkPortSemantics(doc map[string]any, old *model.Port, physTouched bool) error {
	if b, _ := doc["is_smartnic"].(bool); b && old == nil {
		llc, _ := doc["local_link_connection"].(map[string]any)
		_, pid := llc["port_id"]
		_, host := llc["hostname"]
		if !pid || !host {
			return invalid("Smart NIC port must have port_id and hostname in local_link_connection")
		}
	}
	if pn, ok := doc["physical_network"].(string); ok && pn == "" && physTouched {
		return invalid("A non-empty value is required when setting physical_network")
	}
	return nil
}
