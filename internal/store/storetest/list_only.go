package storetest

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// onlyFields are the fields a store may read from their own columns
// (NodeQuery.Only), each with how to read it from a node.
var onlyFields = map[string]func(n *model.Node) string{
	"uuid":                   func(n *model.Node) string { return n.UUID },
	"name":                   func(n *model.Node) string { return n.Name },
	"instance_uuid":          func(n *model.Node) string { return n.InstanceUUID },
	"driver":                 func(n *model.Node) string { return n.Driver },
	"provision_state":        func(n *model.Node) string { return n.ProvisionState },
	"target_provision_state": func(n *model.Node) string { return n.TargetProvisionState },
	"power_state":            func(n *model.Node) string { return n.PowerState },
	"maintenance":            func(n *model.Node) string { return fmt.Sprint(n.Maintenance) },
	"resource_class":         func(n *model.Node) string { return n.ResourceClass },
	"fault":                  func(n *model.Node) string { return n.Fault },
	"owner":                  func(n *model.Node) string { return n.Owner },
	"lessee":                 func(n *model.Node) string { return n.Lessee },
	"conductor_group":        func(n *model.Node) string { return n.ConductorGroup },
	"reservation":            func(n *model.Node) string { return n.Reservation },
	"chassis_uuid":           func(n *model.Node) string { return n.ChassisUUID },
}

// listOnly: a list asking for some fields gives, for each node and each of
// those fields, what the whole node has, in the same order and pages, with
// the node's ID and version; a field without a column gives whole nodes.
func listOnly(t *testing.T, s store.Store, nodes []*model.Node) {
	var all []string
	for f := range onlyFields {
		all = append(all, f)
	}
	cases := [][]string{all, {"uuid", "provision_state"}, {"maintenance"}, {"reservation", "name"}}
	for f := range onlyFields {
		cases = append(cases, []string{f})
	}
	for _, sortKey := range []string{"", "name", "provision_state", "maintenance"} {
		full, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{SortKey: sortKey, Limit: 4, Marker: nodes[1].UUID})
		wantErr(t, "ListNodes", err, nil)
		for _, only := range cases {
			got, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{SortKey: sortKey, Limit: 4, Marker: nodes[1].UUID, Only: only})
			wantErr(t, "ListNodes", err, nil)
			if len(got) != len(full) {
				t.Fatalf("sort %q, Only %v: %d nodes, whole nodes %d", sortKey, only, len(got), len(full))
			}
			for i, n := range got {
				w := full[i]
				if n.UUID != w.UUID || n.ID != w.ID || n.Version != w.Version {
					t.Errorf("sort %q, Only %v, node %d: uuid/id/version %s/%d/%d, want %s/%d/%d",
						sortKey, only, i, n.UUID, n.ID, n.Version, w.UUID, w.ID, w.Version)
				}
				for _, f := range only {
					if g, want := onlyFields[f](n), onlyFields[f](w); g != want {
						t.Errorf("sort %q, Only %v, node %s: %s = %q, want %q", sortKey, only, w.UUID, f, g, want)
					}
				}
			}
		}
	}
	// A field with no column of its own: whole nodes.
	got, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{Limit: 3, Only: []string{"uuid", "properties"}})
	wantErr(t, "ListNodes", err, nil)
	for i, n := range got {
		if n.CreatedAt.IsZero() || n.Driver != nodes[i].Driver {
			t.Errorf("Only with properties, node %d: not the whole node: %+v", i, n)
		}
	}
}

// listParent: ParentNode selects a parent's children, or with "" the nodes
// without a parent; nil selects both.
func listParent(t *testing.T, s store.Store) {
	parent := mustCreateNode(t, s, &model.Node{UUID: uuid.NewString(), Name: "parent", Driver: "fake-hardware"})
	mustCreateNode(t, s, &model.Node{UUID: uuid.NewString(), Name: "kid", Driver: "fake-hardware", ParentNode: parent.UUID})
	mustCreateNode(t, s, &model.Node{UUID: uuid.NewString(), Name: "other", Driver: "fake-hardware"})
	// A node that gains a parent by update.
	late := mustCreateNode(t, s, &model.Node{UUID: uuid.NewString(), Name: "late", Driver: "fake-hardware"})
	late.ParentNode = parent.UUID
	if err := s.Nodes().UpdateNode(t.Context(), late); err != nil {
		t.Fatal(err)
	}
	none, ghost := "", uuid.NewString()
	for _, c := range []struct {
		parent *string
		want   []string
	}{
		{nil, []string{"parent", "kid", "other", "late"}},
		{&none, []string{"parent", "other"}},
		{&parent.UUID, []string{"kid", "late"}},
		{&ghost, nil},
	} {
		got, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{ParentNode: c.parent, Only: []string{"name"}})
		wantErr(t, "ListNodes", err, nil)
		var names []string
		for _, n := range got {
			names = append(names, n.Name)
		}
		if fmt.Sprint(names) != fmt.Sprint(c.want) {
			t.Errorf("ParentNode %v: %v, want %v", c.parent, names, c.want)
		}
		if n, err := s.Nodes().CountNodes(t.Context(), store.NodeQuery{ParentNode: c.parent}); err != nil || n != len(c.want) {
			t.Errorf("CountNodes(ParentNode %v) = %d, %v; want %d", c.parent, n, err, len(c.want))
		}
	}
}
