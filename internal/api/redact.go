package api

import (
	"github.com/anvil-metal/anvil/internal/model"
)

// Redactor hides node fields from one request: for field of node n it
// returns the value shown instead and true when the request's principal
// may not see the field (Ironic's node_sanitize for non-owners). The
// route's guard sets it for a project-scoped principal (authz.go); without
// one every field is shown (secrets are masked for everyone regardless).
type Redactor func(n *model.Node, field string) (shown any, hidden bool)

// TargetPropertiesField is the field a volume target's properties are
// asked under (Ironic's baremetal:volume:view_target_properties); the node
// given then has only its UUID set, the rule being about the principal.
const TargetPropertiesField = "volume_target.properties"

// hidden is what the request's principal is shown instead of field of n,
// if it may not see it.
func (rc *call) hidden(n *model.Node, field string) (any, bool) {
	if rc.redact == nil {
		return nil, false
	}
	return rc.redact(n, field)
}
