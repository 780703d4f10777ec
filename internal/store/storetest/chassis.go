package storetest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testChassis(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip", chassisRoundTrip},
		{"nodes keep their chassis", chassisWithNodes},
	})
}

func chassisRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := &model.Chassis{Description: "rack 1", Extra: model.JSON{"k": "v"}}
	wantErr(t, "create", s.Chassis().CreateChassis(ctx, c), nil)
	if c.UUID == "" || c.ID == 0 || c.Version != 1 || c.CreatedAt.IsZero() {
		t.Fatalf("create did not fill uuid, id, version, created_at: %+v", c)
	}
	got, err := s.Chassis().GetChassis(ctx, c.UUID)
	wantErr(t, "get", err, nil)
	wantEqual(t, "round trip", got, c)
	wantDuplicate(t, "same uuid", s.Chassis().CreateChassis(ctx, &model.Chassis{UUID: c.UUID}), "uuid", c.UUID)
	got.Description = "rack 2"
	wantErr(t, "update", s.Chassis().UpdateChassis(ctx, got), nil)
	if got.Version != 2 || got.UpdatedAt.IsZero() {
		t.Fatalf("update: %+v", got)
	}
	stale := *c
	wantErr(t, "stale", s.Chassis().UpdateChassis(ctx, &stale), store.ErrStale)
	second := &model.Chassis{}
	wantErr(t, "create second", s.Chassis().CreateChassis(ctx, second), nil)
	list, err := s.Chassis().ListChassis(ctx, store.ChassisQuery{SortDir: "desc", Limit: 1})
	wantErr(t, "list", err, nil)
	if len(list) != 1 || list[0].UUID != second.UUID {
		t.Fatalf("list desc limit 1 = %+v", list)
	}
	list, err = s.Chassis().ListChassis(ctx, store.ChassisQuery{SortDir: "desc", Marker: second.UUID})
	wantErr(t, "list after marker", err, nil)
	if len(list) != 1 || list[0].UUID != c.UUID || list[0].Description != "rack 2" {
		t.Fatalf("second page = %+v", list)
	}
	wantErr(t, "delete", s.Chassis().DeleteChassis(ctx, c.UUID), nil)
	_, err = s.Chassis().GetChassis(ctx, c.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete again", s.Chassis().DeleteChassis(ctx, c.UUID), store.ErrNotFound)
	_, err = s.Chassis().ListChassis(ctx, store.ChassisQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown marker", err, store.ErrNotFound)
}

func chassisWithNodes(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := &model.Chassis{}
	wantErr(t, "create", s.Chassis().CreateChassis(ctx, c), nil)
	n := newNode("in")
	n.ChassisUUID = c.UUID
	mustCreateNode(t, s, n)
	mustCreateNode(t, s, newNode("out"))
	in, err := s.Nodes().ListNodes(ctx, store.NodeQuery{ChassisUUID: c.UUID})
	wantErr(t, "list by chassis", err, nil)
	if len(in) != 1 || in[0].UUID != n.UUID {
		t.Fatalf("nodes of the chassis = %d", len(in))
	}
	wantErr(t, "delete with a node", s.Chassis().DeleteChassis(ctx, c.UUID), store.ErrChassisNotEmpty)
	got := mustGetNode(t, s, n.UUID)
	got.ChassisUUID = ""
	wantErr(t, "unlink", s.Nodes().UpdateNode(ctx, got), nil)
	if count, _ := s.Nodes().CountNodes(ctx, store.NodeQuery{ChassisUUID: c.UUID}); count != 0 {
		t.Fatalf("count after unlink = %d", count)
	}
	wantErr(t, "delete emptied", s.Chassis().DeleteChassis(ctx, c.UUID), nil)
}
