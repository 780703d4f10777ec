package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testNodes(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"create sets id, version and created_at", createSetsFields},
		{"create keeps a given uuid and created_at, normalised", createKeepsGiven},
		{"create fills in an empty uuid", createFillsUUID},
		{"create duplicate", createDuplicate},
		{"empty name and instance_uuid are not unique", emptyUniquesAreNull},
		{"get by uuid or name", getNode},
		{"json round trip of every field", nodeJSONRoundTrip},
		{"time round trip", nodeTimeRoundTrip},
		{"update bumps version and sets updated_at", updateNode},
		{"update with a stale version", updateStale},
		{"update unknown node", updateUnknown},
		{"update to a duplicate", updateDuplicate},
		{"update never writes reservation", updateKeepsReservation},
		{"delete cascades to ports and history", deleteCascades},
		{"delete unknown node", deleteUnknown},
	})
}

func createSetsFields(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Second)
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	if a.ID <= 0 || b.ID <= a.ID {
		t.Fatalf("ids %d, %d: want positive and increasing", a.ID, b.ID)
	}
	if a.Version != 1 {
		t.Fatalf("version %d, want 1", a.Version)
	}
	if a.CreatedAt.Before(before) || a.CreatedAt.Location() != time.UTC ||
		a.CreatedAt.Nanosecond()%1000 != 0 {
		t.Fatalf("created_at %v: want now, UTC, microseconds", a.CreatedAt)
	}
	wantEqual(t, "stored node", mustGetNode(t, s, a.UUID), a)
}

func createKeepsGiven(t *testing.T, s store.Store) {
	n := newNode("a")
	id, created := n.UUID, stamp(0)
	n.CreatedAt = created
	mustCreateNode(t, s, n)
	if n.UUID != id || !n.CreatedAt.Equal(stored(created)) || n.CreatedAt.Location() != time.UTC {
		t.Fatalf("uuid %s created_at %v, want %s %v", n.UUID, n.CreatedAt, id, stored(created))
	}
}

func createFillsUUID(t *testing.T, s store.Store) {
	n := newNode("a")
	n.UUID = ""
	mustCreateNode(t, s, n)
	if _, err := uuid.Parse(n.UUID); err != nil {
		t.Fatalf("uuid %q: %v", n.UUID, err)
	}
	mustGetNode(t, s, n.UUID)
}

func createDuplicate(t *testing.T, s store.Store) {
	first := newNode("taken")
	first.InstanceUUID = uuid.NewString()
	mustCreateNode(t, s, first)
	cases := []struct {
		name, field, value string
		edit               func(n *model.Node)
	}{
		{"uuid", "uuid", first.UUID, func(n *model.Node) { n.UUID = first.UUID }},
		{"name", "name", "taken", func(n *model.Node) { n.Name = "taken" }},
		{"instance_uuid", "instance_uuid", first.InstanceUUID,
			func(n *model.Node) { n.InstanceUUID = first.InstanceUUID }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newNode("other-" + c.name)
			c.edit(n)
			wantDuplicate(t, "CreateNode", s.Nodes().CreateNode(t.Context(), n), c.field, c.value)
		})
	}
	if got, err := s.Nodes().CountNodes(t.Context(), store.NodeQuery{}); err != nil || got != 1 {
		t.Fatalf("CountNodes = %d, %v; want 1: a failed create must write nothing", got, err)
	}
}

func emptyUniquesAreNull(t *testing.T, s store.Store) {
	for range 3 {
		mustCreateNode(t, s, newNode(""))
	}
	if got, err := s.Nodes().CountNodes(t.Context(), store.NodeQuery{}); err != nil || got != 3 {
		t.Fatalf("CountNodes = %d, %v; want 3", got, err)
	}
}

func getNode(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("web-1"))
	cases := []struct {
		name, ident string
		want        error
	}{
		{"by uuid", n.UUID, nil},
		{"by name", "web-1", nil},
		{"unknown uuid", uuid.NewString(), store.ErrNotFound},
		{"unknown name", "web-2", store.ErrNotFound},
		{"name is not a uuid", "", store.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Nodes().GetNode(t.Context(), c.ident)
			wantErr(t, "GetNode", err, c.want)
			if c.want == nil {
				wantEqual(t, "node", got, n)
			}
		})
	}
}

func nodeJSONRoundTrip(t *testing.T, s store.Store) {
	n := fullNode()
	allSet(t, n, "ID", "Version", "Reservation", "Conductor")
	n.Conductor = "not-stored"
	mustCreateNode(t, s, n)
	n.Conductor = ""
	wantEqual(t, "by uuid", mustGetNode(t, s, n.UUID), n)
	wantEqual(t, "by name", mustGetNode(t, s, n.Name), n)
	list, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{})
	wantErr(t, "ListNodes", err, nil)
	wantEqual(t, "listed", list, []*model.Node{n})

	reserved, err := s.Nodes().ReserveNode(t.Context(), n.UUID, "c1")
	wantErr(t, "ReserveNode", err, nil)
	n.Reservation = "c1"
	wantEqual(t, "reserved", reserved, n)
	wantEqual(t, "reserved, read", mustGetNode(t, s, n.UUID), n)
}

func nodeTimeRoundTrip(t *testing.T, s store.Store) {
	n := newNode("t")
	n.CreatedAt, n.ProvisionUpdatedAt, n.InspectionStartedAt = stamp(0), stamp(1), stamp(2)
	want := map[string]time.Time{"created": stored(stamp(0)), "provision_updated": stored(stamp(1)),
		"inspection_started": stored(stamp(2))}
	mustCreateNode(t, s, n)
	got := mustGetNode(t, s, n.UUID)
	wantEqual(t, "node", got, n)
	for name, ts := range map[string]time.Time{"created": got.CreatedAt,
		"provision_updated": got.ProvisionUpdatedAt, "inspection_started": got.InspectionStartedAt} {
		if !ts.Equal(want[name]) || ts.Location() != time.UTC || ts != want[name] {
			t.Errorf("%s_at = %v, want %v", name, ts, want[name])
		}
	}
	if !got.UpdatedAt.IsZero() || !got.InspectionFinishedAt.IsZero() {
		t.Errorf("zero times came back as %v, %v", got.UpdatedAt, got.InspectionFinishedAt)
	}
}

