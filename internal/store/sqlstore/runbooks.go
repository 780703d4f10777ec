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
	insertRunbookSQL = `INSERT INTO runbooks (uuid, version, name, owner, public, disable_ramdisk, created_at, updated_at, data)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	updateRunbookSQL = `UPDATE runbooks SET name = ?, owner = ?, public = ?, disable_ramdisk = ?, created_at = ?,
		updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`
)

// runbookSorts maps store.RunbookSortKeys to columns.
var runbookSorts = map[string]sortCol{
	"id":              {col: "id"},
	"uuid":            {col: "uuid"},
	"name":            {col: "name"},
	"owner":           {col: "owner"},
	"public":          {col: "public"},
	"disable_ramdisk": {col: "disable_ramdisk"},
	"created_at":      {col: "created_at"},
	"updated_at":      {"updated_at", nullTime},
}

func setRunbookRow(r *model.Runbook, id, version int64) { r.ID, r.Version = id, version }

func (s *Store) runbookArgs(r *model.Runbook, data []byte) []any {
	return []any{r.Name, r.Owner, r.Public, r.DisableRamdisk, s.d.EncodeTime(r.CreatedAt), s.timeArg(r.UpdatedAt), string(data)}
}

func runbookValue(r *model.Runbook) func(string) string {
	return func(col string) string {
		if col == "name" {
			return r.Name
		}
		return r.UUID
	}
}

// CreateRunbook implements store.Store.
func (s *Store) CreateRunbook(ctx context.Context, r *model.Runbook) error {
	if r.UUID == "" {
		r.UUID = uuid.NewString()
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	r.CreatedAt, r.UpdatedAt = norm(r.CreatedAt), norm(r.UpdatedAt)
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("create runbook %s: %w", r.UUID, err)
	}
	args := append([]any{r.UUID}, s.runbookArgs(r, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, insertRunbookSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create runbook %s: %w", r.UUID, s.writeErr(err, runbookValue(r)))
	}
	r.ID, r.Version = id, 1
	return nil
}

// GetRunbook implements store.Store: by UUID, or by name.
func (s *Store) GetRunbook(ctx context.Context, ident string) (*model.Runbook, error) {
	col := "name"
	if uuidShaped(ident) {
		col = "uuid"
	}
	return getJSON(ctx, s.reader(), "runbook", "runbooks", col, ident, setRunbookRow)
}

// ListRunbooks implements store.Store, paginated like ListNodes.
func (s *Store) ListRunbooks(ctx context.Context, q store.RunbookQuery) ([]*model.Runbook, error) {
	w := &where{}
	if q.Project != "" {
		w.add("(owner = ? OR public = ?)", q.Project, true)
	}
	rs, err := listJSON(ctx, s, "runbook", w, runbookSorts, page{"runbooks", q.SortKey, q.SortDir, q.Marker, q.Limit}, setRunbookRow)
	if err != nil {
		return nil, fmt.Errorf("list runbooks: %w", err)
	}
	return rs, nil
}

// UpdateRunbook implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateRunbook(ctx context.Context, r *model.Runbook) error {
	prev := r.UpdatedAt
	r.UpdatedAt = norm(s.now())
	r.CreatedAt = norm(r.CreatedAt)
	data, err := json.Marshal(r)
	if err == nil {
		args := append(s.runbookArgs(r, data), r.UUID, r.Version)
		err = s.updateVersioned(ctx, "runbooks", r.UUID, updateRunbookSQL, args, runbookValue(r))
	}
	if err != nil {
		r.UpdatedAt = prev
		return fmt.Errorf("update runbook %s: %w", r.UUID, err)
	}
	r.Version++
	return nil
}

// DeleteRunbook implements store.Store. Errors: ErrNotFound.
func (s *Store) DeleteRunbook(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM runbooks WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete runbook %s: %w", id, err)
	}
	return nil
}

var _ store.RunbookStore = (*Store)(nil)
