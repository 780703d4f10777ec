package sqlstore

import (
	"context"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// portgroupTable is the portgroups table; store.PortgroupSortKeys are its
// sort keys.
var portgroupTable = newJSONTable(jsonTable[model.Portgroup]{
	what: "portgroup", plural: "portgroups", table: "portgroups", byName: true,
	head: func(pg *model.Portgroup) rowHead {
		return rowHead{&pg.ID, &pg.Version, &pg.UUID, &pg.CreatedAt, &pg.UpdatedAt}
	},
	cols: []string{"name", "address", "node_uuid"},
	args: func(pg *model.Portgroup) []any { return []any{nullStr(pg.Name), nullStr(pg.Address), pg.NodeUUID} },
	unique: map[string]func(*model.Portgroup) string{
		"address": func(pg *model.Portgroup) string { return pg.Address },
		"name":    func(pg *model.Portgroup) string { return pg.Name },
	},
	sorts: map[string]sortCol{
		"id":         {col: "id"},
		"uuid":       {col: "uuid"},
		"name":       {"name", nullText},
		"address":    {"address", nullText},
		"node_uuid":  {col: "node_uuid"},
		"created_at": {col: "created_at"},
		"updated_at": {"updated_at", nullTime},
	},
})

// CreatePortgroup implements store.PortStore: it sets pg.ID, pg.Version=1, a
// UUID if empty and CreatedAt if zero.
func (rs portStore) CreatePortgroup(ctx context.Context, pg *model.Portgroup) error {
	s := rs.s
	return portgroupTable.create(ctx, s, pg)
}

// GetPortgroup implements store.PortStore: by UUID, or by name.
func (rs portStore) GetPortgroup(ctx context.Context, ident string) (*model.Portgroup, error) {
	s := rs.s
	return portgroupTable.get(ctx, s, ident)
}

// ListPortgroups implements store.PortStore, paginated like ListNodes.
func (rs portStore) ListPortgroups(ctx context.Context, q store.PortgroupQuery) ([]*model.Portgroup, error) {
	s := rs.s
	w := &where{}
	w.eq("node_uuid", q.NodeUUID)
	w.eq("address", q.Address)
	return portgroupTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdatePortgroup implements store.PortStore, version-checked like UpdateNode.
func (rs portStore) UpdatePortgroup(ctx context.Context, pg *model.Portgroup) error {
	s := rs.s
	return portgroupTable.update(ctx, s, pg)
}

// DeletePortgroup implements store.PortStore. Errors: ErrNotFound.
func (rs portStore) DeletePortgroup(ctx context.Context, id string) error {
	s := rs.s
	return portgroupTable.delete(ctx, s, id)
}
