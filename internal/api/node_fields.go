package api

import (
	"cmp"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
)

// The node's fields, each stated once: the version that shows it, how it
// renders, whether a POST or PATCH body may carry it and how it is
// validated, the policy rule of a PATCH that touches it, and how it reads
// and writes model.Node. Rendering (render_node.go), the version gates
// (?fields=, sort keys, bodies), the body schema and the PATCH document
// (node_body.go), PATCH's allowed fields (nodes.go) and its rules
// (authz_patch.go) all read nodeTable, built from nodeFieldTable.

// Node field placement: plain attributes come first, then the links, then
// the attributes Ironic's API fills itself, then the sub-resource links.
const (
	placeAttr = iota
	placeLinks
	placeAPI
	placeSubLinks
)

// Whether, and where, a field is in Ironic's PATCH_ALLOWED_FIELDS.
const (
	patchNo = iota
	// patchSorted: in the list's sorted part.
	patchSorted
	// patchAppended: appended after the sorted part, in the order of
	// the versions that added the fields.
	patchAppended
)

// nodeField is one field of the node.
type nodeField struct {
	name  string
	minor int // the version that introduced it (Ironic's VERSIONED_FIELDS)
	place int
	write func(w *jw, rc *call, n *model.Node)

	// body: a POST (unless patchOnly) or PATCH body may carry it, with
	// prop's schema (node_schema(), node_patch_schema()); get is its value
	// in the PATCH document (unmasked, null when unset), set writes a
	// validated value.
	body      bool
	patchOnly bool
	prop      nodeProp
	// extra is the field's place in NODE_VALIDATE_EXTRA (0: none): boolean
	// words become booleans, UUIDs are checked and made canonical.
	extra int
	// after: Ironic's schema lists f right after this property, out of
	// its otherwise sorted order.
	after string
	get   func(n *model.Node) any
	set   func(n *model.Node, v any)

	patch int    // patchNo, patchSorted, patchAppended
	rule  string // the rule of a PATCH touching it ("": baremetal:node:update)

	// noSort: Ironic's controller refuses to sort on it (a dict or list).
	noSort bool

	// filter, when where is set, is the version of the node lists'
	// ?<name>= filter, which where puts into the selection.
	filter int
	where  func(rc *call, sel *nodeSelection, v string) error

	key []byte // `"name": `, filled by newNodeTable
}

// Constructors of the field kinds. A *Var field is writable: its accessor
// gives rendering, the PATCH document and the write of a validated body.

func fld(name string, minor, place int, write func(w *jw, rc *call, n *model.Node)) nodeField {
	return nodeField{name: name, minor: minor, place: place, write: write}
}

func strField(name string, minor int, get func(n *model.Node) string) nodeField {
	return fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.strOrNull(get(n)) })
}

func mapField(name string, minor int, get func(n *model.Node) map[string]any) nodeField {
	f := fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.object(get(n)) })
	return f.unsortable()
}

func boolField(name string, minor int, get func(n *model.Node) bool) nodeField {
	return fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.boolean(get(n)) })
}

func subLinks(name string, minor int) nodeField {
	return fld(name, minor, placeSubLinks, func(w *jw, rc *call, n *model.Node) {
		rc.links(w, "nodes", n.UUID, name)
	})
}

// strVar is a string field, null when empty.
func strVar(name string, minor int, p func(n *model.Node) *string) nodeField {
	f := strField(name, minor, func(n *model.Node) string { return *p(n) })
	return f.in(tStr, func(n *model.Node) any { return nilIfEmpty(*p(n)) },
		func(n *model.Node, v any) { *p(n) = docString(v) })
}

// plainStrVar is a string field whose document value is the string even
// when empty.
func plainStrVar(name string, minor int, types []string, p func(n *model.Node) *string) nodeField {
	f := strField(name, minor, func(n *model.Node) string { return *p(n) })
	return f.in(types, func(n *model.Node) any { return *p(n) },
		func(n *model.Node, v any) { *p(n) = docString(v) })
}

func boolVar(name string, minor int, p func(n *model.Node) *bool) nodeField {
	f := boolField(name, minor, func(n *model.Node) bool { return *p(n) })
	return f.in(tStrBool, func(n *model.Node) any { return *p(n) },
		func(n *model.Node, v any) { *p(n) = docBool(v) })
}

