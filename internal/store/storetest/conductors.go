package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testConductors(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"register, heartbeat, unregister", conductorLifecycle},
		{"errors", conductorErrors},
		{"list", listConductors},
	})
}

func conductorLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := time.Now().Add(-time.Second)
	c := &model.Conductor{Hostname: "c1", ConductorGroup: "west", Drivers: []string{"ipmi", "redfish"}}
	wantErr(t, "RegisterConductor", s.Conductors().RegisterConductor(ctx, c), nil)
	if !c.Online || c.CreatedAt.Before(before) || !c.UpdatedAt.Equal(c.CreatedAt) {
		t.Fatalf("registered: %+v", c)
	}
	got, err := s.Conductors().GetConductor(ctx, "c1")
	wantErr(t, "GetConductor", err, nil)
	wantEqual(t, "stored", got, c)

	created := c.CreatedAt
	wantErr(t, "Unregister", s.Conductors().UnregisterConductor(ctx, "c1"), nil)
	if got, _ := s.Conductors().GetConductor(ctx, "c1"); got.Online {
		t.Fatal("online after UnregisterConductor")
	}
	again := &model.Conductor{Hostname: "c1", ConductorGroup: "east", Drivers: []string{"fake-hardware"}}
	wantErr(t, "RegisterConductor again", s.Conductors().RegisterConductor(ctx, again), nil)
	if !again.CreatedAt.Equal(created) || again.UpdatedAt.Before(created) || !again.Online {
		t.Fatalf("re-registered: %+v; want created_at kept (%v), online", again, created)
	}
	got, _ = s.Conductors().GetConductor(ctx, "c1")
	wantEqual(t, "stored after re-register", got, again)

	beat := stamp(48)
	wantErr(t, "HeartbeatConductor", s.Conductors().HeartbeatConductor(ctx, "c1", beat), nil)
	got, _ = s.Conductors().GetConductor(ctx, "c1")
	if got.UpdatedAt != stored(beat) || !got.CreatedAt.Equal(created) {
		t.Fatalf("after heartbeat: updated_at %v created_at %v; want %v, %v",
			got.UpdatedAt, got.CreatedAt, stored(beat), created)
	}
}

func conductorErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Conductors().GetConductor(ctx, "nope")
	wantErr(t, "GetConductor", err, store.ErrNotFound)
	wantErr(t, "HeartbeatConductor", s.Conductors().HeartbeatConductor(ctx, "nope", time.Now()), store.ErrNotFound)
	wantErr(t, "UnregisterConductor", s.Conductors().UnregisterConductor(ctx, "nope"), store.ErrNotFound)
}

func listConductors(t *testing.T, s store.Store) {
	ctx := t.Context()
	if cs, err := s.Conductors().ListConductors(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("ListConductors on an empty store = %v, %v", cs, err)
	}
	var want []*model.Conductor
	for _, h := range []string{"b", "c", "a"} {
		c := &model.Conductor{Hostname: h, Drivers: []string{"d-" + h}}
		if h == "c" {
			c.Drivers = nil
		}
		wantErr(t, "RegisterConductor", s.Conductors().RegisterConductor(ctx, c), nil)
		want = append(want, c)
	}
	cs, err := s.Conductors().ListConductors(ctx)
	wantErr(t, "ListConductors", err, nil)
	wantEqual(t, "conductors", cs, []*model.Conductor{want[2], want[0], want[1]})
}

func testHistory(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"add, list, get", historyRoundTrip},
		{"pruning keeps the newest", historyPruning},
		{"errors", historyErrors},
	})
}

func historyRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("h"))
	full := &model.HistoryEvent{UUID: uuid.NewString(), NodeUUID: n.UUID, CreatedAt: stamp(0),
		Severity: model.SeverityError, EventType: "provisioning", Event: "deploy failed: boom",
		Conductor: "c1", User: "admin", FromState: "deploying", ToState: "deploy failed",
		Trigger: "fail", Duration: 90*time.Second + 123*time.Nanosecond,
		Project: "p1", State: "deploy failed", TargetProvisionState: "active", DurationSeconds: new(int64(90))}
	allSet(t, full, "ID")
	wantErr(t, "AddHistory", s.Nodes().AddHistory(ctx, full, 10), nil)
	if full.ID <= 0 || full.CreatedAt != stored(stamp(0)) {
		t.Fatalf("added: id %d created_at %v", full.ID, full.CreatedAt)
	}
	later := &model.HistoryEvent{NodeUUID: n.UUID, Event: "later", Severity: model.SeverityInfo}
	wantErr(t, "AddHistory", s.Nodes().AddHistory(ctx, later, 10), nil)
	if later.UUID == "" || later.CreatedAt.IsZero() || later.ID <= full.ID {
		t.Fatalf("defaults not set: %+v", later)
	}
	evs, err := s.Nodes().ListHistory(ctx, n.UUID)
	wantErr(t, "ListHistory", err, nil)
	wantEqual(t, "events", evs, []*model.HistoryEvent{full, later})
	got, err := s.Nodes().GetHistory(ctx, n.UUID, full.UUID)
	wantErr(t, "GetHistory", err, nil)
	wantEqual(t, "event", got, full)
}

func historyPruning(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("h"))
	other := mustCreateNode(t, s, newNode("other"))
	otherEv := &model.HistoryEvent{NodeUUID: other.UUID, Event: "keep me", CreatedAt: stamp(-100)}
	wantErr(t, "AddHistory", s.Nodes().AddHistory(ctx, otherEv, 1), nil)
	// Added out of time order: pruning keeps the newest by created_at.
	hours := []int{5, 1, 9, 3, 7, 0, 8, 2, 6, 4}
	for i, h := range hours {
		e := &model.HistoryEvent{NodeUUID: n.UUID, Event: fmt.Sprint(h), CreatedAt: stamp(h)}
		keep := 0 // no pruning until the last one
		if i == len(hours)-1 {
			keep = 4
		}
		wantErr(t, "AddHistory", s.Nodes().AddHistory(ctx, e, keep), nil)
	}
	evs, err := s.Nodes().ListHistory(ctx, n.UUID)
	wantErr(t, "ListHistory", err, nil)
	var got []string
	for _, e := range evs {
		got = append(got, e.Event)
	}
	wantEqual(t, "kept events, oldest first", got, []string{"6", "7", "8", "9"})
	if evs, _ := s.Nodes().ListHistory(ctx, other.UUID); len(evs) != 1 {
		t.Fatalf("pruning one node touched another: %d events left", len(evs))
	}
}

func historyErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("h"))
	other := mustCreateNode(t, s, newNode("other"))
	e := &model.HistoryEvent{NodeUUID: n.UUID, Event: "x"}
	wantErr(t, "AddHistory", s.Nodes().AddHistory(ctx, e, 0), nil)

	ghost := &model.HistoryEvent{NodeUUID: uuid.NewString(), Event: "x"}
	wantErr(t, "AddHistory to unknown node", s.Nodes().AddHistory(ctx, ghost, 0), store.ErrNotFound)
	dup := &model.HistoryEvent{UUID: e.UUID, NodeUUID: n.UUID, Event: "y"}
	wantDuplicate(t, "AddHistory duplicate", s.Nodes().AddHistory(ctx, dup, 1), "uuid", e.UUID)
	if evs, _ := s.Nodes().ListHistory(ctx, n.UUID); len(evs) != 1 {
		t.Fatalf("failed AddHistory changed the history: %d events", len(evs))
	}
	_, err := s.Nodes().GetHistory(ctx, n.UUID, uuid.NewString())
	wantErr(t, "GetHistory unknown event", err, store.ErrNotFound)
	_, err = s.Nodes().GetHistory(ctx, other.UUID, e.UUID)
	wantErr(t, "GetHistory of another node", err, store.ErrNotFound)
	if evs, err := s.Nodes().ListHistory(ctx, uuid.NewString()); err != nil || len(evs) != 0 {
		t.Fatalf("ListHistory of unknown node = %v, %v", evs, err)
	}
}
