package api

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// nodeProp is one property of Ironic's node JSON schema (node_schema() in
// ironic/api/controllers/v1/node.py) with the extra validation Ironic runs
// after the schema (NODE_VALIDATE_EXTRA).
type nodeProp struct {
	name   string
	types  []string // jsonschema types
	maxLen int
	minLen int
	check  int // extra validator: checkNone, checkBool or checkUUID
}

const (
	checkNone = iota
	checkBool
	checkUUID
)

var (
	tStr     = []string{"string", "null"}
	tStrBool = []string{"string", "boolean", "null"}
	tObj     = []string{"object", "null"}
)

// nodeProps is the create schema, in Ironic's property order.
var nodeProps = []nodeProp{
	{name: "automated_clean", types: tStrBool, check: checkBool},
	{name: "bios_interface", types: tStr},
	{name: "boot_interface", types: tStr},
	{name: "boot_mode", types: tStr},
	{name: "chassis_uuid", types: tStr, check: checkUUID},
	{name: "conductor_group", types: tStr},
	{name: "console_enabled", types: tStrBool, check: checkBool},
	{name: "console_interface", types: tStr},
	{name: "deploy_interface", types: tStr},
	{name: "description", types: tStr, maxLen: 4096},
	{name: "disable_power_off", types: tStrBool, check: checkBool},
	{name: "driver", types: []string{"string"}},
	{name: "driver_info", types: tObj},
	{name: "extra", types: tObj},
	{name: "firmware_interface", types: tStr},
	{name: "inspect_interface", types: tStr},
	{name: "instance_info", types: tObj},
	{name: "instance_name", types: tStr, minLen: 1, maxLen: 255},
	{name: "instance_uuid", types: tStr, check: checkUUID},
	{name: "lessee", types: tStr},
	{name: "management_interface", types: tStr},
	{name: "maintenance", types: tStrBool, check: checkBool},
	{name: "name", types: tStr},
	{name: "network_data", types: tObj},
	{name: "network_interface", types: tStr},
	{name: "owner", types: tStr},
	{name: "parent_node", types: tStr, maxLen: 36},
	{name: "power_interface", types: tStr},
	{name: "properties", types: tObj},
	{name: "raid_interface", types: tStr},
	{name: "rescue_interface", types: tStr},
	{name: "resource_class", types: tStr, maxLen: 80},
	{name: "retired", types: tStrBool, check: checkBool},
	{name: "retired_reason", types: tStr},
	{name: "secure_boot", types: tStrBool, check: checkBool},
	{name: "shard", types: tStr},
	{name: "storage_interface", types: tStr},
	{name: "uuid", types: tStr, check: checkUUID},
	{name: "vendor_interface", types: tStr},
}

// nodePatchProps adds the fields only a PATCH may set.
var nodePatchProps = append(slices.Clone(nodeProps),
	nodeProp{name: "protected", types: tStrBool, check: checkBool},
	nodeProp{name: "protected_reason", types: tStr},
)

// extraCheckOrder is the order of Ironic's NODE_VALIDATE_EXTRA validators.
var extraCheckOrder = []string{"automated_clean", "chassis_uuid", "console_enabled",
	"disable_power_off", "instance_uuid", "protected", "maintenance", "retired", "uuid"}

func schemaError(what, format string, args ...any) error {
	return fault.New(fault.Invalid, "Schema error for "+what+": "+format, args...)
}

