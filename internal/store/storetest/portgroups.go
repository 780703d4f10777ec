package storetest

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testPortgroups(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip, update, delete", portgroupRoundTrip},
		{"errors", portgroupErrors},
		{"list", listPortgroups},
		{"go with their node", portgroupsGoWithNode},
	})
}

func fullPortgroup(node string) *model.Portgroup {
	return &model.Portgroup{
		UUID: uuid.NewString(), Name: "bond0", Address: "52:54:00:aa:bb:01", NodeUUID: node,
		Extra: model.JSON{"k": "v"}, InternalInfo: model.JSON{"tenant_vif_port_id": "vif"},
		Mode: "802.3ad", Properties: model.JSON{"miimon": "100"}, StandalonePortsSupported: true,
		PhysicalNetwork: "physnet1", Category: "bond", DynamicPortgroup: true, CreatedAt: stamp(0), UpdatedAt: stamp(1),
	}
}

func portgroupRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	pg := fullPortgroup(n.UUID)
	allSet(t, pg, "ID", "Version")
	wantErr(t, "CreatePortgroup", s.Ports().CreatePortgroup(ctx, pg), nil)
	if pg.ID <= 0 || pg.Version != 1 {
		t.Fatalf("created: id %d version %d", pg.ID, pg.Version)
	}
	for _, ident := range []string{pg.UUID, "bond0"} {
		got, err := s.Ports().GetPortgroup(ctx, ident)
		wantErr(t, "GetPortgroup "+ident, err, nil)
		wantEqual(t, "GetPortgroup "+ident, got, pg)
	}
	stale := *pg
	pg.Mode = "balance-rr"
	pg.Address = ""
	wantErr(t, "UpdatePortgroup", s.Ports().UpdatePortgroup(ctx, pg), nil)
	if pg.Version != 2 {
		t.Fatalf("version after update %d", pg.Version)
	}
	got, err := s.Ports().GetPortgroup(ctx, pg.UUID)
	wantErr(t, "GetPortgroup", err, nil)
	wantEqual(t, "after update", got, pg)
	wantErr(t, "stale update", s.Ports().UpdatePortgroup(ctx, &stale), store.ErrStale)
	wantErr(t, "DeletePortgroup", s.Ports().DeletePortgroup(ctx, pg.UUID), nil)
	_, err = s.Ports().GetPortgroup(ctx, pg.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete deleted", s.Ports().DeletePortgroup(ctx, pg.UUID), store.ErrNotFound)
	wantErr(t, "update deleted", s.Ports().UpdatePortgroup(ctx, pg), store.ErrNotFound)
}

func portgroupErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	first := fullPortgroup(n.UUID)
	wantErr(t, "create", s.Ports().CreatePortgroup(ctx, first), nil)
	dupAddr := fullPortgroup(n.UUID)
	dupAddr.Name = "other"
	wantDuplicate(t, "same address", s.Ports().CreatePortgroup(ctx, dupAddr), "address", first.Address)
	dupName := fullPortgroup(n.UUID)
	dupName.Address = "52:54:00:aa:bb:02"
	wantDuplicate(t, "same name", s.Ports().CreatePortgroup(ctx, dupName), "name", "bond0")
	// Two groups without an address or name are fine (NULLs).
	for range 2 {
		wantErr(t, "no address", s.Ports().CreatePortgroup(ctx, &model.Portgroup{NodeUUID: n.UUID}), nil)
	}
	wantErr(t, "unknown node", s.Ports().CreatePortgroup(ctx, &model.Portgroup{NodeUUID: uuid.NewString()}), store.ErrNotFound)
	_, err := s.Ports().GetPortgroup(ctx, "nope")
	wantErr(t, "get unknown", err, store.ErrNotFound)
}

func listPortgroups(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	var all []string
	for i, node := range []string{a.UUID, b.UUID, a.UUID} {
		pg := &model.Portgroup{NodeUUID: node, Address: "52:54:00:00:00:0" + string(rune('1'+i))}
		wantErr(t, "create", s.Ports().CreatePortgroup(ctx, pg), nil)
		all = append(all, pg.UUID)
	}
	uuids := func(pgs []*model.Portgroup, err error) []string {
		t.Helper()
		wantErr(t, "list", err, nil)
		var out []string
		for _, pg := range pgs {
			out = append(out, pg.UUID)
		}
		return out
	}
	if got := uuids(s.Ports().ListPortgroups(ctx, store.PortgroupQuery{})); !slices.Equal(got, all) {
		t.Fatalf("all = %v, want %v", got, all)
	}
	if got := uuids(s.Ports().ListPortgroups(ctx, store.PortgroupQuery{NodeUUID: a.UUID})); !slices.Equal(got, []string{all[0], all[2]}) {
		t.Fatalf("by node = %v", got)
	}
	if got := uuids(s.Ports().ListPortgroups(ctx, store.PortgroupQuery{Address: "52:54:00:00:00:02"})); !slices.Equal(got, all[1:2]) {
		t.Fatalf("by address = %v", got)
	}
	if got := uuids(s.Ports().ListPortgroups(ctx, store.PortgroupQuery{Limit: 1, Marker: all[0]})); !slices.Equal(got, all[1:2]) {
		t.Fatalf("page = %v", got)
	}
	if got := uuids(s.Ports().ListPortgroups(ctx, store.PortgroupQuery{SortKey: "address", SortDir: "desc"})); !slices.Equal(got, []string{all[2], all[1], all[0]}) {
		t.Fatalf("by address desc = %v", got)
	}
	_, err := s.Ports().ListPortgroups(ctx, store.PortgroupQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown marker", err, store.ErrNotFound)
}

func portgroupsGoWithNode(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	pg := fullPortgroup(n.UUID)
	wantErr(t, "create", s.Ports().CreatePortgroup(ctx, pg), nil)
	a := &model.Allocation{State: model.AllocationActive, NodeUUID: n.UUID}
	wantErr(t, "create allocation", s.Allocations().CreateAllocation(ctx, a), nil)
	wantErr(t, "DeleteNode", s.Nodes().DeleteNode(ctx, n.UUID), nil)
	_, err := s.Ports().GetPortgroup(ctx, pg.UUID)
	wantErr(t, "portgroup of deleted node", err, store.ErrNotFound)
	_, err = s.Allocations().GetAllocation(ctx, a.UUID)
	wantErr(t, "allocation of deleted node", err, store.ErrNotFound)
}

func testAllocations(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"round trip, update, delete", allocationRoundTrip},
		{"errors", allocationErrors},
		{"list", listAllocations},
	})
}

