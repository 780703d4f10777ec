package storetest

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testVolumes(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"connector round trip, update, delete", connectorRoundTrip},
		{"connector unique type and id", connectorErrors},
		{"target round trip, update, delete", targetRoundTrip},
		{"target unique boot index per node", targetErrors},
		{"list by node, sorted, paged", listVolumes},
		{"go with their node", volumesGoWithNode},
	})
}

func fullConnector(node string) *model.VolumeConnector {
	return &model.VolumeConnector{UUID: uuid.NewString(), NodeUUID: node, Type: "iqn",
		ConnectorID: "iqn.2017-07.org.openstack:01:d9a51732c3f", Extra: model.JSON{"k": "v"},
		CreatedAt: stamp(0), UpdatedAt: stamp(1)}
}

func fullTarget(node string) *model.VolumeTarget {
	return &model.VolumeTarget{UUID: uuid.NewString(), NodeUUID: node, VolumeType: "iscsi",
		VolumeID: "04452bed-5367-4202-8bf5-de4335ac56d2", BootIndex: 0,
		Properties: model.JSON{"target_lun": 0.0, "auth_password": "secret"}, Extra: model.JSON{"k": "v"},
		CreatedAt: stamp(0), UpdatedAt: stamp(1)}
}

func connectorRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	other := mustCreateNode(t, s, newNode("other"))
	c := fullConnector(n.UUID)
	allSet(t, c, "ID", "Version")
	wantErr(t, "create", s.Volumes().CreateVolumeConnector(ctx, c), nil)
	if c.ID <= 0 || c.Version != 1 {
		t.Fatalf("created: id %d version %d", c.ID, c.Version)
	}
	got, err := s.Volumes().GetVolumeConnector(ctx, c.UUID)
	wantErr(t, "get", err, nil)
	wantEqual(t, "get", got, c)
	stale := *got
	got.NodeUUID, got.Type, got.ConnectorID = other.UUID, "wwpn", "50:00:00:00:00:00:00:01"
	wantErr(t, "update", s.Volumes().UpdateVolumeConnector(ctx, got), nil)
	if got.Version != 2 || got.UpdatedAt.IsZero() {
		t.Fatalf("after update: %+v", got)
	}
	again, err := s.Volumes().GetVolumeConnector(ctx, c.UUID)
	wantErr(t, "get updated", err, nil)
	wantEqual(t, "after update", again, got)
	wantErr(t, "stale", s.Volumes().UpdateVolumeConnector(ctx, &stale), store.ErrStale)
	moved := *again
	moved.NodeUUID = uuid.NewString()
	wantErr(t, "move to unknown node", s.Volumes().UpdateVolumeConnector(ctx, &moved), store.ErrNotFound)
	wantErr(t, "delete", s.Volumes().DeleteVolumeConnector(ctx, c.UUID), nil)
	_, err = s.Volumes().GetVolumeConnector(ctx, c.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete again", s.Volumes().DeleteVolumeConnector(ctx, c.UUID), store.ErrNotFound)
	wantErr(t, "update deleted", s.Volumes().UpdateVolumeConnector(ctx, again), store.ErrNotFound)
}

func connectorErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	first := fullConnector(a.UUID)
	wantErr(t, "create", s.Volumes().CreateVolumeConnector(ctx, first), nil)
	// (type, connector_id) is unique across nodes, as in Ironic.
	dup := fullConnector(b.UUID)
	wantDuplicate(t, "same type and id", s.Volumes().CreateVolumeConnector(ctx, dup), "type", first.Type+" "+first.ConnectorID)
	sameUUID := fullConnector(b.UUID)
	sameUUID.UUID, sameUUID.Type = first.UUID, "ip"
	wantDuplicate(t, "same uuid", s.Volumes().CreateVolumeConnector(ctx, sameUUID), "uuid", first.UUID)
	otherType := fullConnector(b.UUID)
	otherType.Type = "mac"
	wantErr(t, "same id, other type", s.Volumes().CreateVolumeConnector(ctx, otherType), nil)
	otherType.Type = "iqn"
	wantDuplicate(t, "update into a duplicate", s.Volumes().UpdateVolumeConnector(ctx, otherType), "type", first.Type+" "+first.ConnectorID)
	unknown := fullConnector(uuid.NewString())
	unknown.ConnectorID = "x"
	wantErr(t, "unknown node", s.Volumes().CreateVolumeConnector(ctx, unknown), store.ErrNotFound)
	_, err := s.Volumes().GetVolumeConnector(ctx, uuid.NewString())
	wantErr(t, "get unknown", err, store.ErrNotFound)
}

func targetRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	tg := fullTarget(n.UUID)
	allSet(t, tg, "ID", "Version", "BootIndex")
	wantErr(t, "create", s.Volumes().CreateVolumeTarget(ctx, tg), nil)
	got, err := s.Volumes().GetVolumeTarget(ctx, tg.UUID)
	wantErr(t, "get", err, nil)
	wantEqual(t, "get", got, tg)
	stale := *got
	got.BootIndex, got.VolumeType, got.Properties = 3, "fibre_channel", nil
	wantErr(t, "update", s.Volumes().UpdateVolumeTarget(ctx, got), nil)
	again, err := s.Volumes().GetVolumeTarget(ctx, tg.UUID)
	wantErr(t, "get updated", err, nil)
	wantEqual(t, "after update", again, got)
	wantErr(t, "stale", s.Volumes().UpdateVolumeTarget(ctx, &stale), store.ErrStale)
	wantErr(t, "delete", s.Volumes().DeleteVolumeTarget(ctx, tg.UUID), nil)
	wantErr(t, "delete again", s.Volumes().DeleteVolumeTarget(ctx, tg.UUID), store.ErrNotFound)
	_, err = s.Volumes().GetVolumeTarget(ctx, tg.UUID)
	wantErr(t, "get deleted", err, store.ErrNotFound)
}

func targetErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	first := fullTarget(a.UUID)
	wantErr(t, "create", s.Volumes().CreateVolumeTarget(ctx, first), nil)
	wantDuplicate(t, "same node and boot index", s.Volumes().CreateVolumeTarget(ctx, fullTarget(a.UUID)), "boot_index", "0")
	// The same boot index on another node, and the same volume on one
	// node at another index, are fine (Ironic's only constraint is
	// node and boot index).
	wantErr(t, "other node", s.Volumes().CreateVolumeTarget(ctx, fullTarget(b.UUID)), nil)
	second := fullTarget(a.UUID)
	second.BootIndex = 1
	wantErr(t, "same volume, next index", s.Volumes().CreateVolumeTarget(ctx, second), nil)
	second.BootIndex = 0
	wantDuplicate(t, "update into a duplicate", s.Volumes().UpdateVolumeTarget(ctx, second), "boot_index", "0")
	sameUUID := fullTarget(b.UUID)
	sameUUID.UUID, sameUUID.BootIndex = first.UUID, 7
	wantDuplicate(t, "same uuid", s.Volumes().CreateVolumeTarget(ctx, sameUUID), "uuid", first.UUID)
	wantErr(t, "unknown node", s.Volumes().CreateVolumeTarget(ctx, fullTarget(uuid.NewString())), store.ErrNotFound)
}

func listVolumes(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	var conns, targets []string
	for i, node := range []string{a.UUID, b.UUID, a.UUID} {
		c := &model.VolumeConnector{NodeUUID: node, Type: "iqn", ConnectorID: "iqn." + string(rune('c'-i))}
		wantErr(t, "create connector", s.Volumes().CreateVolumeConnector(ctx, c), nil)
		conns = append(conns, c.UUID)
		tg := &model.VolumeTarget{NodeUUID: node, VolumeType: "iscsi", VolumeID: "v", BootIndex: int64(10 - i)}
		wantErr(t, "create target", s.Volumes().CreateVolumeTarget(ctx, tg), nil)
		targets = append(targets, tg.UUID)
	}
	cs := func(q store.VolumeQuery) []string {
		t.Helper()
		list, err := s.Volumes().ListVolumeConnectors(ctx, q)
		wantErr(t, "list connectors", err, nil)
		var out []string
		for _, c := range list {
			out = append(out, c.UUID)
		}
		return out
	}
	ts := func(q store.VolumeQuery) []string {
		t.Helper()
		list, err := s.Volumes().ListVolumeTargets(ctx, q)
		wantErr(t, "list targets", err, nil)
		var out []string
		for _, tg := range list {
			out = append(out, tg.UUID)
		}
		return out
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"connectors", cs(store.VolumeQuery{}), conns},
		{"connectors of a", cs(store.VolumeQuery{NodeUUID: a.UUID}), []string{conns[0], conns[2]}},
		{"connectors by connector_id", cs(store.VolumeQuery{SortKey: "connector_id"}), []string{conns[2], conns[1], conns[0]}},
		{"connectors page", cs(store.VolumeQuery{Limit: 1, Marker: conns[0]}), conns[1:2]},
		{"connectors desc after marker", cs(store.VolumeQuery{SortDir: "desc", Marker: conns[2]}), []string{conns[1], conns[0]}},
		{"targets", ts(store.VolumeQuery{}), targets},
		{"targets by boot_index", ts(store.VolumeQuery{SortKey: "boot_index"}), []string{targets[2], targets[1], targets[0]}},
		{"targets of b", ts(store.VolumeQuery{NodeUUID: b.UUID}), targets[1:2]},
		{"targets by boot_index after marker", ts(store.VolumeQuery{SortKey: "boot_index", Marker: targets[1], Limit: 5}), targets[:1]},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	_, err := s.Volumes().ListVolumeConnectors(ctx, store.VolumeQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown connector marker", err, store.ErrNotFound)
	_, err = s.Volumes().ListVolumeTargets(ctx, store.VolumeQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown target marker", err, store.ErrNotFound)
	_, err = s.Volumes().ListVolumeTargets(ctx, store.VolumeQuery{SortKey: "properties"})
	if err == nil {
		t.Fatal("sorting targets by properties: no error")
	}
}

func volumesGoWithNode(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	keep := mustCreateNode(t, s, newNode("keep"))
	c, tg := fullConnector(n.UUID), fullTarget(n.UUID)
	wantErr(t, "create connector", s.Volumes().CreateVolumeConnector(ctx, c), nil)
	wantErr(t, "create target", s.Volumes().CreateVolumeTarget(ctx, tg), nil)
	kc := fullConnector(keep.UUID)
	kc.ConnectorID = "kept"
	wantErr(t, "create kept connector", s.Volumes().CreateVolumeConnector(ctx, kc), nil)
	wantErr(t, "DeleteNode", s.Nodes().DeleteNode(ctx, n.UUID), nil)
	_, err := s.Volumes().GetVolumeConnector(ctx, c.UUID)
	wantErr(t, "connector of deleted node", err, store.ErrNotFound)
	_, err = s.Volumes().GetVolumeTarget(ctx, tg.UUID)
	wantErr(t, "target of deleted node", err, store.ErrNotFound)
	_, err = s.Volumes().GetVolumeConnector(ctx, kc.UUID)
	wantErr(t, "connector of another node", err, nil)
	// The connector's type and id are free again.
	wantErr(t, "recreate", s.Volumes().CreateVolumeConnector(ctx, fullConnector(keep.UUID)), nil)
}
