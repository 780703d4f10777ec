package storetest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testRunbooks(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip and uniqueness", runbookRoundTrip},
		{"list by project, sorts and pages", runbookList},
	})
}

func newRunbook(name, owner string, public bool) *model.Runbook {
	return &model.Runbook{UUID: uuid.NewString(), Name: name, Owner: owner, Public: public, Steps: []model.RunbookStep{
		{Interface: "bios", Step: "apply_configuration", Order: 1,
			Args: model.JSON{"settings": []any{map[string]any{"name": "A", "value": "1"}}}},
		{Interface: "deploy", Step: "erase_devices_metadata", Order: 2, Args: model.JSON{}},
	}}
}

func runbookRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	rb := newRunbook("CUSTOM_A", "p1", false)
	rb.DisableRamdisk, rb.Extra = true, model.JSON{"k": "v"}
	rb.Description, rb.Traits = "firmware pass", []string{"CUSTOM_A", "CUSTOM_B"}
	wantErr(t, "create", s.Runbooks().CreateRunbook(ctx, rb), nil)
	if rb.ID == 0 || rb.Version != 1 || rb.CreatedAt.IsZero() {
		t.Fatalf("create did not set id, version, created_at: %+v", rb)
	}
	byName, err := s.Runbooks().GetRunbook(ctx, "CUSTOM_A")
	wantErr(t, "get by name", err, nil)
	byUUID, err := s.Runbooks().GetRunbook(ctx, rb.UUID)
	wantErr(t, "get by uuid", err, nil)
	wantEqual(t, "by name and by uuid", byName, byUUID)
	wantEqual(t, "round trip", byName, rb)

	wantDuplicate(t, "same name", s.Runbooks().CreateRunbook(ctx, newRunbook("CUSTOM_A", "", false)), "name", "CUSTOM_A")
	dupUUID := newRunbook("CUSTOM_B", "", false)
	dupUUID.UUID = rb.UUID
	wantDuplicate(t, "same uuid", s.Runbooks().CreateRunbook(ctx, dupUUID), "uuid", rb.UUID)

	wantErr(t, "create B", s.Runbooks().CreateRunbook(ctx, newRunbook("CUSTOM_B", "", true)), nil)
	got := mustGetRunbook(t, s, rb.UUID)
	got.Name = "CUSTOM_B"
	wantDuplicate(t, "rename onto B", s.Runbooks().UpdateRunbook(ctx, got), "name", "CUSTOM_B")

	got = mustGetRunbook(t, s, rb.UUID)
	got.Name, got.Owner, got.Public, got.Steps = "CUSTOM_C", "", true, got.Steps[1:]
	wantErr(t, "update", s.Runbooks().UpdateRunbook(ctx, got), nil)
	if got.Version != 2 || got.UpdatedAt.IsZero() {
		t.Fatalf("update did not bump version or set updated_at: %+v", got)
	}
	wantEqual(t, "after update", mustGetRunbook(t, s, "CUSTOM_C"), got)
	_, err = s.Runbooks().GetRunbook(ctx, "CUSTOM_A")
	wantErr(t, "old name", err, store.ErrNotFound)
	stale := *rb
	stale.Name = "CUSTOM_D"
	wantErr(t, "stale update", s.Runbooks().UpdateRunbook(ctx, &stale), store.ErrStale)

	wantErr(t, "delete", s.Runbooks().DeleteRunbook(ctx, rb.UUID), nil)
	_, err = s.Runbooks().GetRunbook(ctx, rb.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete again", s.Runbooks().DeleteRunbook(ctx, rb.UUID), store.ErrNotFound)
	gone := *got
	wantErr(t, "update deleted", s.Runbooks().UpdateRunbook(ctx, &gone), store.ErrNotFound)
}

func mustGetRunbook(t *testing.T, s store.Store, ident string) *model.Runbook {
	t.Helper()
	rb, err := s.Runbooks().GetRunbook(t.Context(), ident)
	if err != nil {
		t.Fatalf("GetRunbook(%s): %v", ident, err)
	}
	return rb
}

func runbookList(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, rb := range []*model.Runbook{
		newRunbook("CUSTOM_C", "p1", false), newRunbook("CUSTOM_A", "p2", false),
		newRunbook("CUSTOM_B", "", true), newRunbook("CUSTOM_D", "", false),
	} {
		wantErr(t, "create "+rb.Name, s.Runbooks().CreateRunbook(ctx, rb), nil)
	}
	names := func(q store.RunbookQuery) []string {
		t.Helper()
		rs, err := s.Runbooks().ListRunbooks(ctx, q)
		wantErr(t, "list", err, nil)
		out := []string{}
		for _, rb := range rs {
			out = append(out, rb.Name)
		}
		return out
	}
	wantEqual(t, "by id", names(store.RunbookQuery{}), []string{"CUSTOM_C", "CUSTOM_A", "CUSTOM_B", "CUSTOM_D"})
	wantEqual(t, "project p1: its own and the public", names(store.RunbookQuery{Project: "p1", SortKey: "name"}),
		[]string{"CUSTOM_B", "CUSTOM_C"})
	wantEqual(t, "project p3: the public", names(store.RunbookQuery{Project: "p3"}), []string{"CUSTOM_B"})
	wantEqual(t, "by owner", names(store.RunbookQuery{SortKey: "owner"}), []string{"CUSTOM_B", "CUSTOM_D", "CUSTOM_C", "CUSTOM_A"})
	wantEqual(t, "by public desc", names(store.RunbookQuery{SortKey: "public", SortDir: "desc"}),
		[]string{"CUSTOM_B", "CUSTOM_D", "CUSTOM_A", "CUSTOM_C"})

	page, err := s.Runbooks().ListRunbooks(ctx, store.RunbookQuery{SortKey: "name", SortDir: "desc", Limit: 3})
	wantErr(t, "page 1", err, nil)
	wantEqual(t, "page 1 length", len(page), 3)
	wantEqual(t, "page 2", names(store.RunbookQuery{SortKey: "name", SortDir: "desc", Limit: 3, Marker: page[2].UUID}),
		[]string{"CUSTOM_A"})
	_, err = s.Runbooks().ListRunbooks(ctx, store.RunbookQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown marker", err, store.ErrNotFound)
}