func fullAllocation(node string) *model.Allocation {
	return &model.Allocation{
		UUID: uuid.NewString(), Name: "alloc-1", NodeUUID: node, State: model.AllocationActive,
		LastError: "none", ResourceClass: "gpu", Traits: []string{"CUSTOM_A"},
		CandidateNodes: []string{node}, Owner: "project-a", Extra: model.JSON{"k": 1.0},
		ConductorAffinity: "c1", CreatedAt: stamp(0), UpdatedAt: stamp(1),
	}
}

func allocationRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	a := fullAllocation(n.UUID)
	allSet(t, a, "ID", "Version")
	wantErr(t, "CreateAllocation", s.Allocations().CreateAllocation(ctx, a), nil)
	for _, ident := range []string{a.UUID, "alloc-1"} {
		got, err := s.Allocations().GetAllocation(ctx, ident)
		wantErr(t, "GetAllocation "+ident, err, nil)
		wantEqual(t, "GetAllocation "+ident, got, a)
	}
	stale := *a
	a.NodeUUID, a.State = "", model.AllocationError
	wantErr(t, "UpdateAllocation", s.Allocations().UpdateAllocation(ctx, a), nil)
	got, err := s.Allocations().GetAllocation(ctx, a.UUID)
	wantErr(t, "GetAllocation", err, nil)
	wantEqual(t, "after update", got, a)
	wantErr(t, "stale", s.Allocations().UpdateAllocation(ctx, &stale), store.ErrStale)
	wantErr(t, "DeleteAllocation", s.Allocations().DeleteAllocation(ctx, a.UUID), nil)
	wantErr(t, "delete again", s.Allocations().DeleteAllocation(ctx, a.UUID), store.ErrNotFound)
}

func allocationErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	first := fullAllocation(n.UUID)
	wantErr(t, "create", s.Allocations().CreateAllocation(ctx, first), nil)
	sameNode := &model.Allocation{NodeUUID: n.UUID, State: model.AllocationActive}
	wantDuplicate(t, "same node", s.Allocations().CreateAllocation(ctx, sameNode), "node_uuid", n.UUID)
	sameName := &model.Allocation{Name: "alloc-1", State: model.AllocationAllocating}
	wantDuplicate(t, "same name", s.Allocations().CreateAllocation(ctx, sameName), "name", "alloc-1")
	for range 2 { // no node, no name: NULLs
		wantErr(t, "unnamed", s.Allocations().CreateAllocation(ctx, &model.Allocation{State: model.AllocationAllocating}), nil)
	}
	bad := &model.Allocation{NodeUUID: uuid.NewString(), State: model.AllocationActive}
	wantErr(t, "unknown node", s.Allocations().CreateAllocation(ctx, bad), store.ErrNotFound)
}

func listAllocations(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	active := &model.Allocation{NodeUUID: n.UUID, State: model.AllocationActive, ResourceClass: "gpu", Owner: "p1"}
	pending := &model.Allocation{State: model.AllocationAllocating, ResourceClass: "cpu"}
	for _, a := range []*model.Allocation{active, pending} {
		wantErr(t, "create", s.Allocations().CreateAllocation(ctx, a), nil)
	}
	for _, c := range []struct {
		name string
		q    store.AllocationQuery
		want []string
	}{
		{"all", store.AllocationQuery{}, []string{active.UUID, pending.UUID}},
		{"by state", store.AllocationQuery{State: model.AllocationAllocating}, []string{pending.UUID}},
		{"by node", store.AllocationQuery{NodeUUID: n.UUID}, []string{active.UUID}},
		{"by resource class", store.AllocationQuery{ResourceClass: "gpu"}, []string{active.UUID}},
		{"by owner", store.AllocationQuery{Owner: "p1"}, []string{active.UUID}},
		{"desc", store.AllocationQuery{SortDir: "desc"}, []string{pending.UUID, active.UUID}},
		{"after marker", store.AllocationQuery{Marker: active.UUID}, []string{pending.UUID}},
	} {
		got, err := s.Allocations().ListAllocations(ctx, c.q)
		wantErr(t, c.name, err, nil)
		var ids []string
		for _, a := range got {
			ids = append(ids, a.UUID)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s = %v, want %v", c.name, ids, c.want)
		}
	}
}
