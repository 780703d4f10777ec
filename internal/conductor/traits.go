package conductor

import (
	"context"
	"slices"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// MaxTraitsPerNode is Ironic's limit on a node's traits
// (db.sqlalchemy.api.MAX_TRAITS_PER_NODE).
const MaxTraitsPerNode = 50

// SetTraits changes a node's traits under its lock, in any state (as
// Ironic's add_node_traits and remove_node_traits: no state check). change
// gets the current traits and returns the new ones; they are stored sorted
// and without duplicates. Errors: fault NotFound (node), Conflict (locked),
// Invalid when the result would exceed MaxTraitsPerNode, and whatever
// change returns.
func (svc *Nodes) SetTraits(ctx context.Context, ident string, change func(cur []string) ([]string, error)) (*model.Node, error) {
	c := svc.c
	t, err := c.acquireNode(ctx, ident, "", false)
	if err != nil {
		return nil, err
	}
	defer t.release()
	n, err := clone(t.node)
	if err != nil {
		return nil, err
	}
	traits, err := change(slices.Clone(n.Traits))
	if err != nil {
		return nil, err
	}
	slices.Sort(traits)
	traits = slices.Compact(traits)
	if len(traits) > MaxTraitsPerNode {
		return nil, fault.New(fault.Invalid, "Could not modify traits for node %d as it would exceed the maximum number of traits per node (%d vs. %d)",
			n.ID, len(traits), MaxTraitsPerNode)
	}
	if len(traits) == 0 {
		traits = nil
	}
	n.Traits = traits
	if err := c.store.Nodes().UpdateNode(ctx, n); err != nil {
		return nil, duplicate(err)
	}
	return n, nil
}
