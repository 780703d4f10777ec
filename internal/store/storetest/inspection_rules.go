package storetest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testInspectionRules(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip and uniqueness", ruleRoundTrip},
		{"list by phase, priority and pages", ruleList},
	})
}

func newRule(prio int, phase string) *model.InspectionRule {
	return &model.InspectionRule{UUID: uuid.NewString(), Priority: prio, Phase: phase,
		Conditions: []model.JSON{{"op": "eq", "args": map[string]any{"values": []any{"{node.driver}", "ipmi"}}}},
		Actions:    []model.JSON{{"op": "add-trait", "args": map[string]any{"name": "CUSTOM_X"}}}}
}

func ruleRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := newRule(50, "main")
	r.Description, r.Sensitive = "d", true
	wantErr(t, "create", s.InspectionRules().CreateInspectionRule(ctx, r), nil)
	if r.ID == 0 || r.Version != 1 || r.CreatedAt.IsZero() {
		t.Fatalf("create did not set id, version, created_at: %+v", r)
	}
	wantEqual(t, "round trip", mustGetRule(t, s, r.UUID), r)
	dup := newRule(1, "main")
	dup.UUID = r.UUID
	wantDuplicate(t, "same uuid", s.InspectionRules().CreateInspectionRule(ctx, dup), "uuid", r.UUID)

	got := mustGetRule(t, s, r.UUID)
	got.Priority, got.Description, got.Sensitive = 7, "", false
	got.Actions = append(got.Actions, model.JSON{"op": "log", "args": map[string]any{"msg": "hi"}})
	wantErr(t, "update", s.InspectionRules().UpdateInspectionRule(ctx, got), nil)
	if got.Version != 2 || got.UpdatedAt.IsZero() {
		t.Fatalf("update did not bump version or set updated_at: %+v", got)
	}
	wantEqual(t, "after update", mustGetRule(t, s, r.UUID), got)
	stale := *r
	wantErr(t, "stale update", s.InspectionRules().UpdateInspectionRule(ctx, &stale), store.ErrStale)

	wantErr(t, "delete", s.InspectionRules().DeleteInspectionRule(ctx, r.UUID), nil)
	_, err := s.InspectionRules().GetInspectionRule(ctx, r.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete again", s.InspectionRules().DeleteInspectionRule(ctx, r.UUID), store.ErrNotFound)
	gone := *got
	wantErr(t, "update deleted", s.InspectionRules().UpdateInspectionRule(ctx, &gone), store.ErrNotFound)
}

func mustGetRule(t *testing.T, s store.Store, id string) *model.InspectionRule {
	t.Helper()
	r, err := s.InspectionRules().GetInspectionRule(t.Context(), id)
	if err != nil {
		t.Fatalf("GetInspectionRule(%s): %v", id, err)
	}
	return r
}

func ruleList(t *testing.T, s store.Store) {
	ctx := t.Context()
	var ids []string
	for _, r := range []*model.InspectionRule{newRule(10, "main"), newRule(90, "main"), newRule(50, "other"), newRule(30, "main")} {
		wantErr(t, "create", s.InspectionRules().CreateInspectionRule(ctx, r), nil)
		ids = append(ids, r.UUID)
	}
	prios := func(rs []*model.InspectionRule) []int {
		out := []int{}
		for _, r := range rs {
			out = append(out, r.Priority)
		}
		return out
	}
	all, err := s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{})
	wantErr(t, "list", err, nil)
	wantEqual(t, "by id", prios(all), []int{10, 90, 50, 30})
	main, err := s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{Phase: "main", SortKey: "priority", SortDir: "desc"})
	wantErr(t, "list main", err, nil)
	wantEqual(t, "main by priority", prios(main), []int{90, 30, 10})
	page, err := s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{SortKey: "priority", Limit: 2})
	wantErr(t, "page 1", err, nil)
	wantEqual(t, "page 1", prios(page), []int{10, 30})
	page, err = s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{SortKey: "priority", Limit: 2, Marker: page[1].UUID})
	wantErr(t, "page 2", err, nil)
	wantEqual(t, "page 2", prios(page), []int{50, 90})
	_, err = s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown marker", err, store.ErrNotFound)

	n, err := s.InspectionRules().DeleteInspectionRules(ctx)
	wantErr(t, "delete all", err, nil)
	wantEqual(t, "deleted", n, len(ids))
	all, err = s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{})
	wantErr(t, "list after delete all", err, nil)
	wantEqual(t, "left", len(all), 0)
}