func updateNode(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("u"))
	before := time.Now().Add(-time.Second)
	n.ProvisionState, n.Extra, n.Name = "manageable", model.JSON{"k": "v"}, "renamed"
	wantErr(t, "UpdateNode", s.Nodes().UpdateNode(t.Context(), n), nil)
	if n.Version != 2 || n.UpdatedAt.Before(before) || n.UpdatedAt.Location() != time.UTC {
		t.Fatalf("after update version %d updated_at %v", n.Version, n.UpdatedAt)
	}
	wantEqual(t, "stored", mustGetNode(t, s, "renamed"), n)
	wantErr(t, "old name", func() error { _, err := s.Nodes().GetNode(t.Context(), "u"); return err }(),
		store.ErrNotFound)
}

func updateStale(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("o"))
	a, b := mustGetNode(t, s, n.UUID), mustGetNode(t, s, n.UUID)
	a.Extra = model.JSON{"writer": "a"}
	wantErr(t, "first update", s.Nodes().UpdateNode(t.Context(), a), nil)
	b.Extra = model.JSON{"writer": "b"}
	wantErr(t, "second update", s.Nodes().UpdateNode(t.Context(), b), store.ErrStale)
	if b.Version != 1 || !b.UpdatedAt.IsZero() {
		t.Fatalf("failed update changed the struct: version %d updated_at %v", b.Version, b.UpdatedAt)
	}
	wantEqual(t, "stored", mustGetNode(t, s, n.UUID), a)
}

func updateUnknown(t *testing.T, s store.Store) {
	n := newNode("ghost")
	n.Version = 1
	wantErr(t, "UpdateNode", s.Nodes().UpdateNode(t.Context(), n), store.ErrNotFound)
}

func updateDuplicate(t *testing.T, s store.Store) {
	mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	b.Name = "a"
	wantDuplicate(t, "UpdateNode", s.Nodes().UpdateNode(t.Context(), b), "name", "a")
	if b.Version != 1 {
		t.Fatalf("failed update bumped version to %d", b.Version)
	}
	if got := mustGetNode(t, s, b.UUID); got.Name != "b" {
		t.Fatalf("stored name %q after failed update", got.Name)
	}
}

func updateKeepsReservation(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("r"))
	stale := mustGetNode(t, s, n.UUID) // read before the lock: Reservation ""
	locked, err := s.Nodes().ReserveNode(t.Context(), n.UUID, "c1")
	wantErr(t, "ReserveNode", err, nil)
	locked.Reservation = "someone-else"
	wantErr(t, "UpdateNode", s.Nodes().UpdateNode(t.Context(), locked), nil)
	if got := mustGetNode(t, s, n.UUID); got.Reservation != "c1" {
		t.Fatalf("reservation %q after update with another value, want c1", got.Reservation)
	}
	stale.Version = locked.Version
	wantErr(t, "UpdateNode", s.Nodes().UpdateNode(t.Context(), stale), nil)
	if got := mustGetNode(t, s, n.UUID); got.Reservation != "c1" {
		t.Fatalf("reservation %q after update without one, want c1", got.Reservation)
	}
}

func deleteCascades(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("d"))
	other := mustCreateNode(t, s, newNode("keep"))
	p := mustCreatePort(t, s, newPort(n.UUID, "52:54:00:00:00:01"))
	kept := mustCreatePort(t, s, newPort(other.UUID, "52:54:00:00:00:02"))
	for _, node := range []string{n.UUID, other.UUID} {
		e := &model.HistoryEvent{NodeUUID: node, Event: "x", Severity: model.SeverityInfo}
		wantErr(t, "AddHistory", s.Nodes().AddHistory(ctx, e, 0), nil)
	}
	wantErr(t, "DeleteNode", s.Nodes().DeleteNode(ctx, n.UUID), nil)
	_, err := s.Nodes().GetNode(ctx, n.UUID)
	wantErr(t, "GetNode", err, store.ErrNotFound)
	_, err = s.Ports().GetPort(ctx, p.UUID)
	wantErr(t, "GetPort", err, store.ErrNotFound)
	_, err = s.Ports().GetPortByAddress(ctx, p.Address)
	wantErr(t, "GetPortByAddress", err, store.ErrNotFound)
	if evs, err := s.Nodes().ListHistory(ctx, n.UUID); err != nil || len(evs) != 0 {
		t.Fatalf("ListHistory of deleted node = %v, %v", evs, err)
	}
	if evs, err := s.Nodes().ListHistory(ctx, other.UUID); err != nil || len(evs) != 1 {
		t.Fatalf("ListHistory of other node = %v, %v", evs, err)
	}
	mustGetNode(t, s, other.UUID)
	if _, err := s.Ports().GetPort(ctx, kept.UUID); err != nil {
		t.Fatalf("other node's port: %v", err)
	}
	// The name and the address are free again.
	n2 := mustCreateNode(t, s, newNode("d"))
	mustCreatePort(t, s, newPort(n2.UUID, p.Address))
}

func deleteUnknown(t *testing.T, s store.Store) {
	wantErr(t, "DeleteNode", s.Nodes().DeleteNode(t.Context(), uuid.NewString()), store.ErrNotFound)
}
