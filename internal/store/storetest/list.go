package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testListNodes(t *testing.T, su suite) {
	s := su.fresh(t)
	nodes := listFixture(t, s)
	t.Run("filters", func(t *testing.T) { t.Parallel(); listFilters(t, s, nodes) })
	t.Run("pagination", func(t *testing.T) { t.Parallel(); listPagination(t, s, nodes) })
	t.Run("errors", func(t *testing.T) { t.Parallel(); listErrors(t, s) })
	t.Run("only some fields", func(t *testing.T) { t.Parallel(); listOnly(t, s, nodes) })
	t.Run("search by MAC", func(t *testing.T) { listSearchMAC(t, su.fresh(t)) })
	t.Run("by parent node", func(t *testing.T) { listParent(t, su.fresh(t)) })
}

// listSearchMAC: Search finds a node by one of its ports' MAC (exactly,
// whatever the case asked), together with the nodes it names otherwise.
func listSearchMAC(t *testing.T, s store.Store) {
	a := mustCreateNode(t, s, &model.Node{UUID: uuid.NewString(), Name: "mac-a", Driver: "fake-hardware", ProvisionState: "enroll"})
	b := mustCreateNode(t, s, &model.Node{UUID: uuid.NewString(), Name: "52-owner", Driver: "fake-hardware", ProvisionState: "enroll"})
	mustCreatePort(t, s, newPort(a.UUID, "52:54:00:aa:bb:01"))
	mustCreatePort(t, s, newPort(b.UUID, "52:54:00:aa:bb:02"))
	for search, want := range map[string][]string{
		"52:54:00:AA:BB:01": {a.UUID},
		"52:54:00:aa:bb:02": {b.UUID},
		"52:54:00:aa:bb":    {},       // a MAC matches whole, not in part
		"52-own":            {b.UUID}, // a name part (not a UUID prefix: not hex)
	} {
		got, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{Search: search})
		wantErr(t, "ListNodes", err, nil)
		var ids []string
		for _, n := range got {
			ids = append(ids, n.UUID)
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("Search %q: %v, want %v", search, ids, want)
		}
		if n, err := s.Nodes().CountNodes(t.Context(), store.NodeQuery{Search: search}); err != nil || n != len(want) {
			t.Errorf("CountNodes(Search %q) = %d, %v; want %d", search, n, err, len(want))
		}
	}
}

