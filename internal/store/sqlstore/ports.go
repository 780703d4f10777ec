package sqlstore

import (
	"context"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// portTable is the ports table; store.PortSortKeys are its sort keys.
var portTable = newJSONTable(jsonTable[model.Port]{
	what: "port", plural: "ports", table: "ports", byName: true,
	head: func(p *model.Port) rowHead { return rowHead{&p.ID, &p.Version, &p.UUID, &p.CreatedAt, &p.UpdatedAt} },
	cols: []string{"address", "name", "node_uuid", "portgroup_uuid", "pxe_enabled"},
	args: func(p *model.Port) []any {
		return []any{p.Address, nullStr(p.Name), p.NodeUUID, p.PortgroupUUID, p.PXEEnabled}
	},
	unique: map[string]func(*model.Port) string{
		"address": func(p *model.Port) string { return p.Address },
		"name":    func(p *model.Port) string { return p.Name },
	},
	sorts: map[string]sortCol{
		"id":          {col: "id"},
		"uuid":        {col: "uuid"},
		"address":     {col: "address"},
		"node_uuid":   {col: "node_uuid"},
		"created_at":  {col: "created_at"},
		"updated_at":  {"updated_at", nullTime},
		"pxe_enabled": {col: "pxe_enabled"},
		"name":        {"name", nullText},
	},
})

// CreatePort implements store.Store: it sets p.ID, p.Version=1, a UUID if
// empty and CreatedAt if zero. The address is stored as given.
func (s *Store) CreatePort(ctx context.Context, p *model.Port) error {
	return portTable.create(ctx, s, p)
}

// GetPort implements store.Store: by UUID, or by name.
func (s *Store) GetPort(ctx context.Context, ident string) (*model.Port, error) {
	return portTable.get(ctx, s, ident)
}

// GetPortByAddress implements store.Store; mac is compared as given.
func (s *Store) GetPortByAddress(ctx context.Context, mac string) (*model.Port, error) {
	return portTable.getBy(ctx, s, "address", mac)
}

// ListPorts implements store.Store, paginated like ListNodes.
func (s *Store) ListPorts(ctx context.Context, q store.PortQuery) ([]*model.Port, error) {
	w := &where{}
	w.eq("node_uuid", q.NodeUUID)
	w.eq("address", q.Address)
	w.eq("portgroup_uuid", q.PortgroupUUID)
	return portTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdatePort implements store.Store: version-checked like UpdateNode, and
// ErrNotFound when p names a node that does not exist.
func (s *Store) UpdatePort(ctx context.Context, p *model.Port) error {
	return portTable.update(ctx, s, p)
}

// DeletePort implements store.Store. Errors: ErrNotFound.
func (s *Store) DeletePort(ctx context.Context, id string) error {
	return portTable.delete(ctx, s, id)
}
