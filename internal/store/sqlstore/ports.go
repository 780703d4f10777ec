package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// CreatePort implements store.PortStore: it sets p.ID, p.Version=1, a UUID if
// empty and CreatedAt if zero. The address is stored as given.
func (rs portStore) CreatePort(ctx context.Context, p *model.Port) error {
	s := rs.s
	return portTable.create(ctx, s, p)
}

// GetPort implements store.PortStore: by UUID, or by name.
func (rs portStore) GetPort(ctx context.Context, ident string) (*model.Port, error) {
	s := rs.s
	return portTable.get(ctx, s, ident)
}

// GetPortByAddress implements store.PortStore; mac is compared as given.
func (rs portStore) GetPortByAddress(ctx context.Context, mac string) (*model.Port, error) {
	s := rs.s
	return portTable.getBy(ctx, s, "address", mac)
}

// lookupChunk bounds the addresses of one GetNodeByPortAddress query
// (SQLite takes at most 32,766 parameters, PostgreSQL 65,535).
const lookupChunk = 500

// GetNodeByPortAddress implements store.PortStore: the ports of the addresses
// joined to their nodes, one query per lookupChunk addresses.
func (rs portStore) GetNodeByPortAddress(ctx context.Context, macs []string) (*model.Node, error) {
	s := rs.s
	macs = slices.Compact(slices.Clone(macs)) // neighbours only: order matters
	for len(macs) > 0 {
		chunk := macs[:min(len(macs), lookupChunk)]
		macs = macs[len(chunk):]
		n, err := s.nodeByPortAddress(ctx, chunk)
		if !errors.Is(err, store.ErrNotFound) {
			return n, err
		}
	}
	return nil, notFound("port", "with any of the addresses")
}

func (s *Store) nodeByPortAddress(ctx context.Context, macs []string) (*model.Node, error) {
	args := make([]any, len(macs))
	for i, m := range macs {
		args[i] = m
	}
	rows, err := s.reader().query(ctx, `SELECT p.address, n.id, n.version, n.reservation, n.data
		FROM ports p JOIN nodes n ON n.uuid = p.node_uuid
		WHERE p.address IN (?`+strings.Repeat(", ?", len(macs)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("node by port address: %w", err)
	}
	defer rows.Close()
	best := len(macs)
	var found struct {
		id, version int64
		res         sql.NullString
		data        []byte
	}
	for rows.Next() {
		var (
			addr        string
			id, version int64
			res         sql.NullString
			data        sql.RawBytes
		)
		if err := rows.Scan(&addr, &id, &version, &res, &data); err != nil {
			return nil, fmt.Errorf("node by port address: %w", err)
		}
		if i := slices.Index(macs, addr); i >= 0 && i < best {
			best = i
			found.id, found.version, found.res = id, version, res
			found.data = append(found.data[:0], data...)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("node by port address: %w", err)
	}
	if best == len(macs) {
		return nil, notFound("port", "with any of the addresses")
	}
	return s.decodeNode(found.id, found.version, found.res, found.data)
}

// ListPorts implements store.PortStore, paginated like ListNodes.
func (rs portStore) ListPorts(ctx context.Context, q store.PortQuery) ([]*model.Port, error) {
	s := rs.s
	w := &where{}
	w.eq("node_uuid", q.NodeUUID)
	w.eq("address", q.Address)
	w.eq("portgroup_uuid", q.PortgroupUUID)
	return portTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdatePort implements store.PortStore: version-checked like UpdateNode, and
// ErrNotFound when p names a node that does not exist.
func (rs portStore) UpdatePort(ctx context.Context, p *model.Port) error {
	s := rs.s
	return portTable.update(ctx, s, p)
}

// DeletePort implements store.PortStore. Errors: ErrNotFound.
func (rs portStore) DeletePort(ctx context.Context, id string) error {
	s := rs.s
	return portTable.delete(ctx, s, id)
}
