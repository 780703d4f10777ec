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
	insertAllocationSQL = `INSERT INTO allocations (uuid, version, name, node_uuid, state,
		resource_class, owner, created_at, updated_at, data)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	updateAllocationSQL = `UPDATE allocations SET name = ?, node_uuid = ?, state = ?,
		resource_class = ?, owner = ?, created_at = ?, updated_at = ?, data = ?,
		version = version + 1 WHERE uuid = ? AND version = ?`
)

// allocationSorts maps store.AllocationSortKeys to columns.
var allocationSorts = map[string]sortCol{
	"id":             {col: "id"},
	"uuid":           {col: "uuid"},
	"name":           {"name", nullText},
	"node_uuid":      {"node_uuid", nullText},
	"state":          {col: "state"},
	"resource_class": {col: "resource_class"},
	"owner":          {col: "owner"},
	"created_at":     {col: "created_at"},
	"updated_at":     {"updated_at", nullTime},
}

func setAllocationRow(a *model.Allocation, id, version int64) { a.ID, a.Version = id, version }

func (s *Store) allocationArgs(a *model.Allocation, data []byte) []any {
	return []any{nullStr(a.Name), nullStr(a.NodeUUID), a.State, a.ResourceClass, a.Owner,
		s.d.EncodeTime(a.CreatedAt), s.timeArg(a.UpdatedAt), string(data)}
}

func allocationValue(a *model.Allocation) func(string) string {
	return func(col string) string {
		switch col {
		case "name":
			return a.Name
		case "node_uuid":
			return a.NodeUUID
		}
		return a.UUID
	}
}

// CreateAllocation implements store.Store: it sets a.ID, a.Version=1, a
// UUID if empty and CreatedAt if zero.
func (s *Store) CreateAllocation(ctx context.Context, a *model.Allocation) error {
	if a.UUID == "" {
		a.UUID = uuid.NewString()
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.now()
	}
	a.CreatedAt, a.UpdatedAt = norm(a.CreatedAt), norm(a.UpdatedAt)
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("create allocation %s: %w", a.UUID, err)
	}
	args := append([]any{a.UUID}, s.allocationArgs(a, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, insertAllocationSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create allocation %s: %w", a.UUID, s.writeErr(err, allocationValue(a)))
	}
	a.ID, a.Version = id, 1
	return nil
}

// GetAllocation implements store.Store: by UUID, or by name.
func (s *Store) GetAllocation(ctx context.Context, ident string) (*model.Allocation, error) {
	col := "name"
	if uuidShaped(ident) {
		col = "uuid"
	}
	return getJSON(ctx, s.reader(), "allocation", "allocations", col, ident, setAllocationRow)
}

// ListAllocations implements store.Store, paginated like ListNodes.
func (s *Store) ListAllocations(ctx context.Context, q store.AllocationQuery) ([]*model.Allocation, error) {
	w := &where{}
	for _, f := range [...][2]string{{"node_uuid", q.NodeUUID}, {"state", q.State},
		{"resource_class", q.ResourceClass}, {"owner", q.Owner}} {
		if f[1] != "" {
			w.add(f[0]+" = ?", f[1])
		}
	}
	as, err := listJSON(ctx, s, "allocation", w, allocationSorts, page{"allocations", q.SortKey, q.SortDir, q.Marker, q.Limit}, setAllocationRow)
	if err != nil {
		return nil, fmt.Errorf("list allocations: %w", err)
	}
	return as, nil
}

// UpdateAllocation implements store.Store, version-checked like UpdateNode.
// Errors: ErrNotFound, ErrStale, *DuplicateError (name, node_uuid).
func (s *Store) UpdateAllocation(ctx context.Context, a *model.Allocation) error {
	prev := a.UpdatedAt
	a.UpdatedAt = norm(s.now())
	a.CreatedAt = norm(a.CreatedAt)
	data, err := json.Marshal(a)
	if err == nil {
		args := append(s.allocationArgs(a, data), a.UUID, a.Version)
		err = s.updateVersioned(ctx, "allocations", a.UUID, updateAllocationSQL, args, allocationValue(a))
	}
	if err != nil {
		a.UpdatedAt = prev
		return fmt.Errorf("update allocation %s: %w", a.UUID, err)
	}
	a.Version++
	return nil
}

// DeleteAllocation implements store.Store. Errors: ErrNotFound.
func (s *Store) DeleteAllocation(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM allocations WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete allocation %s: %w", id, err)
	}
	return nil
}