// boolPtrVar is a boolean that may be unset (null).
func boolPtrVar(name string, minor int, p func(n *model.Node) **bool) nodeField {
	f := fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.boolPtr(*p(n)) })
	return f.in(tStrBool, func(n *model.Node) any {
		if b := *p(n); b != nil {
			return *b
		}
		return nil
	}, func(n *model.Node, v any) { *p(n) = docBoolPtr(v) })
}

// mapVar is a dict field, {} in the document when unset.
func mapVar(name string, minor int, p func(n *model.Node) *model.JSON) nodeField {
	f := mapField(name, minor, func(n *model.Node) map[string]any { return *p(n) })
	return f.in(tObj, func(n *model.Node) any { return orEmpty(*p(n)) },
		func(n *model.Node, v any) { *p(n) = docMap(v) })
}

// ifaceVar is a <kind>_interface field: PATCHing it needs the
// driver_interfaces rule.
func ifaceVar(kind string, minor int) nodeField {
	f := strField(kind+"_interface", minor, func(n *model.Node) string { return n.Interfaces.Get(kind) })
	f = f.in(tStr, func(n *model.Node) any { return nilIfEmpty(n.Interfaces.Get(kind)) },
		func(n *model.Node, v any) { n.Interfaces.Set(kind, docString(v)) })
	return f.patchable("baremetal:node:update:driver_interfaces")
}

// in makes f a body field of the given JSON schema types.
func (f nodeField) in(types []string, get func(n *model.Node) any, set func(n *model.Node, v any)) nodeField {
	f.body, f.get, f.set = true, get, set
	f.prop = nodeProp{name: f.name, types: types}
	return f
}

// masked renders f with its secrets masked (secret's defaults and keys).
func (f nodeField) masked(get func(n *model.Node) model.JSON, keys ...string) nodeField {
	f.write = func(w *jw, _ *call, n *model.Node) { w.masked(get(n), keys...) }
	return f
}

// length bounds a string field's length (0: no bound).
func (f nodeField) length(minLen, maxLen int) nodeField {
	f.prop.minLen, f.prop.maxLen = minLen, maxLen
	return f
}

// validated gives f's place in NODE_VALIDATE_EXTRA.
func (f nodeField) validated(at int) nodeField {
	f.extra = at
	return f
}

// listedAfter places f right after prop in the schema's property order.
func (f nodeField) listedAfter(prop string) nodeField {
	f.after = prop
	return f
}

// patchable puts f in PATCH_ALLOWED_FIELDS, under rule ("" for
// baremetal:node:update).
func (f nodeField) patchable(rule string) nodeField {
	f.patch, f.rule = patchSorted, rule
	return f
}

// appended puts f after PATCH_ALLOWED_FIELDS' sorted part.
func (f nodeField) appended() nodeField {
	f.patch = patchAppended
	return f
}

// ruled is the rule of a PATCH touching a field PATCH may not change
// (named in Ironic's rules all the same).
func (f nodeField) ruled(rule string) nodeField {
	f.rule = rule
	return f
}

// unsortable: f is no sort key of node lists.
func (f nodeField) unsortable() nodeField {
	f.noSort = true
	return f
}

// filtered makes ?<name>= a filter of node lists from version minor.
func (f nodeField) filtered(minor int, where func(rc *call, sel *nodeSelection, v string) error) nodeField {
	f.filter, f.where = minor, where
	return f
}

// onlyPatched: only a PATCH body may carry f, not a POST.
func (f nodeField) onlyPatched() nodeField {
	f.patchOnly = true
	return f
}

