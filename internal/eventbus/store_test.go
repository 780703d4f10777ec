package eventbus

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"

	"github.com/anvil-metal/anvil/pkg/events"
)

func newTestStore(t *testing.T) (store.Store, *Broker, Publisher) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := newTestBroker(Config{})
	return st, b, Store(st, b)
}

// want is an expected event: its type and changed fields.
type want struct {
	typ     string
	changed []string
}

// TestStorePublishes drives a node through the decorator, one write per
// step, and checks the events each write publishes.
func TestStorePublishes(t *testing.T) {
	ctx := context.Background()
	_, b, p := newTestStore(t)
	sub := b.Subscribe(events.Filter{Types: []string{events.TypeCreated, events.TypeUpdated, events.TypeDeleted, events.TypeHistory}})
	defer sub.Close()
	n := &model.Node{UUID: "2b1b3c4d-0000-4000-8000-000000000001", Name: "web1", Driver: "fake-hardware",
		ProvisionState: "enroll"}
	update := func(mod func(n *model.Node)) func() error {
		return func() error {
			cur, err := p.Nodes().GetNode(ctx, n.UUID)
			if err != nil {
				return err
			}
			mod(cur)
			return p.Nodes().UpdateNode(ctx, cur)
		}
	}
	steps := []struct {
		name string
		do   func() error
		want []want
	}{
		{"create", func() error { return p.Nodes().CreateNode(ctx, n) }, []want{{typ: events.TypeCreated}}},
		{"lock", func() error { _, err := p.Nodes().ReserveNode(ctx, n.UUID, "c1"); return err },
			[]want{{events.TypeUpdated, []string{events.FieldReservation}}}},
		{"transition", update(func(n *model.Node) { n.ProvisionState, n.TargetProvisionState = "verifying", "manageable" }),
			[]want{{events.TypeUpdated, []string{events.FieldProvisionState, events.FieldTargetProvisionState}}}},
		{"unwatched field", update(func(n *model.Node) { n.Extra = model.JSON{"rack": "r1"} }), nil},
		{"history", func() error {
			return p.Nodes().AddHistory(ctx, &model.HistoryEvent{NodeUUID: n.UUID, Severity: model.SeverityInfo,
				EventType: "provisioning", FromState: "enroll", ToState: "verifying", Trigger: "manage"}, 10)
		}, []want{{typ: events.TypeHistory}}},
		{"unlock", func() error { return p.Nodes().ReleaseNode(ctx, n.UUID, "c1") },
			[]want{{events.TypeUpdated, []string{events.FieldReservation}}}},
		{"unlock again", func() error { return p.Nodes().ReleaseNode(ctx, n.UUID, "c1") }, nil},
		{"rename and maintenance", update(func(n *model.Node) { n.Name, n.Maintenance, n.MaintenanceReason = "web2", true, "disk" }),
			[]want{{events.TypeUpdated, []string{events.FieldName, events.FieldMaintenance, events.FieldMaintenanceReason}}}},
		{"lock and release host", func() error {
			if _, err := p.Nodes().ReserveNode(ctx, n.UUID, "c2"); err != nil {
				return err
			}
			_, err := p.Nodes().ReleaseHost(ctx, "c2")
			return err
		}, []want{{events.TypeUpdated, []string{events.FieldReservation}}, {events.TypeUpdated, []string{events.FieldReservation}}}},
		{"failed lock publishes nothing", func() error {
			if _, err := p.Nodes().ReserveNode(ctx, n.UUID, "c3"); err != nil {
				return err
			}
			if _, err := p.Nodes().ReserveNode(ctx, n.UUID, "c4"); err == nil {
				t.Error("second lock succeeded")
			}
			return p.Nodes().ReleaseNode(ctx, n.UUID, "c3")
		}, []want{{events.TypeUpdated, []string{events.FieldReservation}}, {events.TypeUpdated, []string{events.FieldReservation}}}},
		{"stale write publishes nothing", func() error {
			stale, _ := p.Nodes().GetNode(ctx, n.UUID)
			if err := update(func(n *model.Node) { n.LastError = "boom" })(); err != nil {
				return err
			}
			stale.PowerState = "power on"
			if err := p.Nodes().UpdateNode(ctx, stale); err == nil {
				t.Error("stale write succeeded")
			}
			return nil
		}, []want{{events.TypeUpdated, []string{events.FieldLastError}}}},
		{"delete", func() error { return p.Nodes().DeleteNode(ctx, n.UUID) }, []want{{typ: events.TypeDeleted}}},
		{"delete again publishes nothing", func() error {
			if err := p.Nodes().DeleteNode(ctx, n.UUID); err == nil {
				t.Error("second delete succeeded")
			}
			return nil
		}, nil},
	}
	var prev *events.NodeState
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got, _, _ := sub.Take(nil)
		if len(got) != len(step.want) {
			t.Fatalf("%s: published %d events (%+v), want %d", step.name, len(got), got, len(step.want))
		}
		for i, w := range step.want {
			e := got[i]
			if e.Type != w.typ || !slices.Equal(e.Changed, w.changed) || e.Node != n.UUID {
				t.Fatalf("%s: event %d is %s %v for %s, want %s %v", step.name, i, e.Type, e.Changed, e.Node, w.typ, w.changed)
			}
			if e.Type == events.TypeUpdated {
				// Each update starts where the previous one ended (but for
				// updated_at: unwatched writes move it without an event).
				if prev != nil && !sameState(*e.Previous, *prev) {
					t.Fatalf("%s: previous %+v, want %+v", step.name, *e.Previous, *prev)
				}
			}
			if e.State != nil {
				prev = e.State
			}
		}
	}
}

