package api

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/policy"
)

// policyDocPrincipals are the columns of the generated rule matrix: who
// each is, on a node owned by "own" and leased to "lea".
var policyDocPrincipals = []struct {
	name string
	who  auth.Principal
}{
	{"system admin", auth.Principal{Roles: []string{"admin"}}},
	{"system member", auth.Principal{Roles: []string{"member"}}},
	{"system reader", auth.Principal{Roles: []string{"reader"}}},
	{"owner admin", auth.Principal{Project: "own", Roles: []string{"admin"}}},
	{"owner manager", auth.Principal{Project: "own", Roles: []string{"manager"}}},
	{"owner member", auth.Principal{Project: "own", Roles: []string{"member"}}},
	{"owner reader", auth.Principal{Project: "own", Roles: []string{"reader"}}},
	{"owner service", auth.Principal{Project: "own", Roles: []string{"service"}}},
	{"lessee admin", auth.Principal{Project: "lea", Roles: []string{"admin"}}},
	{"lessee member", auth.Principal{Project: "lea", Roles: []string{"member"}}},
	{"lessee reader", auth.Principal{Project: "lea", Roles: []string{"reader"}}},
}

// WritePolicyDoc writes docs/policy.md from the route table and the
// rules: every route's rules, and who each rule allows.
func (s *Server) WritePolicyDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Authorization policy\n\n" +
		"Generated from the API's route table (`internal/api`, each route's guard) and the rules of\n" +
		"`internal/policy` by `go test ./internal/api -run TestGoldenPolicyDoc -update`; do not edit.\n\n" +
		"Every route of the API carries the Ironic policy rules that guard it. The API checks them after\n" +
		"it has parsed the request the one way it parses it (version-aware identifiers, the `.json`\n" +
		"suffix, unversioned paths) and loaded the target once: a node, a port's or volume record's\n" +
		"node, a runbook. Rules are Ironic master's defaults (`ironic/common/policy.py`, generated into\n" +
		"`internal/policy/defaults.go`), oslo.policy check strings evaluated for the principal's roles\n" +
		"(Keystone's implied roles: admin ⊇ manager ⊇ member ⊇ reader; `service` implies none), its\n" +
		"project and scope. http_basic users are system administrators; under noauth every rule passes.\n\n" +
		"A node a project may not see (`baremetal:node:get`) is answered 404 as if absent; a refused rule\n" +
		"403 naming it. Lists of nodes (and the fleet views, the event stream, runbooks) show a project\n" +
		"its own (owner or lessee) unless it may list all; asking for another project's is `list_all`'s\n" +
		"403. A PATCH needs the rule of each field it touches (below). A project-scoped principal may\n" +
		"not name a local file (`file://` or a path) as a kernel, ramdisk, ISO or image.\n\n")
	b.WriteString("## Routes\n\n| method | path | rules | checked against |\n|---|---|---|---|\n")
	for _, r := range s.routes {
		target := r.Target
		if r.SystemOnly {
			target += "; system scope only"
		}
		rules := "public (the agent token guards the agent's routes)"
		if len(r.Rules) > 0 {
			rules = "`" + strings.Join(r.Rules, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", r.Method, r.Pattern, rules, target)
	}
	b.WriteString("\n## Node PATCH fields\n\n| field | rule |\n|---|---|\n")
	for _, f := range slices.SortedFunc(slices.Values(nodeFields.fields), byFieldName) {
		if f.rule != "" && !strings.HasSuffix(f.name, "_interface") {
			fmt.Fprintf(&b, "| `%s` | `%s` |\n", f.name, f.rule)
		}
	}
	b.WriteString("| `<kind>_interface` | `baremetal:node:update:driver_interfaces` |\n" +
		"| `automated_clean` set false | `baremetal:node:disable_cleaning` |\n" +
		"| any other | `baremetal:node:update` |\n")
	b.WriteString("\n## Hidden fields\n\nShown as Ironic's placeholder to a principal the rule refuses:\n\n| field | rule |\n|---|---|\n")
	for _, h := range hiddenFields {
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", h.field, h.rule)
	}
	b.WriteString("\n## Rules\n\nWho each rule allows on a node owned by project `own` and leased to `lea`:\n\n| rule |")
	for _, c := range policyDocPrincipals {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(policyDocPrincipals)) + "\n")
	target := policy.NodeTarget("own", "lea")
	for _, rule := range s.enforcer.Rules() {
		if !strings.HasPrefix(rule, "baremetal:") && !strings.HasPrefix(rule, "anvil:") {
			continue
		}
		fmt.Fprintf(&b, "| `%s` |", rule)
		for _, c := range policyDocPrincipals {
			mark := "·"
			if s.enforcer.Allowed(policy.CredsOf(c.who), rule, target) {
				mark = "✓"
			}
			b.WriteString(" " + mark + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Check strings\n\n| rule | check string |\n|---|---|\n")
	for _, rule := range s.enforcer.Rules() {
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", rule, s.enforcer.CheckString(rule))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func byFieldName(a, b nodeField) int { return strings.Compare(a.name, b.name) }