// nodeFieldTable lists every node key in the order Ironic writes them
// (object_to_dict over _get_fields_for_node_query), with its minimum minor.
func nodeFieldTable() []nodeField {
	return []nodeField{
		plainStrVar("uuid", 1, tStr, func(n *model.Node) *string { return &n.UUID }).validated(9),
		fld("created_at", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.CreatedAt) }),
		fld("updated_at", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.UpdatedAt) }),
		boolPtrVar("automated_clean", 47, func(n *model.Node) **bool { return &n.AutomatedClean }).validated(1).patchable(""),
		ifaceVar("bios", 40),
		ifaceVar("boot", 31),
		strVar("boot_mode", 75, func(n *model.Node) *string { return &n.BootMode }),
		mapField("clean_step", 7, func(n *model.Node) map[string]any { return n.CleanStep }),
		conductorGroupField().filtered(46, func(_ *call, sel *nodeSelection, v string) error {
			g := strings.ToLower(v)
			sel.q.ConductorGroup = &g
			return nil
		}),
		boolVar("console_enabled", 1, func(n *model.Node) *bool { return &n.ConsoleEnabled }).validated(3),
		ifaceVar("console", 31),
		boolVar("disable_power_off", 95, func(n *model.Node) *bool { return &n.DisablePowerOff }).validated(4).
			patchable("baremetal:node:update:disable_power_off"),
		ifaceVar("deploy", 31),
		mapField("deploy_step", 44, func(n *model.Node) map[string]any { return n.DeployStep }),
		strVar("description", 51, func(n *model.Node) *string { return &n.Description }).length(0, maxDescriptionLength).patchable(""),
		plainStrVar("driver", 1, []string{"string"}, func(n *model.Node) *string { return &n.Driver }).
			patchable("baremetal:node:update:driver_interfaces").
			filtered(16, func(_ *call, sel *nodeSelection, v string) error { sel.q.Driver = v; return nil }),
		mapVar("driver_info", 1, func(n *model.Node) *model.JSON { return &n.DriverInfo }).
			masked(func(n *model.Node) model.JSON { return n.DriverInfo }, driverInfoSecrets...).
			patchable("baremetal:node:update:driver_info"),
		fld("driver_internal_info", 3, placeAttr, func(w *jw, _ *call, n *model.Node) {
			w.masked(withoutInventory(n.DriverInternalInfo))
		}).unsortable(),
		mapVar("extra", 1, func(n *model.Node) *model.JSON { return &n.Extra }).patchable("baremetal:node:update_extra"),
		strField("fault", 42, func(n *model.Node) string { return n.Fault }).filtered(42, filterFault),
		ifaceVar("firmware", 86).appended(),
		strField("health", 109, func(n *model.Node) string { return n.Health }),
		fld("inspection_finished_at", 6, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.InspectionFinishedAt) }),
		fld("inspection_started_at", 6, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.InspectionStartedAt) }),
		ifaceVar("inspect", 31),
		mapVar("instance_info", 1, func(n *model.Node) *model.JSON { return &n.InstanceInfo }).
			masked(func(n *model.Node) model.JSON { return n.InstanceInfo }, instanceInfoSecrets...).
			patchable("baremetal:node:update_instance_info"),
		strVar("instance_name", minorInstanceName, func(n *model.Node) *string { return &n.InstanceName }).length(1, 255).patchable(""),
		strVar("instance_uuid", 1, func(n *model.Node) *string { return &n.InstanceUUID }).validated(5).
			patchable("baremetal:node:update:instance_uuid"),
		strField("last_error", 1, func(n *model.Node) string { return secret.String(n.LastError) }),
		strVar("lessee", 65, func(n *model.Node) *string { return &n.Lessee }).patchable("baremetal:node:update:lessee").
			filtered(65, func(_ *call, sel *nodeSelection, v string) error { sel.q.Lessee = v; return nil }),
		boolVar("maintenance", 1, func(n *model.Node) *bool { return &n.Maintenance }).validated(7).listedAfter("management_interface").
			patchable("baremetal:node:set_maintenance"),
		strField("maintenance_reason", 1, func(n *model.Node) string { return n.MaintenanceReason }).
			ruled("baremetal:node:set_maintenance"),
		ifaceVar("management", 31),
		strVar("name", minorNodeName, func(n *model.Node) *string { return &n.Name }).patchable("baremetal:node:update:name"),
		mapVar("network_data", 66, func(n *model.Node) *model.JSON { return &n.NetworkData }).
			patchable("baremetal:node:update:network_data"),
		ifaceVar("network", 20),
		strVar("owner", 50, func(n *model.Node) *string { return &n.Owner }).patchable("baremetal:node:update:owner").
			filtered(50, func(_ *call, sel *nodeSelection, v string) error { sel.q.Owner = v; return nil }),
		strVar("parent_node", 83, func(n *model.Node) *string { return &n.ParentNode }).length(0, 36).
			patchable("baremetal:node:update:parent_node").appended(),
		ifaceVar("power", 31),
		strField("power_state", 1, func(n *model.Node) string { return n.PowerState }),
		mapVar("properties", 1, func(n *model.Node) *model.JSON { return &n.Properties }).
			masked(func(n *model.Node) model.JSON { return n.Properties }).
			patchable("baremetal:node:update:properties"),
		boolVar("protected", 48, func(n *model.Node) *bool { return &n.Protected }).validated(6).onlyPatched().patchable(""),
		strVar("protected_reason", 48, func(n *model.Node) *string { return &n.ProtectedReason }).onlyPatched().patchable(""),
		fld("provision_state", 1, placeAttr, func(w *jw, rc *call, n *model.Node) {
			w.strOrNull(shownProvisionState(n.ProvisionState, rc.minor))
		}),
		fld("provision_updated_at", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.ProvisionUpdatedAt) }),
		mapField("raid_config", 12, func(n *model.Node) map[string]any { return n.RaidConfig }),
		ifaceVar("raid", 31),
		ifaceVar("rescue", 38),
		strField("reservation", 1, func(n *model.Node) string { return n.Reservation }),
		strVar("resource_class", 21, func(n *model.Node) *string { return &n.ResourceClass }).length(0, 80).patchable("").
			filtered(21, func(_ *call, sel *nodeSelection, v string) error { sel.q.ResourceClass = v; return nil }),
		boolVar("retired", 61, func(n *model.Node) *bool { return &n.Retired }).validated(8).
			patchable("baremetal:node:update:retired"),
		strVar("retired_reason", 61, func(n *model.Node) *string { return &n.RetiredReason }).
			patchable("baremetal:node:update:retired"),
		boolPtrVar("secure_boot", 75, func(n *model.Node) **bool { return &n.SecureBoot }),
		mapField("service_step", 87, func(n *model.Node) map[string]any { return n.ServiceStep }),
		strVar("shard", 82, func(n *model.Node) *string { return &n.Shard }).patchable("baremetal:node:update:shard"),
		ifaceVar("storage", 33),
		strField("target_power_state", 1, func(n *model.Node) string { return n.TargetPowerState }),
		strField("target_provision_state", 1, func(n *model.Node) string { return n.TargetProvisionState }),
		mapField("target_raid_config", 12, func(n *model.Node) map[string]any { return n.TargetRaidConfig }),
		fld("traits", 37, placeAttr, func(w *jw, _ *call, n *model.Node) { w.strings(n.Traits) }).unsortable(),
		ifaceVar("vendor", 31),
		fld("links", 1, placeLinks, func(w *jw, rc *call, n *model.Node) { rc.links(w, "nodes", n.UUID) }),
		fld("conductor", 49, placeAPI, func(w *jw, rc *call, n *model.Node) { w.strOrNull(rc.conductorFor(n)) }).
			filtered(49, func(rc *call, sel *nodeSelection, v string) error {
				sel.keep = append(sel.keep, func(n *model.Node) bool { return rc.conductorFor(n) == v })
				return nil
			}),
		fld("allocation_uuid", 52, placeAPI, func(w *jw, _ *call, n *model.Node) { w.strOrNull(n.AllocationUUID) }),
		chassisField(),
		subLinks("ports", 1),
		subLinks("states", 14),
		subLinks("portgroups", 24),
		subLinks("volume", 32),
	}
}