// TestStoreFirstWriteSeen: a node written before the decorator saw it (a
// previous run) still gets a correct diff.
func TestStoreFirstWriteSeen(t *testing.T) {
	ctx := context.Background()
	raw, b, p := newTestStore(t)
	n := &model.Node{UUID: "2b1b3c4d-0000-4000-8000-000000000002", Driver: "fake-hardware", ProvisionState: "available"}
	if err := raw.Nodes().CreateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	sub := b.Subscribe(events.Filter{})
	defer sub.Close()
	n.PowerState = "power on"
	if err := p.Nodes().UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	got, _, _ := sub.Take(nil)
	if len(got) != 1 || !slices.Equal(got[0].Changed, []string{events.FieldPowerState}) || got[0].Previous.ProvisionState != "available" {
		t.Fatalf("got %+v", got)
	}
}

func sameState(a, b events.NodeState) bool {
	a.UpdatedAt = b.UpdatedAt
	return a == b
}

// TestStoreProjects: events carry the node's owner and lessee (for
// project-scoped streams), a move between projects is published although
// no watched field changed, and history carries the owner.
func TestStoreProjects(t *testing.T) {
	ctx := context.Background()
	_, b, p := newTestStore(t)
	sub := b.Subscribe(events.Filter{Types: []string{events.TypeCreated, events.TypeUpdated, events.TypeHistory}})
	defer sub.Close()
	n := &model.Node{UUID: "2b1b3c4d-0000-4000-8000-000000000009", Driver: "fake-hardware", ProvisionState: "enroll", Owner: "p1"}
	if err := p.Nodes().CreateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	cur, _ := p.Nodes().GetNode(ctx, n.UUID)
	cur.Owner, cur.Lessee = "p2", "p3"
	if err := p.Nodes().UpdateNode(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := p.Nodes().AddHistory(ctx, &model.HistoryEvent{NodeUUID: n.UUID, Severity: model.SeverityInfo, EventType: "x"}, 10); err != nil {
		t.Fatal(err)
	}
	got, _, _ := sub.Take(nil)
	if len(got) != 3 {
		t.Fatalf("published %+v", got)
	}
	if got[0].State.Owner != "p1" {
		t.Errorf("created: owner %q", got[0].State.Owner)
	}
	if u := got[1]; u.Type != events.TypeUpdated || len(u.Changed) != 0 || u.Previous.Owner != "p1" || u.State.Owner != "p2" || u.State.Lessee != "p3" {
		t.Errorf("the move: %+v %+v %+v", u, u.Previous, u.State)
	}
	if h := got[2].History; h == nil || h.Owner != "p2" {
		t.Errorf("history: %+v", h)
	}
}
