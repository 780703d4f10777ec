package sqlstore

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// ruleTable is the inspection_rules table: no lookup by name;
// store.InspectionRuleSortKeys are its sort keys.
var ruleTable = newJSONTable(jsonTable[model.InspectionRule]{
	what: "inspection rule", plural: "inspection rules", table: "inspection_rules",
	head: func(r *model.InspectionRule) rowHead {
		return rowHead{&r.ID, &r.Version, &r.UUID, &r.CreatedAt, &r.UpdatedAt}
	},
	cols: []string{"priority", "phase", "description", "sensitive"},
	args: func(r *model.InspectionRule) []any {
		return []any{r.Priority, r.Phase, nullStr(r.Description), r.Sensitive}
	},
	sorts: map[string]sortCol{
		"id":          {col: "id"},
		"uuid":        {col: "uuid"},
		"priority":    {col: "priority"},
		"phase":       {col: "phase"},
		"description": {"description", nullText},
		"sensitive":   {col: "sensitive"},
		"created_at":  {col: "created_at"},
		"updated_at":  {"updated_at", nullTime},
	},
})

// CreateInspectionRule implements store.Store.
func (s *Store) CreateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	return ruleTable.create(ctx, s, r)
}

// GetInspectionRule implements store.Store.
func (s *Store) GetInspectionRule(ctx context.Context, id string) (*model.InspectionRule, error) {
	return ruleTable.get(ctx, s, id)
}

// ListInspectionRules implements store.Store, paginated like ListNodes.
func (s *Store) ListInspectionRules(ctx context.Context, q store.InspectionRuleQuery) ([]*model.InspectionRule, error) {
	w := &where{}
	w.eq("phase", q.Phase)
	return ruleTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateInspectionRule implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	return ruleTable.update(ctx, s, r)
}

// DeleteInspectionRule implements store.Store. Errors: ErrNotFound.
func (s *Store) DeleteInspectionRule(ctx context.Context, id string) error {
	return ruleTable.delete(ctx, s, id)
}

// DeleteInspectionRules implements store.Store.
func (s *Store) DeleteInspectionRules(ctx context.Context) (int, error) {
	res, err := s.writer().exec(ctx, "DELETE FROM inspection_rules")
	if err != nil {
		return 0, fmt.Errorf("delete inspection rules: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete inspection rules: %w", err)
	}
	return int(n), nil
}

var _ store.InspectionRuleStore = (*Store)(nil)
