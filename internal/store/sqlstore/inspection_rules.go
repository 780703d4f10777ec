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
	insertRuleSQL = `INSERT INTO inspection_rules (uuid, version, priority, phase, description, sensitive,
		created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	updateRuleSQL = `UPDATE inspection_rules SET priority = ?, phase = ?, description = ?, sensitive = ?,
		created_at = ?, updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`
)

// ruleSorts maps store.InspectionRuleSortKeys to columns.
var ruleSorts = map[string]sortCol{
	"id":          {col: "id"},
	"uuid":        {col: "uuid"},
	"priority":    {col: "priority"},
	"phase":       {col: "phase"},
	"description": {"description", nullText},
	"sensitive":   {col: "sensitive"},
	"created_at":  {col: "created_at"},
	"updated_at":  {"updated_at", nullTime},
}

func setRuleRow(r *model.InspectionRule, id, version int64) { r.ID, r.Version = id, version }

func (s *Store) ruleArgs(r *model.InspectionRule, data []byte) []any {
	var desc any
	if r.Description != "" {
		desc = r.Description
	}
	return []any{r.Priority, r.Phase, desc, r.Sensitive, s.d.EncodeTime(r.CreatedAt), s.timeArg(r.UpdatedAt), string(data)}
}

func ruleValue(r *model.InspectionRule) func(string) string {
	return func(string) string { return r.UUID }
}

// CreateInspectionRule implements store.Store.
func (s *Store) CreateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	if r.UUID == "" {
		r.UUID = uuid.NewString()
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	r.CreatedAt, r.UpdatedAt = norm(r.CreatedAt), norm(r.UpdatedAt)
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("create inspection rule %s: %w", r.UUID, err)
	}
	args := append([]any{r.UUID}, s.ruleArgs(r, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, insertRuleSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create inspection rule %s: %w", r.UUID, s.writeErr(err, ruleValue(r)))
	}
	r.ID, r.Version = id, 1
	return nil
}

// GetInspectionRule implements store.Store.
func (s *Store) GetInspectionRule(ctx context.Context, id string) (*model.InspectionRule, error) {
	return getJSON(ctx, s.reader(), "inspection rule", "inspection_rules", "uuid", id, setRuleRow)
}

// ListInspectionRules implements store.Store, paginated like ListNodes.
func (s *Store) ListInspectionRules(ctx context.Context, q store.InspectionRuleQuery) ([]*model.InspectionRule, error) {
	w := &where{}
	if q.Phase != "" {
		w.add("phase = ?", q.Phase)
	}
	rs, err := listJSON(ctx, s, "inspection rule", w, ruleSorts, page{"inspection_rules", q.SortKey, q.SortDir, q.Marker, q.Limit}, setRuleRow)
	if err != nil {
		return nil, fmt.Errorf("list inspection rules: %w", err)
	}
	return rs, nil
}

// UpdateInspectionRule implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	prev := r.UpdatedAt
	r.UpdatedAt = norm(s.now())
	r.CreatedAt = norm(r.CreatedAt)
	data, err := json.Marshal(r)
	if err == nil {
		args := append(s.ruleArgs(r, data), r.UUID, r.Version)
		err = s.updateVersioned(ctx, "inspection_rules", r.UUID, updateRuleSQL, args, ruleValue(r))
	}
	if err != nil {
		r.UpdatedAt = prev
		return fmt.Errorf("update inspection rule %s: %w", r.UUID, err)
	}
	r.Version++
	return nil
}

// DeleteInspectionRule implements store.Store. Errors: ErrNotFound.
func (s *Store) DeleteInspectionRule(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM inspection_rules WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete inspection rule %s: %w", id, err)
	}
	return nil
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
