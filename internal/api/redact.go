package api

import (
	"context"

	"github.com/anvil-metal/anvil/internal/model"
)

// Redactor hides node fields from one request: for field of node n it
// returns the value shown instead and true when the request's principal
// may not see the field (Ironic's node_sanitize for non-owners). The API
// knows no principal: the policy in front of it sets the Redactor on the
// request's context with WithRedactor; without one every field is shown
// (secrets are masked for everyone regardless).
type Redactor func(n *model.Node, field string) (shown any, hidden bool)

// TargetPropertiesField is the field a volume target's properties are
// asked under (Ironic's baremetal:volume:view_target_properties); the node
// given then has only its UUID set, the rule being about the principal.
const TargetPropertiesField = "volume_target.properties"

type redactorKey struct{}

// WithRedactor returns ctx carrying r for the API's node renderings and
// the watch stream.
func WithRedactor(ctx context.Context, r Redactor) context.Context {
	return context.WithValue(ctx, redactorKey{}, r)
}

func redactorOf(ctx context.Context) Redactor {
	r, _ := ctx.Value(redactorKey{}).(Redactor)
	return r
}
