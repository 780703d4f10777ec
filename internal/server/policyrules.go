package server

import (
	"strings"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/model"
)

// The project policy's rules: Ironic 21.4's default policy
// (ironic/common/policy.py) for project-scoped principals, as data. Each
// rule is Ironic's policy name with its default check string; each check
// string is a function of the principal's relation to one node. The
// tables below say which rule guards which route, which PATCH path and
// which field a principal may see; policy.go applies them.

// subject is a project principal's relation to one node, as Ironic's check
// strings see it. Roles imply the lesser ones (admin ⊇ member ⊇ reader),
// as Keystone's default implied roles do.
type subject struct {
	owner, lessee bool // the principal's project owns / leases the node
	level         int  // 3 admin, 2 member, 1 reader, 0 none
}

// subjectOf relates who to n.
func subjectOf(who auth.Principal, n *model.Node) subject {
	s := subject{owner: n.Owner != "" && n.Owner == who.Project,
		lessee: n.Lessee != "" && n.Lessee == who.Project}
	switch {
	case who.HasRole(auth.RoleAdmin):
		s.level = 3
	case who.HasRole(auth.RoleMember):
		s.level = 2
	case who.HasRole(auth.RoleReader):
		s.level = 1
	}
	return s
}

// check is one of Ironic's check strings, reduced to project scope (the
// SYSTEM_* and service parts never match a project-scoped principal).
type check func(subject) bool

// checks are Ironic's check strings (their project parts) by their names
// in policy.py.
var checks = map[string]check{
	// Never a project's.
	"SYSTEM_ADMIN":  func(subject) bool { return false },
	"SYSTEM_MEMBER": func(subject) bool { return false },
	"SYSTEM_READER": func(subject) bool { return false },
	// "(role:reader) or (role:service)": any project's reader (runbook
	// lists; volume records, whose node is checked besides, first).
	"API_READER": func(s subject) bool { return s.level >= 1 },
	// The runbook composites (owner: the runbook's owner is the project;
	// role:manager is Anvil's admin, see runbookRules).
	"RUNBOOK_READER":  func(s subject) bool { return s.owner && s.level >= 1 },
	"RUNBOOK_ADMIN":   func(s subject) bool { return s.owner && s.level >= 3 },
	"RUNBOOK_CREATOR": func(s subject) bool { return s.level >= 3 },
	// The composites of policy.py, by name.
	"SYSTEM_OR_PROJECT_READER":      func(s subject) bool { return (s.owner || s.lessee) && s.level >= 1 },
	"SYSTEM_OR_PROJECT_MEMBER":      func(s subject) bool { return (s.owner || s.lessee) && s.level >= 2 },
	"SYSTEM_OR_OWNER_READER":        func(s subject) bool { return s.owner && s.level >= 1 },
	"SYSTEM_MEMBER_OR_OWNER_MEMBER": func(s subject) bool { return s.owner && s.level >= 2 },
	"SYSTEM_MEMBER_OR_OWNER_ADMIN":  func(s subject) bool { return s.owner && s.level >= 3 },
	"SYSTEM_ADMIN_OR_OWNER_ADMIN":   func(s subject) bool { return s.owner && s.level >= 3 },
	// "Used for general operations like changing provision state."
	"SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN": func(s subject) bool {
		return s.owner && s.level >= 2 || s.lessee && s.level >= 3
	},
	// Volume connectors and targets.
	"SYSTEM_MEMBER_OR_OWNER_LESSEE_ADMIN": func(s subject) bool { return (s.owner || s.lessee) && s.level >= 3 },
	// "(SYSTEM_READER) or (role:admin)": any admin.
	"TARGET_PROPERTIES_READER": func(s subject) bool { return s.level >= 3 },
}

// allows reports whether rule lets s act; known is false for a rule in
// neither nodeRules nor runbookRules.
func allows(rule string, s subject) (ok, known bool) {
	name, isNode := nodeRules[rule]
	if !isNode {
		name = runbookRules[rule]
	}
	c := checks[name]
	if c == nil {
		return false, false
	}
	return c(s), true
}

// allowed is allows without known (an unknown rule allows nothing).
func allowed(rule string, s subject) bool {
	ok, _ := allows(rule, s)
	return ok
}

