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

// CreateInspectionRule implements store.InspectionRuleStore.
func (rs inspectionRuleStore) CreateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	s := rs.s
	return ruleTable.create(ctx, s, r)
}

// GetInspectionRule implements store.InspectionRuleStore.
func (rs inspectionRuleStore) GetInspectionRule(ctx context.Context, id string) (*model.InspectionRule, error) {
	s := rs.s
	return ruleTable.get(ctx, s, id)
}

// ListInspectionRules implements store.InspectionRuleStore, paginated like ListNodes.
func (rs inspectionRuleStore) ListInspectionRules(ctx context.Context, q store.InspectionRuleQuery) ([]*model.InspectionRule, error) {
	s := rs.s
	w := &where{}
	w.eq("phase", q.Phase)
	return ruleTable.list(ctx, s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateInspectionRule implements store.InspectionRuleStore, version-checked like UpdateNode.
func (rs inspectionRuleStore) UpdateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	s := rs.s
	return ruleTable.update(ctx, s, r)
}

// DeleteInspectionRule implements store.InspectionRuleStore. Errors: ErrNotFound.
func (rs inspectionRuleStore) DeleteInspectionRule(ctx context.Context, id string) error {
	s := rs.s
	return ruleTable.delete(ctx, s, id)
}

// DeleteInspectionRules implements store.InspectionRuleStore.
func (rs inspectionRuleStore) DeleteInspectionRules(ctx context.Context) (int, error) {
	s := rs.s
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