// conductorGroupField: always a string (never null), stored lower-case.
func conductorGroupField() nodeField {
	f := fld("conductor_group", 46, placeAttr, func(w *jw, _ *call, n *model.Node) { w.str(n.ConductorGroup) })
	return f.in(tStr, func(n *model.Node) any { return n.ConductorGroup },
		func(n *model.Node, v any) { n.ConductorGroup = strings.ToLower(docString(v)) }).
		patchable("baremetal:node:update:conductor_group")
}

// chassisField is written by Ironic's API after the links.
func chassisField() nodeField {
	f := fld("chassis_uuid", 1, placeAPI, func(w *jw, _ *call, n *model.Node) { w.strOrNull(n.ChassisUUID) })
	return f.in(tStr, func(n *model.Node) any { return nilIfEmpty(n.ChassisUUID) },
		func(n *model.Node, v any) { n.ChassisUUID = docString(v) }).
		validated(2).patchable("baremetal:node:update:chassis_uuid")
}

// nodeTable is the field table with what is derived from it, built once
// and read-only afterwards.
type nodeTable struct {
	fields []nodeField
	index  map[string]*nodeField
	// plans holds, per minor version, the fields of a full node.
	plans [][]*nodeField
	// createProps and patchProps are the POST and PATCH schemas in
	// Ironic's property order: node_schema()'s sorted properties, then
	// those node_patch_schema() adds.
	createProps, patchProps []nodeProp
	// extra are the body fields of NODE_VALIDATE_EXTRA, in its order.
	extra []*nodeField
	// patchAllowed is PATCH_ALLOWED_FIELDS in Ironic's order (the order
	// its error text lists them in).
	patchAllowed []string
	// filters are the fields with a plain list filter, by its version.
	filters []*nodeField
}

