package sqlstore

import (
	"context"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// templateTable is the deploy_templates table;
// store.DeployTemplateSortKeys are its sort keys.
var templateTable = newJSONTable(jsonTable[model.DeployTemplate]{
	what: "deploy template", plural: "deploy templates", table: "deploy_templates", byName: true,
	head: func(t *model.DeployTemplate) rowHead {
		return rowHead{&t.ID, &t.Version, &t.UUID, &t.CreatedAt, &t.UpdatedAt}
	},
	cols: []string{"name"},
	args: func(t *model.DeployTemplate) []any { return []any{t.Name} },
	unique: map[string]func(*model.DeployTemplate) string{
		"name": func(t *model.DeployTemplate) string { return t.Name },
	},
	sorts: map[string]sortCol{
		"id":         {col: "id"},
		"uuid":       {col: "uuid"},
		"name":       {col: "name"},
		"created_at": {col: "created_at"},
		"updated_at": {"updated_at", nullTime},
	},
})

// CreateDeployTemplate implements store.DeployTemplateStore.
func (rs templateStore) CreateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error {
	s := rs.s
	return templateTable.create(ctx, s, t)
}

// GetDeployTemplate implements store.DeployTemplateStore: by UUID, or by name.
func (rs templateStore) GetDeployTemplate(ctx context.Context, ident string) (*model.DeployTemplate, error) {
	s := rs.s
	return templateTable.get(ctx, s, ident)
}

// ListDeployTemplates implements store.DeployTemplateStore, paginated like ListNodes.
func (rs templateStore) ListDeployTemplates(ctx context.Context, q store.DeployTemplateQuery) ([]*model.DeployTemplate, error) {
	s := rs.s
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
	return templateTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateDeployTemplate implements store.DeployTemplateStore, version-checked like UpdateNode.
func (rs templateStore) UpdateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error {
	s := rs.s
	return templateTable.update(ctx, s, t)
}

// DeleteDeployTemplate implements store.DeployTemplateStore. Errors: ErrNotFound.
func (rs templateStore) DeleteDeployTemplate(ctx context.Context, id string) error {
	s := rs.s
	return templateTable.delete(ctx, s, id)
}