// nodeRules are the node and port rules: Ironic's name → the name of its
// default check string.
var nodeRules = map[string]string{
	"baremetal:node:get":                      "SYSTEM_OR_PROJECT_READER",
	"baremetal:node:get:last_error":           "SYSTEM_OR_OWNER_READER",
	"baremetal:node:get:reservation":          "SYSTEM_OR_OWNER_READER",
	"baremetal:node:get:driver_internal_info": "SYSTEM_OR_OWNER_READER",
	"baremetal:node:get:driver_info":          "SYSTEM_OR_OWNER_READER",
	"baremetal:node:get_states":               "SYSTEM_OR_PROJECT_READER",
	"baremetal:node:get_boot_device":          "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:node:history:get":              "SYSTEM_OR_OWNER_READER",
	"baremetal:node:inventory:get":            "SYSTEM_OR_OWNER_READER",
	"baremetal:node:vif:list":                 "SYSTEM_OR_PROJECT_READER",
	"baremetal:node:traits:list":              "SYSTEM_OR_PROJECT_READER",
	"baremetal:node:bios:get":                 "SYSTEM_OR_PROJECT_READER",
	"baremetal:node:get_indicator_state":      "SYSTEM_OR_PROJECT_READER",
	"baremetal:node:validate":                 "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",

	"baremetal:node:update":                   "SYSTEM_OR_PROJECT_MEMBER",
	"baremetal:node:update_extra":             "SYSTEM_OR_PROJECT_MEMBER",
	"baremetal:node:update_instance_info":     "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:update_owner_provisioned": "SYSTEM_ADMIN",
	"baremetal:node:update:driver_info":       "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:properties":        "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:chassis_uuid":      "SYSTEM_ADMIN",
	"baremetal:node:update:instance_uuid":     "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:lessee":            "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:owner":             "SYSTEM_MEMBER",
	"baremetal:node:update:driver_interfaces": "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:node:update:network_data":      "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:conductor_group":   "SYSTEM_MEMBER",
	"baremetal:node:update:name":              "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:retired":           "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:update:shard":             "SYSTEM_ADMIN",
	"baremetal:node:disable_cleaning":         "SYSTEM_ADMIN",
	"baremetal:node:delete":                   "SYSTEM_ADMIN",
	"baremetal:node:set_maintenance":          "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:clear_maintenance":        "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:set_boot_device":          "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:node:set_power_state":          "SYSTEM_OR_PROJECT_MEMBER",
	"baremetal:node:set_provision_state":      "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:set_indicator_state":      "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:inject_nmi":               "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:node:vendor_passthru":          "SYSTEM_ADMIN",
	"baremetal:node:set_boot_mode":            "SYSTEM_OR_PROJECT_MEMBER",
	"baremetal:node:set_secure_boot":          "SYSTEM_OR_PROJECT_MEMBER",
	"baremetal:node:set_raid_state":           "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:set_console_state":        "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:get_console":              "SYSTEM_MEMBER_OR_OWNER_MEMBER",
	"baremetal:node:vif:attach":               "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:vif:detach":               "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:traits:set":               "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:node:traits:delete":            "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:node:vmedia:attach":            "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:node:vmedia:detach":            "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:volume:get":                    "SYSTEM_OR_PROJECT_READER",
	"baremetal:volume:list":                   "API_READER",
	"baremetal:volume:create":                 "SYSTEM_MEMBER_OR_OWNER_LESSEE_ADMIN",
	"baremetal:volume:update":                 "SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN",
	"baremetal:volume:delete":                 "SYSTEM_MEMBER_OR_OWNER_LESSEE_ADMIN",
	"baremetal:volume:view_target_properties": "TARGET_PROPERTIES_READER",
	"baremetal:port:get":                      "SYSTEM_OR_PROJECT_READER",
	"baremetal:port:list":                     "SYSTEM_OR_PROJECT_READER",
	"baremetal:port:create":                   "SYSTEM_ADMIN_OR_OWNER_ADMIN",
	"baremetal:port:update":                   "SYSTEM_MEMBER_OR_OWNER_ADMIN",
	"baremetal:port:delete":                   "SYSTEM_ADMIN_OR_OWNER_ADMIN",
}

