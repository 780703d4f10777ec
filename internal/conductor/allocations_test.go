package conductor_test

import (
	"context"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// availableNode stores an available, powered node of resource class rc.
func availableNode(t *testing.T, st conductor.Store, name, rc string) *model.Node {
	t.Helper()
	n := &model.Node{Name: name, Driver: "fake-hardware", ProvisionState: "available", PowerState: "power off",
		ResourceClass: rc, Interfaces: model.Interfaces{Network: "flat"}}
	if err := st.Nodes().CreateNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) allocation(id string) *model.Allocation {
	e.t.Helper()
	a, err := e.st.Allocations().GetAllocation(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func TestAllocationResumedOnStart(t *testing.T) {
	var n *model.Node
	a := &model.Allocation{State: model.AllocationAllocating, ResourceClass: "gpu", ConductorAffinity: "test-conductor"}
	e := newEnv(t, func(cfg *conductor.Config) {
		n = availableNode(t, cfg.Store, "n1", "gpu")
		if err := cfg.Store.Allocations().CreateAllocation(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	})
	e.c.WaitIdle()
	if got := e.allocation(a.UUID); got.State != model.AllocationActive || got.NodeUUID != n.UUID {
		t.Fatalf("resumed allocation %+v", got)
	}
	if got := e.get(n.UUID); got.AllocationUUID != a.UUID || got.InstanceUUID != a.UUID || got.Reservation != "" {
		t.Fatalf("node %+v", got)
	}
}

func TestAllocationTakenOverFromDeadConductor(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, func(cfg *conductor.Config) { cfg.Now = func() time.Time { return now } })
	n := availableNode(t, e.st, "n1", "gpu")
	if err := e.st.Conductors().RegisterConductor(e.ctx, &model.Conductor{Hostname: "dead-host"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Conductors().HeartbeatConductor(e.ctx, "dead-host", now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	a := &model.Allocation{State: model.AllocationAllocating, ResourceClass: "gpu", ConductorAffinity: "dead-host"}
	if err := e.st.Allocations().CreateAllocation(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := e.c.BreakDeadLocks(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	got := e.allocation(a.UUID)
	if got.State != model.AllocationActive || got.NodeUUID != n.UUID || got.ConductorAffinity != "test-conductor" {
		t.Fatalf("taken over allocation %+v", got)
	}
}

func TestAllocationLockedNode(t *testing.T) {
	e := newEnv(t, nil)
	n := availableNode(t, e.st, "n1", "gpu")
	if _, err := e.st.Nodes().ReserveNode(e.ctx, n.UUID, "other-host"); err != nil {
		t.Fatal(err)
	}
	a := &model.Allocation{ResourceClass: "gpu"}
	if err := e.c.Allocations().CreateAllocation(e.ctx, a, ""); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	got := e.allocation(a.UUID)
	want := "Failed to process allocation " + a.UUID + ": could not reserve any of 1 suitable nodes."
	if got.State != model.AllocationError || got.LastError != want || got.NodeUUID != "" {
		t.Fatalf("allocation %+v, want error %q", got, want)
	}
	if got := e.get(n.UUID); got.InstanceUUID != "" || got.AllocationUUID != "" {
		t.Fatalf("locked node changed: %+v", got)
	}
}

func TestTearDownReleasesAllocationAndVIFs(t *testing.T) {
	e := newEnv(t, nil)
	n := &model.Node{Name: "n1", Driver: "fake-hardware", ResourceClass: "gpu", Interfaces: model.Interfaces{Network: "flat"}}
	if err := e.c.Nodes().CreateNode(e.ctx, n, true); err != nil {
		t.Fatal(err)
	}
	n = e.get(n.UUID)
	n.PowerState = "power off"
	if err := e.st.Nodes().UpdateNode(e.ctx, n); err != nil {
		t.Fatal(err)
	}
	port := &model.Port{NodeUUID: n.UUID, Address: "52:54:00:00:00:01", PXEEnabled: true}
	if err := e.c.NodeRecords().CreatePort(e.ctx, port); err != nil {
		t.Fatal(err)
	}
	a := &model.Allocation{ResourceClass: "gpu"}
	if err := e.c.Allocations().CreateAllocation(e.ctx, a, ""); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if err := e.c.NodeRecords().AttachVIF(e.ctx, n.UUID, conductor.VIFRequest{ID: "vif-1"}); err != nil {
		t.Fatal(err)
	}
	e.must(n.UUID, "active", "active")
	if vifs, err := e.c.NodeRecords().ListVIFs(e.ctx, n.UUID); err != nil || len(vifs) != 1 {
		t.Fatalf("vifs before tear down %v, %v", vifs, err)
	}
	e.must(n.UUID, "deleted", "available")
	got := e.get(n.UUID)
	if got.AllocationUUID != "" || got.InstanceUUID != "" {
		t.Fatalf("node after tear down: allocation %q instance %q", got.AllocationUUID, got.InstanceUUID)
	}
	if _, err := e.st.Allocations().GetAllocation(e.ctx, a.UUID); err == nil {
		t.Fatal("allocation survived the tear down")
	}
	if vifs, err := e.c.NodeRecords().ListVIFs(e.ctx, n.UUID); err != nil || len(vifs) != 0 {
		t.Fatalf("vifs after tear down %v, %v", vifs, err)
	}
}

// racingStore saves the allocation once behind the caller's back (as the
// allocating worker does) just before the caller's first save, which then
// fails as stale.
type racingStore struct {
	conductor.Store
	raced bool
}

func (s *racingStore) Allocations() store.AllocationStore {
	return racingAllocations{s.Store.Allocations(), s}
}

// racingAllocations is the allocation store that races s's first save.
type racingAllocations struct {
	store.AllocationStore
	s *racingStore
}

func (r racingAllocations) UpdateAllocation(ctx context.Context, a *model.Allocation) error {
	if s := r.s; !s.raced {
		s.raced = true
		other, err := r.AllocationStore.GetAllocation(ctx, a.UUID)
		if err != nil {
			return err
		}
		other.LastError = "saved by the worker"
		if err := r.AllocationStore.UpdateAllocation(ctx, other); err != nil {
			return err
		}
	}
	return r.AllocationStore.UpdateAllocation(ctx, a)
}

// TestUpdateAllocationRacingWorker: a PATCH racing the allocating worker's
// save is applied to the fresh record instead of failing with 409, and
// keeps what the worker saved.
func TestUpdateAllocationRacingWorker(t *testing.T) {
	rs := &racingStore{}
	a := &model.Allocation{State: model.AllocationError, ResourceClass: "gpu", Name: "a1"}
	e := newEnv(t, func(cfg *conductor.Config) {
		rs.Store = cfg.Store
		cfg.Store = rs
		if err := rs.Store.Allocations().CreateAllocation(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	})
	got, err := e.c.Allocations().UpdateAllocation(e.ctx, a.UUID, func(a *model.Allocation) error {
		a.Extra = map[string]any{"foo": "bar"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rs.raced || got.Extra["foo"] != "bar" {
		t.Fatalf("raced=%v got %+v", rs.raced, got)
	}
	if saved := e.allocation(a.UUID); saved.Extra["foo"] != "bar" || saved.LastError != "saved by the worker" {
		t.Fatalf("saved %+v", saved)
	}
}