// nodeFields is the API's table.
var nodeFields = newNodeTable(nodeFieldTable())

func newNodeTable(fields []nodeField) *nodeTable {
	t := &nodeTable{fields: fields, index: make(map[string]*nodeField, len(fields)),
		plans: make([][]*nodeField, MaxMinor+1)}
	var body, patchOnly []*nodeField
	var sorted, appended []*nodeField
	for i := range t.fields {
		f := &t.fields[i]
		f.key = append(pyrepr.AppendJSONString(nil, f.name), ':', ' ')
		t.index[f.name] = f
		for minor := max(f.minor, MinMinor); minor <= MaxMinor; minor++ {
			t.plans[minor] = append(t.plans[minor], f)
		}
		switch {
		case !f.body:
		case f.patchOnly:
			patchOnly = append(patchOnly, f)
		default:
			body = append(body, f)
		}
		if f.extra > 0 {
			t.extra = append(t.extra, f)
		}
		if f.where != nil {
			t.filters = append(t.filters, f)
		}
		switch f.patch {
		case patchSorted:
			sorted = append(sorted, f)
		case patchAppended:
			appended = append(appended, f)
		}
	}
	schemaOrder := func(a, b *nodeField) int { return strings.Compare(a.schemaKey(), b.schemaKey()) }
	slices.SortFunc(body, schemaOrder)
	slices.SortFunc(patchOnly, schemaOrder)
	for _, f := range body {
		t.createProps = append(t.createProps, f.prop)
	}
	t.patchProps = slices.Clone(t.createProps)
	for _, f := range patchOnly {
		t.patchProps = append(t.patchProps, f.prop)
	}
	slices.SortFunc(t.extra, func(a, b *nodeField) int { return cmp.Compare(a.extra, b.extra) })
	slices.SortFunc(sorted, func(a, b *nodeField) int { return strings.Compare(a.name, b.name) })
	slices.SortStableFunc(appended, func(a, b *nodeField) int { return cmp.Compare(a.minor, b.minor) })
	slices.SortStableFunc(t.filters, func(a, b *nodeField) int { return cmp.Compare(a.filter, b.filter) })
	for _, f := range append(sorted, appended...) {
		t.patchAllowed = append(t.patchAllowed, f.name)
	}
	return t
}

// schemaKey orders the schema's properties.
func (f *nodeField) schemaKey() string {
	if f.after != "" {
		return f.after + "\x00"
	}
	return f.name
}

// minor is the version that introduced a field (1 for the original ones
// and for names that are no field).
func (t *nodeTable) minor(name string) int {
	if f := t.index[name]; f != nil {
		return f.minor
	}
	return 1
}

// doc is the patchable document of a node: every property of the patch
// schema with the node's real (unmasked) values, null for unset strings.
func (t *nodeTable) doc(n *model.Node) map[string]any {
	doc := make(map[string]any, len(t.patchProps))
	for i := range t.fields {
		if f := &t.fields[i]; f.body {
			doc[f.name] = f.get(n)
		}
	}
	return doc
}

// apply writes the properties present in a validated document into n.
func (t *nodeTable) apply(n *model.Node, doc map[string]any) {
	for k, v := range doc {
		if f := t.index[k]; f != nil && f.body {
			f.set(n, v)
		}
	}
}

// unsortable says whether key is a field node lists may not sort on.
func (t *nodeTable) unsortable(key string) bool {
	f := t.index[key]
	return f != nil && f.noSort
}

// patchRule is the rule of a PATCH touching field ("" when none is
// named: baremetal:node:update).
func (t *nodeTable) patchRule(field string) string {
	if f := t.index[field]; f != nil {
		return f.rule
	}
	return ""
}

// NodeFields lists, from the node field table, the node's fields as a
// node document shows them (not its links) and those a PATCH may
// change: the CLI's tests check its field lists against them.
func NodeFields() (shown, patchable []string) {
	for _, f := range nodeFields.fields {
		if f.place == placeAttr || f.place == placeAPI {
			shown = append(shown, f.name)
		}
	}
	return shown, slices.Clone(nodeFields.patchAllowed)
}