// routeRules maps "METHOD /v1/nodes/{node}/..." (one VIF or trait as {id})
// and the port routes to the rule that guards them. A route a project
// principal may use on a visible node is here; any other needs system
// scope. PATCH /v1/nodes/{node} is guarded per path (patchPaths).
var routeRules = map[string]string{
	"GET /v1/nodes/{node}":                                  "baremetal:node:get",
	"GET /v1/nodes/{node}/states":                           "baremetal:node:get_states",
	"GET /v1/nodes/{node}/validate":                         "baremetal:node:validate",
	"GET /v1/nodes/validate":                                "baremetal:node:validate",
	"GET /v1/nodes/{node}/management/boot_device":           "baremetal:node:get_boot_device",
	"GET /v1/nodes/{node}/management/boot_device/supported": "baremetal:node:get_boot_device",
	"GET /v1/nodes/{node}/history":                          "baremetal:node:history:get",
	"GET /v1/nodes/{node}/inventory":                        "baremetal:node:inventory:get",
	"GET /v1/nodes/{node}/vifs":                             "baremetal:node:vif:list",
	"GET /v1/nodes/{node}/traits":                           "baremetal:node:traits:list",
	"GET /v1/nodes/{node}/bios":                             "baremetal:node:bios:get",
	"GET /v1/nodes/{node}/ports":                            "baremetal:port:list",
	"GET /v1/nodes/{node}/volume/connectors":                "baremetal:volume:list",
	"GET /v1/nodes/{node}/volume/targets":                   "baremetal:volume:list",
	"GET /v1/volume/connectors":                             "baremetal:volume:list",
	"GET /v1/volume/targets":                                "baremetal:volume:list",
	"POST /v1/volume/connectors":                            "baremetal:volume:create",
	"POST /v1/volume/targets":                               "baremetal:volume:create",
	"GET /v1/volume/connectors/{id}":                        "baremetal:volume:get",
	"GET /v1/volume/targets/{id}":                           "baremetal:volume:get",
	"PATCH /v1/volume/connectors/{id}":                      "baremetal:volume:update",
	"PATCH /v1/volume/targets/{id}":                         "baremetal:volume:update",
	"DELETE /v1/volume/connectors/{id}":                     "baremetal:volume:delete",
	"DELETE /v1/volume/targets/{id}":                        "baremetal:volume:delete",
	"GET /v1/nodes/{node}/ports/detail":                     "baremetal:port:list",
	"GET /v1/nodes/{node}/vmedia":                           "baremetal:node:get",
	"DELETE /v1/nodes/{node}":                               "baremetal:node:delete",
	"PUT /v1/nodes/{node}/states/provision":                 "baremetal:node:set_provision_state",
	"PUT /v1/nodes/{node}/states/power":                     "baremetal:node:set_power_state",
	"PUT /v1/nodes/{node}/states/boot_mode":                 "baremetal:node:set_boot_mode",
	"PUT /v1/nodes/{node}/states/secure_boot":               "baremetal:node:set_secure_boot",
	"PUT /v1/nodes/{node}/states/raid":                      "baremetal:node:set_raid_state",
	"PUT /v1/nodes/{node}/states/console":                   "baremetal:node:set_console_state",
	"PUT /v1/nodes/{node}/maintenance":                      "baremetal:node:set_maintenance",
	"DELETE /v1/nodes/{node}/maintenance":                   "baremetal:node:clear_maintenance",
	"PUT /v1/nodes/{node}/management/boot_device":           "baremetal:node:set_boot_device",
	"PUT /v1/nodes/{node}/management/inject_nmi":            "baremetal:node:inject_nmi",
	"POST /v1/nodes/{node}/vifs":                            "baremetal:node:vif:attach",
	"DELETE /v1/nodes/{node}/vifs/{id}":                     "baremetal:node:vif:detach",
	"PUT /v1/nodes/{node}/traits":                           "baremetal:node:traits:set",
	"PUT /v1/nodes/{node}/traits/{id}":                      "baremetal:node:traits:set",
	"DELETE /v1/nodes/{node}/traits":                        "baremetal:node:traits:delete",
	"DELETE /v1/nodes/{node}/traits/{id}":                   "baremetal:node:traits:delete",
	"POST /v1/nodes/{node}/vmedia":                          "baremetal:node:vmedia:attach",
	"DELETE /v1/nodes/{node}/vmedia":                        "baremetal:node:vmedia:detach",
	"GET /v1/ports/{port}":                                  "baremetal:port:get",
	"PATCH /v1/ports/{port}":                                "baremetal:port:update",
	"DELETE /v1/ports/{port}":                               "baremetal:port:delete",
	"POST /v1/ports":                                        "baremetal:port:create",
	"GET /v1/ports":                                         "baremetal:port:list",
}

