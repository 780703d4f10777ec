package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

const (
	insertPortSQL = `INSERT INTO ports (uuid, version, address, name, node_uuid,
		portgroup_uuid, pxe_enabled, created_at, updated_at, data)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	updatePortSQL = `UPDATE ports SET address = ?, name = ?, node_uuid = ?,
		portgroup_uuid = ?, pxe_enabled = ?, created_at = ?, updated_at = ?, data = ?,
		version = version + 1
		WHERE uuid = ? AND version = ?`
	selectPortSQL = `SELECT id, version, data FROM ports`
)

// portSorts maps store.PortSortKeys to columns.
var portSorts = map[string]sortCol{
	"id":          {col: "id"},
	"uuid":        {col: "uuid"},
	"address":     {col: "address"},
	"node_uuid":   {col: "node_uuid"},
	"created_at":  {col: "created_at"},
	"updated_at":  {"updated_at", nullTime},
	"pxe_enabled": {col: "pxe_enabled"},
	"name":        {"name", nullText},
}

func normPort(p *model.Port) {
	p.CreatedAt = norm(p.CreatedAt)
	p.UpdatedAt = norm(p.UpdatedAt)
}

// portArgs are the values of the written columns after uuid and version.
func (s *Store) portArgs(p *model.Port, data []byte) []any {
	return []any{p.Address, nullStr(p.Name), p.NodeUUID, p.PortgroupUUID, p.PXEEnabled,
		s.d.EncodeTime(p.CreatedAt), s.timeArg(p.UpdatedAt), string(data)}
}

func portValue(p *model.Port) func(string) string {
	return func(col string) string {
		switch col {
		case "address":
			return p.Address
		case "name":
			return p.Name
		}
		return p.UUID
	}
}

func decodePort(id, version int64, data []byte) (*model.Port, error) {
	p := new(model.Port)
	if err := json.Unmarshal(data, p); err != nil {
		return nil, fmt.Errorf("decode port %d: %w", id, err)
	}
	p.ID, p.Version = id, version
	return p, nil
}

// CreatePort implements store.Store: it sets p.ID, p.Version=1, a UUID if
// empty and CreatedAt if zero. The address is stored as given.
func (s *Store) CreatePort(ctx context.Context, p *model.Port) error {
	if p.UUID == "" {
		p.UUID = uuid.NewString()
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now()
	}
	normPort(p)
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("create port %s: %w", p.UUID, err)
	}
	args := append([]any{p.UUID}, s.portArgs(p, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, insertPortSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create port %s: %w", p.UUID, s.writeErr(err, portValue(p)))
	}
	p.ID, p.Version = id, 1
	return nil
}

// GetPort implements store.Store.
func (s *Store) GetPort(ctx context.Context, ident string) (*model.Port, error) {
	col := "name"
	if uuidShaped(ident) {
		col = "uuid"
	}
	return s.getPort(ctx, col, ident)
}

// GetPortByAddress implements store.Store; mac is compared as given.
func (s *Store) GetPortByAddress(ctx context.Context, mac string) (*model.Port, error) {
	return s.getPort(ctx, "address", mac)
}

func (s *Store) getPort(ctx context.Context, col, v string) (*model.Port, error) {
	var (
		id, version int64
		data        []byte
	)
	err := s.reader().queryRow(ctx, selectPortSQL+" WHERE "+col+" = ?", v).Scan(&id, &version, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("port", v)
	}
	if err != nil {
		return nil, fmt.Errorf("get port %s: %w", v, err)
	}
	return decodePort(id, version, data)
}

// ListPorts implements store.Store, paginated like ListNodes.
func (s *Store) ListPorts(ctx context.Context, q store.PortQuery) ([]*model.Port, error) {
	w := &where{}
	for _, f := range [...][2]string{{"node_uuid", q.NodeUUID}, {"address", q.Address},
		{"portgroup_uuid", q.PortgroupUUID}} {
		if f[1] != "" {
			w.add(f[0]+" = ?", f[1])
		}
	}
	tail, err := s.paginate(w, portSorts, page{"ports", q.SortKey, q.SortDir, q.Marker, q.Limit})
	if err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	ports, err := s.queryPorts(ctx, selectPortSQL+w.String()+tail, w.args)
	if err == nil && len(ports) == 0 && q.Marker != "" {
		err = s.markerExists(ctx, "ports", q.Marker)
	}
	if err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	return ports, nil
}

func (s *Store) queryPorts(ctx context.Context, query string, args []any) ([]*model.Port, error) {
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ports []*model.Port
	for rows.Next() {
		var (
			id, version int64
			data        sql.RawBytes
		)
		if err := rows.Scan(&id, &version, &data); err != nil {
			return nil, err
		}
		p, err := decodePort(id, version, data)
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, rows.Err()
}

// UpdatePort implements store.Store: version-checked like UpdateNode, and
// ErrNotFound when p names a node that does not exist.
func (s *Store) UpdatePort(ctx context.Context, p *model.Port) error {
	prev := p.UpdatedAt
	p.UpdatedAt = s.now()
	normPort(p)
	if err := s.updatePort(ctx, p); err != nil {
		p.UpdatedAt = prev
		return fmt.Errorf("update port %s: %w", p.UUID, err)
	}
	p.Version++
	return nil
}

func (s *Store) updatePort(ctx context.Context, p *model.Port) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	args := append(s.portArgs(p, data), p.UUID, p.Version)
	res, err := s.writer().exec(ctx, updatePortSQL, args...)
	if err != nil {
		return s.writeErr(err, portValue(p))
	}
	if rows, err := res.RowsAffected(); err != nil || rows == 1 {
		return err
	}
	return s.missingOrStale(ctx, "ports", p.UUID)
}

// DeletePort implements store.Store. Errors: ErrNotFound.
func (s *Store) DeletePort(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM ports WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete port %s: %w", id, err)
	}
	return nil
}
