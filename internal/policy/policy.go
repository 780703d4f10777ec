package policy

import (
	"fmt"
	"maps"
	"slices"

	"github.com/anvil-metal/anvil/internal/auth"
)

// anvilRules are Anvil's rules for what Ironic has no rule for.
var anvilRules = map[string]string{
	// The Prometheus metrics: fleet-wide counts, for system readers.
	"anvil:metrics:get": "rule:baremetal:conductor:get",
}

// ServiceProject is the project name Ironic's rule:service_role matches
// ([DEFAULT]service_project_name... Ironic's default "service").
const ServiceProject = "service"

// Enforcer holds parsed rules.
type Enforcer struct {
	rules map[string]expr
	src   map[string]string
}

// New parses Ironic's defaults, Anvil's rules and then overrides (name →
// check string); a check string that does not parse is an error.
func New(overrides map[string]string) (*Enforcer, error) {
	e := &Enforcer{rules: map[string]expr{}, src: map[string]string{}}
	for _, m := range []map[string]string{ironicDefaults, anvilRules, overrides} {
		for name, s := range m {
			x, err := parse(s)
			if err != nil {
				return nil, fmt.Errorf("policy rule %s: %w", name, err)
			}
			e.rules[name], e.src[name] = x, s
		}
	}
	return e, nil
}

// Default returns the enforcer of the default rules.
func Default() *Enforcer {
	e, err := New(nil)
	if err != nil {
		panic(err) // the defaults are code: TestDefaultsParse
	}
	return e
}

// Allowed reports whether c may act under rule on t. An unknown rule
// allows nothing.
func (e *Enforcer) Allowed(c Creds, rule string, t Target) bool {
	x := e.rules[rule]
	if x == nil {
		return false
	}
	full := Target{"config.service_project_name": ServiceProject}
	maps.Copy(full, t)
	return x.eval(e, c, full, 0)
}

// Known reports whether rule is defined.
func (e *Enforcer) Known(rule string) bool { return e.rules[rule] != nil }

// CheckString is rule's check string as written.
func (e *Enforcer) CheckString(rule string) string { return e.src[rule] }

// Rules are the names of every rule, sorted.
func (e *Enforcer) Rules() []string { return slices.Sorted(maps.Keys(e.rules)) }

// CredsOf are who's credentials: a token's roles (with the implied ones)
// and project; a principal without roles (an http_basic user) is a
// system administrator, as Anvil has always treated it.
func CredsOf(who auth.Principal) Creds {
	c := Creds{Roles: Expand(who.Roles), ProjectID: who.Project}
	if len(who.Roles) == 0 {
		c.Roles = Expand([]string{"admin"})
	}
	if who.Project == "" {
		c.SystemScope = "all"
	}
	return c
}

// NodeTarget is the target of a node's rules.
func NodeTarget(owner, lessee string) Target {
	return Target{"node.owner": owner, "node.lessee": lessee}
}

// RecordRules are the default rules of a record kind on the generic
// record table ("baremetal:<kind>:<verb>", target "<kind>.owner"), as
// Ironic's runbook rules: system members and project managers create; a
// project's managers change and delete its own, its readers read them;
// system readers list all; only a system member changes an owner.
func RecordRules(kind string) map[string]string {
	p := "baremetal:" + kind + ":"
	own := "project_id:%(" + kind + ".owner)s"
	admin := "((role:member and system_scope:all) or rule:service_role)"
	return map[string]string{
		p + "create":       admin + " or role:manager or role:service",
		p + "get":          "((role:reader and system_scope:all) or (role:service and system_scope:all) or rule:service_role) or (role:reader and " + own + ") or role:service",
		p + "list":         "(role:reader) or (role:service)",
		p + "list_all":     "(role:reader and system_scope:all) or (role:service and system_scope:all) or rule:service_role",
		p + "update":       admin + " or (role:manager and " + own + ") or role:service",
		p + "update:owner": "(role:member and system_scope:all) or rule:service_role",
		p + "delete":       admin + " or (role:manager and " + own + ") or role:service",
	}
}

// With is a copy of e that also has defaults' rules, each unless e has a
// rule of that name already (an operator's override stays).
func (e *Enforcer) With(defaults map[string]string) (*Enforcer, error) {
	out := &Enforcer{rules: maps.Clone(e.rules), src: maps.Clone(e.src)}
	for name, s := range defaults {
		if out.rules[name] != nil {
			continue
		}
		x, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("policy rule %s: %w", name, err)
		}
		out.rules[name], out.src[name] = x, s
	}
	return out, nil
}