// patchPaths are the rules of a node PATCH by the path an operation
// touches, first matching prefix wins, in Ironic's order
// (NodesController._authorize_patch_and_get_node). A path none matches
// falls under baremetal:node:update, as does a PATCH of no operation.
var patchPaths = []struct{ prefix, rule string }{
	{"/instance_info", "baremetal:node:update_instance_info"},
	{"/extra", "baremetal:node:update_extra"},
	{"/automated_clean", ""}, // disable_cleaning when set false, else update: see patchRule
	{"/driver_info", "baremetal:node:update:driver_info"},
	{"/properties", "baremetal:node:update:properties"},
	{"/chassis_uuid", "baremetal:node:update:chassis_uuid"},
	{"/instance_uuid", "baremetal:node:update:instance_uuid"},
	{"/lessee", "baremetal:node:update:lessee"},
	{"/owner", "baremetal:node:update:owner"},
	{"/driver", "baremetal:node:update:driver_interfaces"},
	{"/network_data", "baremetal:node:update:network_data"},
	{"/conductor_group", "baremetal:node:update:conductor_group"},
	{"/name", "baremetal:node:update:name"},
	{"/retired", "baremetal:node:update:retired"},
	{"/shard", "baremetal:node:update:shard"},
	{"/maintenance_reason", "baremetal:node:set_maintenance"},
	{"/maintenance", "baremetal:node:set_maintenance"},
}

// driverInterfaces are Ironic's ALL_INTERFACES: PATCHing "/<kind>_interface"
// is baremetal:node:update:driver_interfaces.
var driverInterfaces = []string{"bios", "boot", "console", "deploy", "firmware", "inspect",
	"management", "network", "power", "raid", "rescue", "storage", "vendor"}

// patchRule is the rule of one PATCH operation on path with value.
func patchRule(path string, value any) string {
	for _, r := range patchPaths {
		if !strings.HasPrefix(path, r.prefix) {
			continue
		}
		if r.prefix == "/automated_clean" {
			if b, ok := boolValue(value); ok && !b {
				return "baremetal:node:disable_cleaning"
			}
			return "baremetal:node:update"
		}
		return r.rule
	}
	if kind, ok := strings.CutSuffix(strings.TrimPrefix(path, "/"), "_interface"); ok {
		for _, k := range driverInterfaces {
			if k == kind {
				return "baremetal:node:update:driver_interfaces"
			}
		}
	}
	return "baremetal:node:update"
}

// boolValue reads a JSON value as Ironic's bool_from_string does; ok is
// false for anything that is not a boolean.
func boolValue(v any) (b, ok bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "t", "true", "on", "y", "yes":
			return true, true
		case "0", "f", "false", "off", "n", "no":
			return false, true
		}
	}
	return false, false
}

// hiddenFields are the node fields a principal who may see the node but
// not the field is shown a placeholder for (Ironic's node_sanitize, under
// baremetal:node:get:filter_threshold): by default a lessee sees none of
// them, an owner all.
var hiddenFields = []struct {
	field, rule string
	shown       any
}{
	{"driver_info", "baremetal:node:get:driver_info",
		map[string]any{"content": "** Redacted - requires baremetal:node:get:driver_info permission. **"}},
	{"last_error", "baremetal:node:get:last_error",
		"** Value Redacted - Requires baremetal:node:get:last_error permission. **"},
	{"reservation", "baremetal:node:get:reservation",
		"** Redacted - requires baremetal:node:get:reservation permission. **"},
	{"driver_internal_info", "baremetal:node:get:driver_internal_info",
		map[string]any{"content": "** Redacted - Requires baremetal:node:get:driver_internal_info permission. **"}},
	// Not a node field: a volume target's properties (its node's subject).
	{api.TargetPropertiesField, "baremetal:volume:view_target_properties",
		map[string]any{"redacted_contents": "** Value redacted: Requires permission baremetal:volume:view_target_properties access. Permission denied. **"}},
}

// redactor returns what who is shown instead of field of n, if it may not
// see it (api.Redactor).
func redactor(who auth.Principal) func(n *model.Node, field string) (any, bool) {
	return func(n *model.Node, field string) (any, bool) {
		s := subjectOf(who, n)
		for _, h := range hiddenFields {
			if ok, _ := allows(h.rule, s); h.field == field && !ok {
				return h.shown, true
			}
		}
		return nil, false
	}
}