// listFixture creates 10 nodes whose sortable fields repeat, are empty or
// NULL in different patterns, so every sort key needs its id tie-break, then
// returns them as stored, in id order.
func listFixture(t *testing.T, s store.Store) []*model.Node {
	ctx := t.Context()
	var ids []string
	for i := range 10 {
		n := &model.Node{
			UUID:                 uuid.NewString(),
			Driver:               []string{"ipmi", "redfish", "fake-hardware"}[i%3],
			ProvisionState:       []string{"enroll", "manageable", "available", "active"}[i%4],
			PowerState:           []string{"power off", "power on"}[i%2],
			Maintenance:          i%3 == 0,
			ResourceClass:        []string{"", "gpu"}[i%2],
			Owner:                []string{"", "proj-a", "proj-b"}[i%3],
			Lessee:               []string{"", "lessee", "", "proj-b"}[(i/2)%4],
			ConductorGroup:       []string{"", "g1", "G1"}[i%3],
			CreatedAt:            stamp((i * 7) % 5), // repeats
			ProvisionUpdatedAt:   stamp(i % 4).Add(time.Minute),
			TargetProvisionState: []string{"", "active"}[min(i%5, 1)],
		}
		if i%4 != 0 {
			n.Name = fmt.Sprintf("node-%d", (7*i)%10)
		}
		if i%3 == 1 {
			n.InstanceUUID = uuid.NewString()
		}
		if i == 3 || i == 8 {
			n.Fault = "power failure"
		}
		if i%3 == 0 {
			n.ProvisionUpdatedAt = time.Time{}
		}
		mustCreateNode(t, s, n)
		ids = append(ids, n.UUID)
	}
	for i, id := range ids {
		if i%2 == 0 {
			n := mustGetNode(t, s, id)
			if err := s.Nodes().UpdateNode(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if host := []string{"", "c1", "c2", ""}[i%4]; host != "" {
			if _, err := s.Nodes().ReserveNode(ctx, id, host); err != nil {
				t.Fatal(err)
			}
		}
	}
	nodes := make([]*model.Node, len(ids))
	for i, id := range ids {
		nodes[i] = mustGetNode(t, s, id)
	}
	return nodes
}

// filterCase is a NodeQuery and the predicate it must match.
type filterCase struct {
	name string
	q    store.NodeQuery
	keep func(n *model.Node) bool
}

func nodeFilterCases(nodes []*model.Node) []filterCase {
	return []filterCase{
		{"none", store.NodeQuery{}, func(*model.Node) bool { return true }},
		{"provision state", store.NodeQuery{ProvisionState: "manageable"},
			func(n *model.Node) bool { return n.ProvisionState == "manageable" }},
		{"provision states", store.NodeQuery{ProvisionStates: []string{"enroll", "active", "nope"}},
			func(n *model.Node) bool { return n.ProvisionState == "enroll" || n.ProvisionState == "active" }},
		{"maintenance", store.NodeQuery{Maintenance: ptr(true)},
			func(n *model.Node) bool { return n.Maintenance }},
		{"not maintenance", store.NodeQuery{Maintenance: ptr(false)},
			func(n *model.Node) bool { return !n.Maintenance }},
		{"driver", store.NodeQuery{Driver: "redfish"},
			func(n *model.Node) bool { return n.Driver == "redfish" }},
		{"resource class", store.NodeQuery{ResourceClass: "gpu"},
			func(n *model.Node) bool { return n.ResourceClass == "gpu" }},
		{"associated", store.NodeQuery{Associated: ptr(true)},
			func(n *model.Node) bool { return n.InstanceUUID != "" }},
		{"not associated", store.NodeQuery{Associated: ptr(false)},
			func(n *model.Node) bool { return n.InstanceUUID == "" }},
		{"fault", store.NodeQuery{Fault: "power failure"},
			func(n *model.Node) bool { return n.Fault != "" }},
		{"owner", store.NodeQuery{Owner: "proj-a"},
			func(n *model.Node) bool { return n.Owner == "proj-a" }},
		{"lessee", store.NodeQuery{Lessee: "lessee"},
			func(n *model.Node) bool { return n.Lessee == "lessee" }},
		{"project (owner or lessee)", store.NodeQuery{Project: "proj-b"},
			func(n *model.Node) bool { return n.Owner == "proj-b" || n.Lessee == "proj-b" }},
		{"conductor group", store.NodeQuery{ConductorGroup: ptr("g1")},
			func(n *model.Node) bool { return n.ConductorGroup == "g1" }},
		{"empty conductor group", store.NodeQuery{ConductorGroup: ptr("")},
			func(n *model.Node) bool { return n.ConductorGroup == "" }},
		{"instance uuid", store.NodeQuery{InstanceUUID: nodes[1].InstanceUUID},
			func(n *model.Node) bool { return n.UUID == nodes[1].UUID }},
		{"reserved", store.NodeQuery{Reserved: ptr(true)},
			func(n *model.Node) bool { return n.Reservation != "" }},
		{"not reserved", store.NodeQuery{Reserved: ptr(false)},
			func(n *model.Node) bool { return n.Reservation == "" }},
		{"reserved by", store.NodeQuery{ReservedBy: "c2"},
			func(n *model.Node) bool { return n.Reservation == "c2" }},
		{"combined", store.NodeQuery{Driver: "ipmi", Maintenance: ptr(true), Reserved: ptr(false)},
			func(n *model.Node) bool { return n.Driver == "ipmi" && n.Maintenance && n.Reservation == "" }},
		{"power state", store.NodeQuery{PowerState: "power on"},
			func(n *model.Node) bool { return n.PowerState == "power on" }},
		{"no power state", store.NodeQuery{PowerState: store.NoPowerState},
			func(n *model.Node) bool { return n.PowerState == "" }},
		{"search name", store.NodeQuery{Search: "DE-3"},
			func(n *model.Node) bool { return n.Name == "node-3" }},
		{"search name is not a pattern", store.NodeQuery{Search: "node_"},
			func(*model.Node) bool { return false }},
		{"search uuid prefix", store.NodeQuery{Search: strings.ToUpper(nodes[4].UUID[:13])},
			func(n *model.Node) bool { return strings.HasPrefix(n.UUID, nodes[4].UUID[:13]) }},
		{"provision updated before", store.NodeQuery{ProvisionUpdatedBefore: stamp(2)},
			func(n *model.Node) bool {
				return !n.ProvisionUpdatedAt.IsZero() && n.ProvisionUpdatedAt.Before(stamp(2))
			}},
		{"no match", store.NodeQuery{ProvisionState: "deploying"},
			func(*model.Node) bool { return false }},
	}
}

func listFilters(t *testing.T, s store.Store, nodes []*model.Node) {
	for _, c := range nodeFilterCases(nodes) {
		t.Run(c.name, func(t *testing.T) {
			want := []*model.Node{}
			for _, n := range nodes {
				if c.keep(n) {
					want = append(want, n)
				}
			}
			got, err := s.Nodes().ListNodes(t.Context(), c.q)
			wantErr(t, "ListNodes", err, nil)
			wantEqual(t, "nodes", append([]*model.Node{}, got...), want)
			count, err := s.Nodes().CountNodes(t.Context(), c.q)
			wantErr(t, "CountNodes", err, nil)
			if count != len(want) {
				t.Fatalf("CountNodes = %d, want %d", count, len(want))
			}
			c.q.Limit, c.q.Marker = 1, want0(want)
			if count, _ := s.Nodes().CountNodes(t.Context(), c.q); count != len(want) {
				t.Fatalf("CountNodes with pagination = %d, want %d: it applies filters only", count, len(want))
			}
			checkNodeGroups(t, s, c.q, want)
		})
	}
}

// checkNodeGroups compares CountNodeGroups with the groups of want.
func checkNodeGroups(t *testing.T, s store.Store, q store.NodeQuery, want []*model.Node) {
	t.Helper()
	groups, err := s.Nodes().CountNodeGroups(t.Context(), q)
	wantErr(t, "CountNodeGroups", err, nil)
	key := func(g store.NodeGroup) string {
		return fmt.Sprintf("%s|%s|%t|%s|%s", g.ProvisionState, g.PowerState, g.Maintenance, g.Reservation, g.Fault)
	}
	got, exp := map[string]int{}, map[string]int{}
	gotOldest, expOldest := map[string]time.Time{}, map[string]time.Time{}
	for _, g := range groups {
		if g.Count <= 0 {
			t.Fatalf("CountNodeGroups returned an empty group %+v", g)
		}
		got[key(g)] += g.Count
		gotOldest[key(g)] = g.OldestProvisionUpdate.UTC()
	}
	for _, n := range want {
		k := key(store.NodeGroup{ProvisionState: n.ProvisionState, PowerState: n.PowerState,
			Maintenance: n.Maintenance, Reservation: n.Reservation, Fault: n.Fault})
		exp[k]++
		if at := n.ProvisionUpdatedAt; !at.IsZero() && (expOldest[k].IsZero() || at.Before(expOldest[k])) {
			expOldest[k] = at.UTC()
		} else if _, ok := expOldest[k]; !ok {
			expOldest[k] = time.Time{}
		}
	}
	wantEqual(t, "CountNodeGroups oldest provision_updated_at", gotOldest, expOldest)
	wantEqual(t, "CountNodeGroups", got, exp)
}

func want0(ns []*model.Node) string {
	if len(ns) == 0 {
		return ""
	}
	return ns[0].UUID
}

// nodeKey is n's value for a sort key, as a store compares it: NULL text as
// "", a NULL time as the zero time.
func nodeKey(n *model.Node, key string) any {
	switch key {
	case "id":
		return n.ID
	case "maintenance":
		return n.Maintenance
	case "created_at":
		return n.CreatedAt
	case "updated_at":
		return n.UpdatedAt
	case "provision_updated_at":
		return n.ProvisionUpdatedAt
	}
	text := map[string]string{"uuid": n.UUID, "name": n.Name, "provision_state": n.ProvisionState,
		"power_state": n.PowerState, "driver": n.Driver, "instance_uuid": n.InstanceUUID,
		"resource_class": n.ResourceClass, "owner": n.Owner, "lessee": n.Lessee,
		"conductor_group": n.ConductorGroup, "fault": n.Fault, "reservation": n.Reservation,
		"target_provision_state": n.TargetProvisionState}
	v, ok := text[key]
	if !ok {
		panic("storetest: no value for sort key " + key)
	}
	return v
}

func listPagination(t *testing.T, s store.Store, nodes []*model.Node) {
	for _, key := range append([]string{""}, store.NodeSortKeys...) {
		for _, dir := range []string{"", "asc", "desc"} {
			t.Run(key+"/"+dir, func(t *testing.T) {
				rows := make([]row, len(nodes))
				for i, n := range nodes {
					rows[i] = row{n.UUID, n.ID, nodeKey(n, cmp.Or(key, "id"))}
				}
				checkPages(t, rows, dir == "desc", func(marker string, limit int) ([]string, error) {
					ns, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{SortKey: key, SortDir: dir,
						Marker: marker, Limit: limit})
					return nodeUUIDs(ns), err
				})
			})
		}
	}
	t.Run("filtered pages", func(t *testing.T) {
		q := store.NodeQuery{Maintenance: ptr(false), SortKey: "name", Limit: 2}
		var got []string
		for i := 0; i < 20 && (i == 0 || q.Marker != ""); i++ {
			page, err := s.Nodes().ListNodes(t.Context(), q)
			wantErr(t, "ListNodes", err, nil)
			got, q.Marker = append(got, nodeUUIDs(page)...), ""
			if len(page) == q.Limit {
				q.Marker = page[len(page)-1].UUID
			}
		}
		q.Limit, q.Marker = 0, ""
		all, err := s.Nodes().ListNodes(t.Context(), q)
		wantErr(t, "ListNodes", err, nil)
		wantEqual(t, "pages", got, nodeUUIDs(all))
	})
}

func nodeUUIDs(ns []*model.Node) []string {
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.UUID
	}
	return ids
}