// validateObject checks doc against props the way jsonschema's best match
// reports it: the required property, then unknown properties, then the
// first property of the wrong type or length.
func validateObject(what string, v any, props []nodeProp, required ...string) (map[string]any, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, schemaError(what, "%s is not of type 'object'", maskedRepr(v))
	}
	for _, r := range required {
		if _, ok := doc[r]; !ok {
			return nil, schemaError(what, "'%s' is a required property", r)
		}
	}
	var extra []string
	for k := range doc {
		if !slices.ContainsFunc(props, func(p nodeProp) bool { return p.name == k }) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return nil, additionalProps(what, extra)
	}
	for _, p := range props {
		val, ok := doc[p.name]
		if !ok {
			continue
		}
		if err := checkProp(what, p, val); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func additionalProps(what string, extra []string) error {
	return schemaError(what, "%s", additionalText(extra))
}

// additionalText is jsonschema's additionalProperties message (extra is
// sorted in place).
func additionalText(extra []string) string {
	slices.Sort(extra)
	verb := "was"
	if len(extra) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("Additional properties are not allowed (%s %s unexpected)", pyrepr.QuoteAll(extra), verb)
}

func checkProp(what string, p nodeProp, val any) error {
	t := jsonType(val)
	if t == "integer" && !slices.Contains(p.types, "integer") {
		t = "number" // an integer is a number; "integer" only where a schema asks for it
	}
	if !slices.Contains(p.types, t) {
		return schemaError(what, "%s is not of type %s", maskedRepr(val), pyrepr.QuoteAll(p.types))
	}
	if s, ok := val.(string); ok {
		n := len([]rune(s))
		if p.maxLen > 0 && n > p.maxLen {
			return schemaError(what, "%s is too long", maskedRepr(val))
		}
		if n < p.minLen {
			return schemaError(what, "%s is too short", maskedRepr(val))
		}
	}
	return nil
}

// runExtraChecks applies NODE_VALIDATE_EXTRA: boolean words become
// booleans, UUIDs are checked and put in canonical form.
func runExtraChecks(doc map[string]any, props []nodeProp) error {
	for _, name := range extraCheckOrder {
		val, ok := doc[name]
		if !ok || val == nil {
			continue
		}
		i := slices.IndexFunc(props, func(p nodeProp) bool { return p.name == name })
		if i < 0 {
			continue
		}
		switch props[i].check {
		case checkBool:
			b, err := argBool(name, val)
			if err != nil {
				return err
			}
			doc[name] = *b
		case checkUUID:
			s, _ := val.(string)
			if !isUUIDLike(s) {
				return invalid("Expected UUID for %s: %s", name, pyrepr.Str(val))
			}
			doc[name] = canonicalUUID(s)
		}
	}
	return nil
}

// fieldMinor is the version that introduced a node field (1 for the
// original ones).
func fieldMinor(name string) int {
	if f := nodeFieldIndex[name]; f != nil {
		return f.minor
	}
	return 1
}

// rejectNewerFields is Ironic's reject_fields_in_newer_versions for a
// create body: a field the request's version does not know must be absent
// or empty.
func rejectNewerFields(doc map[string]any, minor int) error {
	for k, v := range doc {
		if fieldMinor(k) <= minor {
			continue
		}
		switch {
		case k == "conductor_group" && (v == nil || v == ""):
		case v == nil:
		default:
			return notAcceptable()
		}
	}
	return nil
}

// nodeDoc is the patchable document of a node: every property of the patch
// schema with the node's real (unmasked) values, null for unset strings.
func nodeDoc(n *model.Node) map[string]any {
	bptr := func(b *bool) any {
		if b == nil {
			return nil
		}
		return *b
	}
	doc := map[string]any{
		"automated_clean": bptr(n.AutomatedClean), "boot_mode": nilIfEmpty(n.BootMode),
		"chassis_uuid": nilIfEmpty(n.ChassisUUID), "conductor_group": n.ConductorGroup,
		"console_enabled": n.ConsoleEnabled, "description": nilIfEmpty(n.Description),
		"disable_power_off": n.DisablePowerOff, "driver": n.Driver,
		"driver_info": orEmpty(n.DriverInfo), "extra": orEmpty(n.Extra),
		"instance_info": orEmpty(n.InstanceInfo), "instance_name": nilIfEmpty(n.InstanceName),
		"instance_uuid": nilIfEmpty(n.InstanceUUID), "lessee": nilIfEmpty(n.Lessee),
		"maintenance": n.Maintenance, "name": nilIfEmpty(n.Name), "network_data": orEmpty(n.NetworkData),
		"owner": nilIfEmpty(n.Owner), "parent_node": nilIfEmpty(n.ParentNode), "properties": orEmpty(n.Properties),
		"protected": n.Protected, "protected_reason": nilIfEmpty(n.ProtectedReason),
		"resource_class": nilIfEmpty(n.ResourceClass), "retired": n.Retired,
		"retired_reason": nilIfEmpty(n.RetiredReason), "secure_boot": bptr(n.SecureBoot),
		"shard": nilIfEmpty(n.Shard), "uuid": n.UUID,
	}
	for _, kind := range model.InterfaceNames {
		doc[kind+"_interface"] = nilIfEmpty(n.Interfaces.Get(kind))
	}
	return doc
}

// applyNodeDoc writes the properties present in a validated document into n.
func applyNodeDoc(n *model.Node, doc map[string]any) {
	for k, v := range doc {
		if kind, ok := strings.CutSuffix(k, "_interface"); ok {
			n.Interfaces.Set(kind, docString(v))
			continue
		}
		if p := nodeStringField(n, k); p != nil {
			*p = docString(v)
			continue
		}
		applyNodeOther(n, k, v)
	}
	n.ConductorGroup = strings.ToLower(n.ConductorGroup)
}

func applyNodeOther(n *model.Node, k string, v any) {
	switch k {
	case "automated_clean":
		n.AutomatedClean = docBoolPtr(v)
	case "secure_boot":
		n.SecureBoot = docBoolPtr(v)
	case "console_enabled":
		n.ConsoleEnabled = docBool(v)
	case "disable_power_off":
		n.DisablePowerOff = docBool(v)
	case "maintenance":
		n.Maintenance = docBool(v)
	case "protected":
		n.Protected = docBool(v)
	case "retired":
		n.Retired = docBool(v)
	case "driver_info":
		n.DriverInfo = docMap(v)
	case "extra":
		n.Extra = docMap(v)
	case "instance_info":
		n.InstanceInfo = docMap(v)
	case "properties":
		n.Properties = docMap(v)
	case "network_data":
		n.NetworkData = docMap(v)
	}
}

// nodeStringField points at the string field a document key sets.
func nodeStringField(n *model.Node, k string) *string {
	switch k {
	case "boot_mode":
		return &n.BootMode
	case "chassis_uuid":
		return &n.ChassisUUID
	case "conductor_group":
		return &n.ConductorGroup
	case "description":
		return &n.Description
	case "driver":
		return &n.Driver
	case "instance_name":
		return &n.InstanceName
	case "instance_uuid":
		return &n.InstanceUUID
	case "lessee":
		return &n.Lessee
	case "name":
		return &n.Name
	case "owner":
		return &n.Owner
	case "parent_node":
		return &n.ParentNode
	case "protected_reason":
		return &n.ProtectedReason
	case "resource_class":
		return &n.ResourceClass
	case "retired_reason":
		return &n.RetiredReason
	case "shard":
		return &n.Shard
	case "uuid":
		return &n.UUID
	}
	return nil
}

func docString(v any) string {
	s, _ := v.(string)
	return s
}

func docBool(v any) bool {
	b, _ := v.(bool)
	return b
}

func docBoolPtr(v any) *bool {
	b, ok := v.(bool)
	if !ok {
		return nil
	}
	return &b
}

func docMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
