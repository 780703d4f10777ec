package sqlstore

import (
	"context"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// runbookTable is the runbooks table; store.RunbookSortKeys are its sort
// keys.
var runbookTable = newJSONTable(jsonTable[model.Runbook]{
	what: "runbook", plural: "runbooks", table: "runbooks", byName: true,
	head: func(r *model.Runbook) rowHead { return rowHead{&r.ID, &r.Version, &r.UUID, &r.CreatedAt, &r.UpdatedAt} },
	cols: []string{"name", "owner", "public", "disable_ramdisk"},
	args: func(r *model.Runbook) []any { return []any{r.Name, r.Owner, r.Public, r.DisableRamdisk} },
	unique: map[string]func(*model.Runbook) string{
		"name": func(r *model.Runbook) string { return r.Name },
	},
	sorts: map[string]sortCol{
		"id":              {col: "id"},
		"uuid":            {col: "uuid"},
		"name":            {col: "name"},
		"owner":           {col: "owner"},
		"public":          {col: "public"},
		"disable_ramdisk": {col: "disable_ramdisk"},
		"created_at":      {col: "created_at"},
		"updated_at":      {"updated_at", nullTime},
	},
})

// CreateRunbook implements store.RunbookStore.
func (rs runbookStore) CreateRunbook(ctx context.Context, r *model.Runbook) error {
	s := rs.s
	return runbookTable.create(ctx, s, r)
}

// GetRunbook implements store.RunbookStore: by UUID, or by name.
func (rs runbookStore) GetRunbook(ctx context.Context, ident string) (*model.Runbook, error) {
	s := rs.s
	return runbookTable.get(ctx, s, ident)
}

// ListRunbooks implements store.RunbookStore, paginated like ListNodes.
func (rs runbookStore) ListRunbooks(ctx context.Context, q store.RunbookQuery) ([]*model.Runbook, error) {
	s := rs.s
	w := &where{}
	if q.Project != "" {
		w.add("(owner = ? OR public = ?)", q.Project, true)
	}
	return runbookTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateRunbook implements store.RunbookStore, version-checked like UpdateNode.
func (rs runbookStore) UpdateRunbook(ctx context.Context, r *model.Runbook) error {
	s := rs.s
	return runbookTable.update(ctx, s, r)
}

// DeleteRunbook implements store.RunbookStore. Errors: ErrNotFound.
func (rs runbookStore) DeleteRunbook(ctx context.Context, id string) error {
	s := rs.s
	return runbookTable.delete(ctx, s, id)
}