// row is one listed item: its UUID, id and sort-key value.
type row struct {
	uuid string
	id   int64
	key  any
}

func compareKeys(a, b any) int {
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case int64:
		return cmp.Compare(x, b.(int64))
	case bool:
		return cmp.Compare(btoi(x), btoi(b.(bool)))
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	panic(fmt.Sprintf("storetest: cannot compare %T", a))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkPages checks that list returns rows in (key, id) order, in full with
// no limit, and walked in pages of 3 with markers.
func checkPages(t *testing.T, rows []row, desc bool, list func(marker string, limit int) ([]string, error)) {
	t.Helper()
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(compareKeys(a.key, b.key), cmp.Compare(a.id, b.id))
	})
	if desc {
		slices.Reverse(rows)
	}
	want := make([]string, len(rows))
	for i, r := range rows {
		want[i] = r.uuid
	}
	all, err := list("", 0)
	wantErr(t, "list all", err, nil)
	wantEqual(t, "full list", all, want)

	var got []string
	marker := ""
	for range len(rows) + 1 {
		page, err := list(marker, 3)
		wantErr(t, "list page", err, nil)
		if len(page) > 3 {
			t.Fatalf("page of %d rows with limit 3", len(page))
		}
		got = append(got, page...)
		if len(page) < 3 {
			break
		}
		marker = page[len(page)-1]
	}
	wantEqual(t, "pages", got, want)
}

func listErrors(t *testing.T, s store.Store) {
	cases := []struct {
		name     string
		q        store.NodeQuery
		notFound bool
	}{
		{"unknown marker", store.NodeQuery{Marker: uuid.NewString()}, true},
		{"unknown marker, sorted", store.NodeQuery{Marker: uuid.NewString(), SortKey: "name"}, true},
		{"invalid sort key", store.NodeQuery{SortKey: "data"}, false},
		{"injection in sort key", store.NodeQuery{SortKey: "id; DROP TABLE nodes"}, false},
		{"invalid sort direction", store.NodeQuery{SortDir: "sideways"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Nodes().ListNodes(t.Context(), c.q)
			if err == nil {
				t.Fatalf("ListNodes(%+v) = %d nodes, want an error", c.q, len(got))
			}
			if c.notFound {
				wantErr(t, "ListNodes", err, store.ErrNotFound)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	if s == nil {
		s = []string{}
	}
	return s
}
