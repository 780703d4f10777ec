package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

const (
	insertPortgroupSQL = `INSERT INTO portgroups (uuid, version, name, address, node_uuid,
		created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?) RETURNING id`
	updatePortgroupSQL = `UPDATE portgroups SET name = ?, address = ?, node_uuid = ?,
		created_at = ?, updated_at = ?, data = ?, version = version + 1
		WHERE uuid = ? AND version = ?`
)

// portgroupSorts maps store.PortgroupSortKeys to columns.
var portgroupSorts = map[string]sortCol{
	"id":         {col: "id"},
	"uuid":       {col: "uuid"},
	"name":       {"name", nullText},
	"address":    {"address", nullText},
	"node_uuid":  {col: "node_uuid"},
	"created_at": {col: "created_at"},
	"updated_at": {"updated_at", nullTime},
}

func setPortgroupRow(pg *model.Portgroup, id, version int64) { pg.ID, pg.Version = id, version }

func (s *Store) portgroupArgs(pg *model.Portgroup, data []byte) []any {
	return []any{nullStr(pg.Name), nullStr(pg.Address), pg.NodeUUID,
		s.d.EncodeTime(pg.CreatedAt), s.timeArg(pg.UpdatedAt), string(data)}
}

func portgroupValue(pg *model.Portgroup) func(string) string {
	return func(col string) string {
		switch col {
		case "address":
			return pg.Address
		case "name":
			return pg.Name
		}
		return pg.UUID
	}
}

// CreatePortgroup implements store.Store: it sets pg.ID, pg.Version=1, a
// UUID if empty and CreatedAt if zero.
func (s *Store) CreatePortgroup(ctx context.Context, pg *model.Portgroup) error {
	if pg.UUID == "" {
		pg.UUID = uuid.NewString()
	}
	if pg.CreatedAt.IsZero() {
		pg.CreatedAt = s.now()
	}
	pg.CreatedAt, pg.UpdatedAt = norm(pg.CreatedAt), norm(pg.UpdatedAt)
	data, err := json.Marshal(pg)
	if err != nil {
		return fmt.Errorf("create portgroup %s: %w", pg.UUID, err)
	}
	args := append([]any{pg.UUID}, s.portgroupArgs(pg, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, insertPortgroupSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create portgroup %s: %w", pg.UUID, s.writeErr(err, portgroupValue(pg)))
	}
	pg.ID, pg.Version = id, 1
	return nil
}

// GetPortgroup implements store.Store: by UUID, or by name.
func (s *Store) GetPortgroup(ctx context.Context, ident string) (*model.Portgroup, error) {
	col := "name"
	if uuidShaped(ident) {
		col = "uuid"
	}
	return getJSON(ctx, s.reader(), "portgroup", "portgroups", col, ident, setPortgroupRow)
}

// ListPortgroups implements store.Store, paginated like ListNodes.
func (s *Store) ListPortgroups(ctx context.Context, q store.PortgroupQuery) ([]*model.Portgroup, error) {
	w := &where{}
	if q.NodeUUID != "" {
		w.add("node_uuid = ?", q.NodeUUID)
	}
	if q.Address != "" {
		w.add("address = ?", q.Address)
	}
	pgs, err := listJSON(ctx, s, "portgroup", w, portgroupSorts, page{"portgroups", q.SortKey, q.SortDir, q.Marker, q.Limit}, setPortgroupRow)
	if err != nil {
		return nil, fmt.Errorf("list portgroups: %w", err)
	}
	return pgs, nil
}

// UpdatePortgroup implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdatePortgroup(ctx context.Context, pg *model.Portgroup) error {
	prev := pg.UpdatedAt
	pg.UpdatedAt = norm(s.now())
	pg.CreatedAt = norm(pg.CreatedAt)
	data, err := json.Marshal(pg)
	if err == nil {
		args := append(s.portgroupArgs(pg, data), pg.UUID, pg.Version)
		err = s.updateVersioned(ctx, "portgroups", pg.UUID, updatePortgroupSQL, args, portgroupValue(pg))
	}
	if err != nil {
		pg.UpdatedAt = prev
		return fmt.Errorf("update portgroup %s: %w", pg.UUID, err)
	}
	pg.Version++
	return nil
}

// DeletePortgroup implements store.Store. Errors: ErrNotFound.
func (s *Store) DeletePortgroup(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM portgroups WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete portgroup %s: %w", id, err)
	}
	return nil
}
