package server

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// policyDocSubjects are the columns of the generated rule matrix.
var policyDocSubjects = []struct {
	name string
	s    subject
}{
	{"owner reader", subject{owner: true, level: 1}}, {"owner member", subject{owner: true, level: 2}},
	{"owner admin", subject{owner: true, level: 3}}, {"lessee reader", subject{lessee: true, level: 1}},
	{"lessee member", subject{lessee: true, level: 2}}, {"lessee admin", subject{lessee: true, level: 3}},
}

// writePolicyDoc writes docs/policy.md from the tables: the rule matrix
// (each cell computed by the rule's check), the routes, the PATCH paths
// and the hidden fields.
func writePolicyDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Project policy\n\n" +
		"Generated from `internal/server/policyrules.go` by `go test ./internal/server -update`; do not edit.\n\n" +
		"What a project-scoped principal (a jwt token with a project claim) may do to a node its project\n" +
		"owns or leases, as Ironic 21.4's default policy (`ironic/common/policy.py`) says. Roles imply\n" +
		"the lesser ones (admin ⊇ member ⊇ reader). A node neither owned nor leased is answered 404;\n" +
		"a refused rule 403 with the rule's name. System-scoped principals (http_basic users, tokens\n" +
		"without a project) are not limited by this table, but for `baremetal:node:update_owner_provisioned`:\n" +
		"a system member's (not admin's) PATCH of an active node's owner is answered 409, as Ironic does.\n\n")
	b.WriteString("## Rules\n\n| rule | Ironic's default |")
	for _, c := range policyDocSubjects {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(policyDocSubjects)) + "\n")
	for _, rule := range slices.Sorted(maps.Keys(nodeRules)) {
		fmt.Fprintf(&b, "| `%s` | %s |", rule, nodeRules[rule])
		for _, c := range policyDocSubjects {
			mark := "·"
			if ok, _ := allows(rule, c.s); ok {
				mark = "✓"
			}
			b.WriteString(" " + mark + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Runbook rules\n\nIronic master's defaults (runbooks are newer than 21.4), for a runbook owned by the " +
		"principal's project (owner) or not (other). `role:manager` is the admin role (Keystone's admin implies manager). " +
		"A project lists its own and the public runbooks and may read a public one; a provision request naming a runbook " +
		"also needs `baremetal:runbook:use`.\n\n| rule | Ironic's default |")
	runbookCols := []struct {
		name string
		s    subject
	}{{"owner reader", subject{owner: true, level: 1}}, {"owner member", subject{owner: true, level: 2}},
		{"owner admin", subject{owner: true, level: 3}}, {"other reader", subject{level: 1}}, {"other admin", subject{level: 3}}}
	for _, c := range runbookCols {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(runbookCols)) + "\n")
	for _, rule := range slices.Sorted(maps.Keys(runbookRules)) {
		fmt.Fprintf(&b, "| `%s` | %s |", rule, runbookRules[rule])
		for _, c := range runbookCols {
			mark := "·"
			if allowed(rule, c.s) {
				mark = "✓"
			}
			b.WriteString(" " + mark + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Routes\n\nAny other GET under a visible node is `baremetal:node:get`; any other route needs system scope,\n" +
		"except the node lists, `/v1/fleet/*` and the event stream, narrowed to the project's nodes.\n\n| route | rule |\n|---|---|\n")
	for _, route := range slices.Sorted(maps.Keys(routeRules)) {
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", route, routeRules[route])
	}
	b.WriteString("\n## PATCH /v1/nodes/{node}\n\nEach operation needs the rule of its path (first matching prefix); " +
		"`/<interface>_interface` is `baremetal:node:update:driver_interfaces`; any other path `baremetal:node:update`.\n\n" +
		"| path prefix | rule |\n|---|---|\n")
	for _, p := range patchPaths {
		rule := "`" + p.rule + "`"
		if p.rule == "" {
			rule = "`baremetal:node:disable_cleaning` when set false, else `baremetal:node:update`"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", p.prefix, rule)
	}
	b.WriteString("\n## Fields shown as placeholders\n\nTo a principal that may see the node but fails the rule " +
		"(nodes, lists, `/v1/fleet/*`, stream events):\n\n| field | rule | shown instead |\n|---|---|---|\n")
	for _, h := range hiddenFields {
		shown, _ := json.Marshal(h.shown)
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` |\n", h.field, h.rule, shown)
	}
	b.WriteString("\n## Rules that need system scope\n\nResources of no node, as Ironic master's defaults (`internal/server/policysystem.go`):\n" +
		"a project-scoped principal is refused with the rule's name; `SYSTEM_READER` lets any role of a\n" +
		"system-scoped principal through, `SYSTEM_ADMIN` only its admin role (or an http_basic user).\n\n" +
		"| route | rule | Ironic's default |\n|---|---|---|\n")
	used := map[string]bool{}
	for _, route := range slices.Sorted(maps.Keys(systemRoutes)) {
		for _, rule := range systemRoutes[route] {
			used[rule] = true
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", route, rule, systemRules[rule])
		}
	}
	for _, rule := range slices.Sorted(maps.Keys(systemRules)) {
		if !used[rule] {
			fmt.Fprintf(&b, "| (defined by Ironic, checked by no route) | `%s` | %s |\n", rule, systemRules[rule])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
