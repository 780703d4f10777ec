package sqlstore

import (
	"context"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// allocationTable is the allocations table; store.AllocationSortKeys are
// its sort keys.
var allocationTable = newJSONTable(jsonTable[model.Allocation]{
	what: "allocation", plural: "allocations", table: "allocations", byName: true,
	head: func(a *model.Allocation) rowHead {
		return rowHead{&a.ID, &a.Version, &a.UUID, &a.CreatedAt, &a.UpdatedAt}
	},
	cols: []string{"name", "node_uuid", "state", "resource_class", "owner"},
	args: func(a *model.Allocation) []any {
		return []any{nullStr(a.Name), nullStr(a.NodeUUID), a.State, a.ResourceClass, a.Owner}
	},
	unique: map[string]func(*model.Allocation) string{
		"name":      func(a *model.Allocation) string { return a.Name },
		"node_uuid": func(a *model.Allocation) string { return a.NodeUUID },
	},
	sorts: map[string]sortCol{
		"id":             {col: "id"},
		"uuid":           {col: "uuid"},
		"name":           {"name", nullText},
		"node_uuid":      {"node_uuid", nullText},
		"state":          {col: "state"},
		"resource_class": {col: "resource_class"},
		"owner":          {col: "owner"},
		"created_at":     {col: "created_at"},
		"updated_at":     {"updated_at", nullTime},
	},
})

// CreateAllocation implements store.AllocationStore: it sets a.ID, a.Version=1, a
// UUID if empty and CreatedAt if zero.
func (rs allocationStore) CreateAllocation(ctx context.Context, a *model.Allocation) error {
	s := rs.s
	return allocationTable.create(ctx, s, a)
}

// GetAllocation implements store.AllocationStore: by UUID, or by name.
func (rs allocationStore) GetAllocation(ctx context.Context, ident string) (*model.Allocation, error) {
	s := rs.s
	return allocationTable.get(ctx, s, ident)
}

// ListAllocations implements store.AllocationStore, paginated like ListNodes.
func (rs allocationStore) ListAllocations(ctx context.Context, q store.AllocationQuery) ([]*model.Allocation, error) {
	s := rs.s
	w := &where{}
	w.eq("node_uuid", q.NodeUUID)
	w.eq("state", q.State)
	w.eq("resource_class", q.ResourceClass)
	w.eq("owner", q.Owner)
	return allocationTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateAllocation implements store.AllocationStore, version-checked like UpdateNode.
// Errors: ErrNotFound, ErrStale, *DuplicateError (name, node_uuid).
func (rs allocationStore) UpdateAllocation(ctx context.Context, a *model.Allocation) error {
	s := rs.s
	return allocationTable.update(ctx, s, a)
}

// DeleteAllocation implements store.AllocationStore. Errors: ErrNotFound.
func (rs allocationStore) DeleteAllocation(ctx context.Context, id string) error {
	s := rs.s
	return allocationTable.delete(ctx, s, id)
}
