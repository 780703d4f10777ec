package storetest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testDeployTemplates(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip and uniqueness", templateRoundTrip},
		{"list by names and pages", templateList},
	})
}

func newTemplate(name string) *model.DeployTemplate {
	return &model.DeployTemplate{UUID: uuid.NewString(), Name: name, Steps: []model.DeployStep{
		{Interface: "bios", Step: "apply_configuration", Priority: 150,
			Args: model.JSON{"settings": []any{map[string]any{"name": "A", "value": "1"}}}},
	}}
}

func templateRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	tp := newTemplate("CUSTOM_A")
	tp.Description, tp.Extra = "d", model.JSON{"k": "v"}
	wantErr(t, "create", s.DeployTemplates().CreateDeployTemplate(ctx, tp), nil)
	if tp.ID == 0 || tp.Version != 1 || tp.CreatedAt.IsZero() {
		t.Fatalf("create did not set id, version, created_at: %+v", tp)
	}
	byName, err := s.DeployTemplates().GetDeployTemplate(ctx, "CUSTOM_A")
	wantErr(t, "get by name", err, nil)
	byUUID, err := s.DeployTemplates().GetDeployTemplate(ctx, tp.UUID)
	wantErr(t, "get by uuid", err, nil)
	wantEqual(t, "by name and by uuid", byName, byUUID)
	wantEqual(t, "round trip", byName, tp)

	wantDuplicate(t, "same name", s.DeployTemplates().CreateDeployTemplate(ctx, newTemplate("CUSTOM_A")), "name", "CUSTOM_A")
	dupUUID := newTemplate("CUSTOM_B")
	dupUUID.UUID = tp.UUID
	wantDuplicate(t, "same uuid", s.DeployTemplates().CreateDeployTemplate(ctx, dupUUID), "uuid", tp.UUID)

	other := newTemplate("CUSTOM_B")
	wantErr(t, "create B", s.DeployTemplates().CreateDeployTemplate(ctx, other), nil)
	got := mustGetTemplate(t, s, tp.UUID)
	got.Name = "CUSTOM_B"
	wantDuplicate(t, "rename onto B", s.DeployTemplates().UpdateDeployTemplate(ctx, got), "name", "CUSTOM_B")

	got = mustGetTemplate(t, s, tp.UUID)
	got.Name, got.Steps[0].Priority = "CUSTOM_C", 10
	wantErr(t, "update", s.DeployTemplates().UpdateDeployTemplate(ctx, got), nil)
	if got.Version != 2 || got.UpdatedAt.IsZero() {
		t.Fatalf("update did not bump version or set updated_at: %+v", got)
	}
	wantEqual(t, "after update", mustGetTemplate(t, s, "CUSTOM_C"), got)
	stale := *tp
	stale.Name = "CUSTOM_D"
	wantErr(t, "stale update", s.DeployTemplates().UpdateDeployTemplate(ctx, &stale), store.ErrStale)

	wantErr(t, "delete", s.DeployTemplates().DeleteDeployTemplate(ctx, tp.UUID), nil)
	_, err = s.DeployTemplates().GetDeployTemplate(ctx, tp.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete again", s.DeployTemplates().DeleteDeployTemplate(ctx, tp.UUID), store.ErrNotFound)
	gone := *got
	wantErr(t, "update deleted", s.DeployTemplates().UpdateDeployTemplate(ctx, &gone), store.ErrNotFound)
}

func mustGetTemplate(t *testing.T, s store.Store, ident string) *model.DeployTemplate {
	t.Helper()
	tp, err := s.DeployTemplates().GetDeployTemplate(t.Context(), ident)
	if err != nil {
		t.Fatalf("GetDeployTemplate(%s): %v", ident, err)
	}
	return tp
}

func templateList(t *testing.T, s store.Store) {
	ctx := t.Context()
	var names []string
	for _, n := range []string{"CUSTOM_C", "CUSTOM_A", "CUSTOM_B"} {
		wantErr(t, "create "+n, s.DeployTemplates().CreateDeployTemplate(ctx, newTemplate(n)), nil)
		names = append(names, n)
	}
	names2 := func(ts []*model.DeployTemplate) []string {
		out := []string{}
		for _, tp := range ts {
			out = append(out, tp.Name)
		}
		return out
	}
	all, err := s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{})
	wantErr(t, "list", err, nil)
	wantEqual(t, "by id", names2(all), names)
	some, err := s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{Names: []string{"CUSTOM_B", "CUSTOM_C", "CUSTOM_X"}, SortKey: "name"})
	wantErr(t, "list by names", err, nil)
	wantEqual(t, "by names", names2(some), []string{"CUSTOM_B", "CUSTOM_C"})
	none, err := s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{Names: []string{}})
	wantErr(t, "list no names", err, nil)
	wantEqual(t, "no names", len(none), 0)
	page, err := s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{SortKey: "name", SortDir: "desc", Limit: 2})
	wantErr(t, "page 1", err, nil)
	wantEqual(t, "page 1", names2(page), []string{"CUSTOM_C", "CUSTOM_B"})
	page, err = s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{SortKey: "name", SortDir: "desc", Limit: 2, Marker: page[1].UUID})
	wantErr(t, "page 2", err, nil)
	wantEqual(t, "page 2", names2(page), []string{"CUSTOM_A"})
	_, err = s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown marker", err, store.ErrNotFound)
}
