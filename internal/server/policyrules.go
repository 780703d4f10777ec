package server

import (
	"strings"

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

// Ironic's check strings (project parts), by their names in policy.py.
var (
	projectOwnerAdmin  check = func(s subject) bool { return s.owner && s.level >= 3 }
	projectOwnerMember check = func(s subject) bool { return s.owner && s.level >= 2 }
	projectOwnerReader check = func(s subject) bool { return s.owner && s.level >= 1 }
	projectLesseeAdmin check = func(s subject) bool { return s.lessee && s.level >= 3 }
	projectMember      check = func(s subject) bool { return (s.owner || s.lessee) && s.level >= 2 }
	projectReader      check = func(s subject) bool { return (s.owner || s.lessee) && s.level >= 1 }
	systemOnly         check = func(subject) bool { return false } // SYSTEM_ADMIN, SYSTEM_MEMBER, SYSTEM_READER

	// SYSTEM_OR_PROJECT_READER and SYSTEM_OR_PROJECT_MEMBER.
	systemOrProjectReader = projectReader
	systemOrProjectMember = projectMember
	// SYSTEM_OR_OWNER_READER, SYSTEM_MEMBER_OR_OWNER_MEMBER,
	// SYSTEM_MEMBER_OR_OWNER_ADMIN, SYSTEM_ADMIN_OR_OWNER_ADMIN.
	systemOrOwnerReader       = projectOwnerReader
	systemMemberOrOwnerMember = projectOwnerMember
	systemMemberOrOwnerAdmin  = projectOwnerAdmin
	systemAdminOrOwnerAdmin   = projectOwnerAdmin
	// SYSTEM_OR_OWNER_MEMBER_AND_LESSEE_ADMIN: "general operations like
	// changing provision state".
	systemOrOwnerMemberAndLesseeAdmin check = func(s subject) bool {
		return projectOwnerMember(s) || projectLesseeAdmin(s)
	}
)

// nodeRules are the node and port rules: Ironic's name → its default.
var nodeRules = map[string]check{
	"baremetal:node:get":                      systemOrProjectReader,
	"baremetal:node:get:last_error":           systemOrOwnerReader,
	"baremetal:node:get:reservation":          systemOrOwnerReader,
	"baremetal:node:get:driver_internal_info": systemOrOwnerReader,
	"baremetal:node:get:driver_info":          systemOrOwnerReader,
	"baremetal:node:get_states":               systemOrProjectReader,
	"baremetal:node:get_boot_device":          systemMemberOrOwnerAdmin,
	"baremetal:node:history:get":              systemOrOwnerReader,
	"baremetal:node:inventory:get":            systemOrOwnerReader,
	"baremetal:node:vif:list":                 systemOrProjectReader,
	"baremetal:node:traits:list":              systemOrProjectReader,
	"baremetal:node:bios:get":                 systemOrProjectReader,
	"baremetal:node:get_indicator_state":      systemOrProjectReader,
	"baremetal:node:validate":                 systemOrOwnerMemberAndLesseeAdmin,

	"baremetal:node:update":                   systemOrProjectMember,
	"baremetal:node:update_extra":             systemOrProjectMember,
	"baremetal:node:update_instance_info":     systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:update_owner_provisioned": systemOnly,
	"baremetal:node:update:driver_info":       systemMemberOrOwnerMember,
	"baremetal:node:update:properties":        systemMemberOrOwnerMember,
	"baremetal:node:update:chassis_uuid":      systemOnly,
	"baremetal:node:update:instance_uuid":     systemMemberOrOwnerMember,
	"baremetal:node:update:lessee":            systemMemberOrOwnerMember,
	"baremetal:node:update:owner":             systemOnly,
	"baremetal:node:update:driver_interfaces": systemMemberOrOwnerAdmin,
	"baremetal:node:update:network_data":      systemMemberOrOwnerMember,
	"baremetal:node:update:conductor_group":   systemOnly,
	"baremetal:node:update:name":              systemMemberOrOwnerMember,
	"baremetal:node:update:retired":           systemMemberOrOwnerMember,
	"baremetal:node:update:shard":             systemOnly,
	"baremetal:node:disable_cleaning":         systemOnly,
	"baremetal:node:delete":                   systemOnly,
	"baremetal:node:set_maintenance":          systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:clear_maintenance":        systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:set_boot_device":          systemMemberOrOwnerAdmin,
	"baremetal:node:set_power_state":          systemOrProjectMember,
	"baremetal:node:set_provision_state":      systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:set_indicator_state":      systemMemberOrOwnerMember,
	"baremetal:node:inject_nmi":               systemMemberOrOwnerAdmin,
	"baremetal:node:set_boot_mode":            systemOrProjectMember,
	"baremetal:node:set_secure_boot":          systemOrProjectMember,
	"baremetal:node:set_raid_state":           systemMemberOrOwnerMember,
	"baremetal:node:set_console_state":        systemMemberOrOwnerMember,
	"baremetal:node:get_console":              systemMemberOrOwnerMember,
	"baremetal:node:vif:attach":               systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:vif:detach":               systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:traits:set":               systemMemberOrOwnerAdmin,
	"baremetal:node:traits:delete":            systemMemberOrOwnerAdmin,
	"baremetal:node:vmedia:attach":            systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:node:vmedia:detach":            systemOrOwnerMemberAndLesseeAdmin,
	"baremetal:port:get":                      systemOrProjectReader,
	"baremetal:port:list":                     systemOrProjectReader,
	"baremetal:port:create":                   systemAdminOrOwnerAdmin,
	"baremetal:port:update":                   systemMemberOrOwnerAdmin,
	"baremetal:port:delete":                   systemAdminOrOwnerAdmin,
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
}

// redactor returns what who is shown instead of field of n, if it may not
// see it (api.Redactor).
func redactor(who auth.Principal) func(n *model.Node, field string) (any, bool) {
	return func(n *model.Node, field string) (any, bool) {
		s := subjectOf(who, n)
		for _, h := range hiddenFields {
			if h.field == field && !nodeRules[h.rule](s) {
				return h.shown, true
			}
		}
		return nil, false
	}
}
