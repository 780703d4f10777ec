package server

import (
	"net/http"
	"strings"

	"github.com/anvil-metal/anvil/internal/auth"
)

// Rules of resources that belong to no node: Ironic master's defaults
// for them need system scope (SYSTEM_READER: any role of a system-scoped
// principal; SYSTEM_ADMIN: its admin role), so a project-scoped principal
// is refused with the rule's name and a system member may read but not
// write. Only the resources listed here are checked this finely; any
// other route without a node needs system scope (policy.go).

// systemRules are Ironic's rule name → default check string.
var systemRules = map[string]string{
	"baremetal:inspection_rule:get":      "SYSTEM_READER",
	"baremetal:inspection_rule:list_all": "SYSTEM_READER",
	"baremetal:inspection_rule:create":   "SYSTEM_ADMIN",
	"baremetal:inspection_rule:update":   "SYSTEM_ADMIN",
	"baremetal:inspection_rule:delete":   "SYSTEM_ADMIN",
}

// systemRoutes map "METHOD /v1/resource[/{id}]" to the rules that guard
// them, in Ironic's order of checks.
var systemRoutes = map[string][]string{
	"GET /v1/inspection_rules":         {"baremetal:inspection_rule:get"},
	"GET /v1/inspection_rules/{id}":    {"baremetal:inspection_rule:get"},
	"POST /v1/inspection_rules":        {"baremetal:inspection_rule:create"},
	"PATCH /v1/inspection_rules/{id}":  {"baremetal:inspection_rule:update"},
	"DELETE /v1/inspection_rules":      {"baremetal:inspection_rule:delete"},
	"DELETE /v1/inspection_rules/{id}": {"baremetal:inspection_rule:delete"},
}

// systemRoute returns the rules of r's route ("" when not in systemRoutes).
func systemRoute(r *http.Request) []string {
	path := strings.TrimSuffix(strings.TrimRight(r.URL.Path, "/"), ".json")
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	m := r.Method
	if m == http.MethodHead {
		m = http.MethodGet
	}
	if len(seg) < 2 || len(seg) > 3 || seg[0] != "v1" {
		return nil
	}
	key := m + " /v1/" + seg[1]
	if len(seg) == 3 {
		key += "/{id}"
	}
	return systemRoutes[key]
}

// systemAllows reports whether a principal may act under rule: never a
// project-scoped one; an admin (or a principal without roles: http_basic)
// always; any other system-scoped principal for SYSTEM_READER rules.
func systemAllows(who auth.Principal, rule string) bool {
	if who.Scoped() {
		return false
	}
	return systemAdmin(who) || systemRules[rule] == "SYSTEM_READER"
}

// checkSystemRules refuses r when a rule of its route does not allow who.
func checkSystemRules(r *http.Request, who auth.Principal) (int, string) {
	for _, rule := range systemRoute(r) {
		if !systemAllows(who, rule) {
			return denied(rule)
		}
	}
	return 0, ""
}
