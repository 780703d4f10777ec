package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

const (
	insertTemplateSQL = `INSERT INTO deploy_templates (uuid, version, name, created_at, updated_at, data)
		VALUES (?, 1, ?, ?, ?, ?) RETURNING id`
	updateTemplateSQL = `UPDATE deploy_templates SET name = ?, created_at = ?, updated_at = ?, data = ?,
		version = version + 1 WHERE uuid = ? AND version = ?`
)

// templateSorts maps store.DeployTemplateSortKeys to columns.
var templateSorts = map[string]sortCol{
	"id":         {col: "id"},
	"uuid":       {col: "uuid"},
	"name":       {col: "name"},
	"created_at": {col: "created_at"},
	"updated_at": {"updated_at", nullTime},
}

func setTemplateRow(t *model.DeployTemplate, id, version int64) { t.ID, t.Version = id, version }

func (s *Store) templateArgs(t *model.DeployTemplate, data []byte) []any {
	return []any{t.Name, s.d.EncodeTime(t.CreatedAt), s.timeArg(t.UpdatedAt), string(data)}
}

func templateValue(t *model.DeployTemplate) func(string) string {
	return func(col string) string {
		if col == "name" {
			return t.Name
		}
		return t.UUID
	}
}

// CreateDeployTemplate implements store.Store.
func (s *Store) CreateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error {
	if t.UUID == "" {
		t.UUID = uuid.NewString()
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	t.CreatedAt, t.UpdatedAt = norm(t.CreatedAt), norm(t.UpdatedAt)
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("create deploy template %s: %w", t.UUID, err)
	}
	args := append([]any{t.UUID}, s.templateArgs(t, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, insertTemplateSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create deploy template %s: %w", t.UUID, s.writeErr(err, templateValue(t)))
	}
	t.ID, t.Version = id, 1
	return nil
}

// GetDeployTemplate implements store.Store: by UUID, or by name.
func (s *Store) GetDeployTemplate(ctx context.Context, ident string) (*model.DeployTemplate, error) {
	col := "name"
	if uuidShaped(ident) {
		col = "uuid"
	}
	return getJSON(ctx, s.reader(), "deploy template", "deploy_templates", col, ident, setTemplateRow)
}

// ListDeployTemplates implements store.Store, paginated like ListNodes.
func (s *Store) ListDeployTemplates(ctx context.Context, q store.DeployTemplateQuery) ([]*model.DeployTemplate, error) {
	w := &where{}
	if q.Names != nil {
		if len(q.Names) == 0 {
			return nil, nil
		}
		args := make([]any, len(q.Names))
		for i, n := range q.Names {
			args[i] = n
		}
		w.add("name IN (?"+strings.Repeat(", ?", len(q.Names)-1)+")", args...)
	}
	ts, err := listJSON(ctx, s, "deploy template", w, templateSorts, page{"deploy_templates", q.SortKey, q.SortDir, q.Marker, q.Limit}, setTemplateRow)
	if err != nil {
		return nil, fmt.Errorf("list deploy templates: %w", err)
	}
	return ts, nil
}

// UpdateDeployTemplate implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error {
	prev := t.UpdatedAt
	t.UpdatedAt = norm(s.now())
	t.CreatedAt = norm(t.CreatedAt)
	data, err := json.Marshal(t)
	if err == nil {
		args := append(s.templateArgs(t, data), t.UUID, t.Version)
		err = s.updateVersioned(ctx, "deploy_templates", t.UUID, updateTemplateSQL, args, templateValue(t))
	}
	if err != nil {
		t.UpdatedAt = prev
		return fmt.Errorf("update deploy template %s: %w", t.UUID, err)
	}
	t.Version++
	return nil
}

// DeleteDeployTemplate implements store.Store. Errors: ErrNotFound.
func (s *Store) DeleteDeployTemplate(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM deploy_templates WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete deploy template %s: %w", id, err)
	}
	return nil
}

var _ store.DeployTemplateStore = (*Store)(nil)
