// Package policy decides authorization as Ironic's oslo.policy does: a
// table of named rules, each an oslo.policy check string ("role:admin and
// system_scope:all", "project_id:%(node.owner)s", "rule:service_role",
// and/or/not, parentheses, "@" and "!"), evaluated for one principal's
// credentials against one target (the node's owner and lessee, a
// runbook's or allocation's owner).
//
// The defaults are Ironic master's (defaults.go, generated from
// ironic/common/policy.py by scripts/gen-policy.sh) plus Anvil's own rules
// (anvil.go). Allowed is a pure function: no I/O, no clock, no globals
// that change; the API (internal/api) resolves the target the one way it
// parses the request and asks here.
//
// Invariants:
//   - an unknown rule allows nothing (Known tells it apart);
//   - a credential or target value that is empty never matches (a
//     principal without a project is no node's owner, and an unowned node
//     belongs to no project);
//   - roles imply the lesser ones as Keystone's defaults do (admin ⊇
//     manager ⊇ member ⊇ reader); service implies none.
package policy
