package storetest

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testPorts(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"create, get and round trip", portRoundTrip},
		{"create errors", createPortErrors},
		{"get errors", getPortErrors},
		{"node by port address", nodeByPortAddress},
		{"list filters", listPortFilters},
		{"list pagination", listPortPagination},
		{"update", updatePort},
		{"update errors", updatePortErrors},
		{"delete", deletePort},
	})
}

func fullPort(node string) *model.Port {
	return &model.Port{
		UUID:                         uuid.NewString(),
		Address:                      "52:54:00:AB:cd:01",
		NodeUUID:                     node,
		Name:                         "eth0",
		PortgroupUUID:                uuid.NewString(),
		PXEEnabled:                   true,
		LocalLinkConnection:          model.JSON{"switch_id": "0a:1b:2c:3d:4e:5f", "port_id": "Eth1/1"},
		PhysicalNetwork:              "physnet1",
		Extra:                        model.JSON{"k": []any{"v", 1.0}},
		InternalInfo:                 model.JSON{"tenant_vif_port_id": "x"},
		IsSmartNIC:                   true,
		Description:                  "uplink",
		Vendor:                       "acme",
		Category:                     "fast",
		AvailableForDynamicPortgroup: new(false),
		CreatedAt:                    stamp(0),
		UpdatedAt:                    stamp(1),
	}
}

func portRoundTrip(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("n"))
	p := fullPort(n.UUID)
	allSet(t, p, "ID", "Version")
	mustCreatePort(t, s, p)
	if p.ID <= 0 || p.Version != 1 || p.CreatedAt != stored(stamp(0)) {
		t.Fatalf("created port: id %d version %d created_at %v", p.ID, p.Version, p.CreatedAt)
	}
	for _, get := range []struct {
		name string
		get  func() (*model.Port, error)
	}{
		{"by uuid", func() (*model.Port, error) { return s.Ports().GetPort(t.Context(), p.UUID) }},
		{"by name", func() (*model.Port, error) { return s.Ports().GetPort(t.Context(), "eth0") }},
		// Addresses are stored as given: the API lower-cases them.
		{"by address", func() (*model.Port, error) { return s.Ports().GetPortByAddress(t.Context(), p.Address) }},
	} {
		got, err := get.get()
		wantErr(t, get.name, err, nil)
		wantEqual(t, get.name, got, p)
	}
	q := newPort(n.UUID, "52:54:00:00:00:02")
	q.CreatedAt = time.Time{}
	mustCreatePort(t, s, q)
	if q.CreatedAt.IsZero() || q.ID <= p.ID {
		t.Fatalf("second port: id %d created_at %v", q.ID, q.CreatedAt)
	}
}

func createPortErrors(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("n"))
	first := newPort(n.UUID, "52:54:00:00:00:01")
	first.Name = "eth0"
	mustCreatePort(t, s, first)
	cases := []struct {
		name, field, value string
		edit               func(p *model.Port)
	}{
		{"duplicate uuid", "uuid", first.UUID, func(p *model.Port) { p.UUID = first.UUID }},
		{"duplicate address", "address", first.Address, func(p *model.Port) { p.Address = first.Address }},
		{"duplicate name", "name", "eth0", func(p *model.Port) { p.Name = "eth0" }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPort(n.UUID, fmt.Sprintf("52:54:00:00:01:%02d", i))
			c.edit(p)
			wantDuplicate(t, "CreatePort", s.Ports().CreatePort(t.Context(), p), c.field, c.value)
		})
	}
	t.Run("unknown node", func(t *testing.T) {
		p := newPort(uuid.NewString(), "52:54:00:00:02:01")
		wantErr(t, "CreatePort", s.Ports().CreatePort(t.Context(), p), store.ErrNotFound)
	})
	ports, err := s.Ports().ListPorts(t.Context(), store.PortQuery{})
	if err != nil || len(ports) != 1 {
		t.Fatalf("ListPorts = %d ports, %v; want 1: a failed create must write nothing", len(ports), err)
	}
}

func getPortErrors(t *testing.T, s store.Store) {
	_, err := s.Ports().GetPort(t.Context(), uuid.NewString())
	wantErr(t, "GetPort(uuid)", err, store.ErrNotFound)
	_, err = s.Ports().GetPort(t.Context(), "eth9")
	wantErr(t, "GetPort(name)", err, store.ErrNotFound)
	_, err = s.Ports().GetPortByAddress(t.Context(), "52:54:00:00:00:99")
	wantErr(t, "GetPortByAddress", err, store.ErrNotFound)
}

// portFixture creates 10 ports on 3 nodes, with repeating sortable fields.
func portFixture(t *testing.T, s store.Store) []*model.Port {
	var nodes []string
	for i := range 3 {
		nodes = append(nodes, mustCreateNode(t, s, newNode(fmt.Sprint("n", i))).UUID)
	}
	pg := uuid.NewString()
	var ports []*model.Port
	for i := range 10 {
		p := newPort(nodes[(i*2)%3], fmt.Sprintf("52:54:00:00:00:%02x", (i*7)%10))
		p.PXEEnabled = i%3 != 0
		p.CreatedAt = stamp(i % 4)
		if i%2 == 1 {
			p.Name = fmt.Sprint("eth", (i*3)%10)
		}
		if i%4 == 0 {
			p.PortgroupUUID = pg
		}
		mustCreatePort(t, s, p)
		if i%3 == 1 {
			if err := s.Ports().UpdatePort(t.Context(), p); err != nil {
				t.Fatal(err)
			}
		}
		ports = append(ports, p)
	}
	return ports
}

func listPortFilters(t *testing.T, s store.Store) {
	ports := portFixture(t, s)
	cases := []struct {
		name string
		q    store.PortQuery
		keep func(p *model.Port) bool
	}{
		{"none", store.PortQuery{}, func(*model.Port) bool { return true }},
		{"node", store.PortQuery{NodeUUID: ports[1].NodeUUID},
			func(p *model.Port) bool { return p.NodeUUID == ports[1].NodeUUID }},
		{"address", store.PortQuery{Address: ports[2].Address},
			func(p *model.Port) bool { return p.Address == ports[2].Address }},
		{"portgroup", store.PortQuery{PortgroupUUID: ports[0].PortgroupUUID},
			func(p *model.Port) bool { return p.PortgroupUUID == ports[0].PortgroupUUID }},
		{"node and portgroup", store.PortQuery{NodeUUID: ports[0].NodeUUID, PortgroupUUID: ports[0].PortgroupUUID},
			func(p *model.Port) bool {
				return p.NodeUUID == ports[0].NodeUUID && p.PortgroupUUID == ports[0].PortgroupUUID
			}},
		{"unknown node", store.PortQuery{NodeUUID: uuid.NewString()}, func(*model.Port) bool { return false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := []*model.Port{}
			for _, p := range ports {
				if c.keep(p) {
					want = append(want, p)
				}
			}
			got, err := s.Ports().ListPorts(t.Context(), c.q)
			wantErr(t, "ListPorts", err, nil)
			wantEqual(t, "ports", append([]*model.Port{}, got...), want)
		})
	}
}

func portKey(p *model.Port, key string) any {
	switch key {
	case "id":
		return p.ID
	case "uuid":
		return p.UUID
	case "address":
		return p.Address
	case "node_uuid":
		return p.NodeUUID
	case "created_at":
		return p.CreatedAt
	case "updated_at":
		return p.UpdatedAt
	case "pxe_enabled":
		return p.PXEEnabled
	case "name":
		return p.Name
	}
	panic("storetest: no value for port sort key " + key)
}

func listPortPagination(t *testing.T, s store.Store) {
	ports := portFixture(t, s)
	for _, key := range append([]string{""}, store.PortSortKeys...) {
		for _, dir := range []string{"asc", "desc"} {
			t.Run(key+"/"+dir, func(t *testing.T) {
				rows := make([]row, len(ports))
				for i, p := range ports {
					rows[i] = row{p.UUID, p.ID, portKey(p, cmp.Or(key, "id"))}
				}
				checkPages(t, rows, dir == "desc", func(marker string, limit int) ([]string, error) {
					ps, err := s.Ports().ListPorts(t.Context(), store.PortQuery{SortKey: key, SortDir: dir,
						Marker: marker, Limit: limit})
					ids := make([]string, len(ps))
					for i, p := range ps {
						ids[i] = p.UUID
					}
					return ids, err
				})
			})
		}
	}
	_, err := s.Ports().ListPorts(t.Context(), store.PortQuery{Marker: uuid.NewString()})
	wantErr(t, "unknown marker", err, store.ErrNotFound)
	if _, err := s.Ports().ListPorts(t.Context(), store.PortQuery{SortKey: "data"}); err == nil {
		t.Fatal("invalid sort key: no error")
	}
}

func updatePort(t *testing.T, s store.Store) {
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	p := mustCreatePort(t, s, newPort(a.UUID, "52:54:00:00:00:01"))
	before := time.Now().Add(-time.Second)
	p.NodeUUID, p.Address, p.Extra = b.UUID, "52:54:00:00:00:02", model.JSON{"moved": true}
	wantErr(t, "UpdatePort", s.Ports().UpdatePort(t.Context(), p), nil)
	if p.Version != 2 || p.UpdatedAt.Before(before) {
		t.Fatalf("version %d updated_at %v", p.Version, p.UpdatedAt)
	}
	got, err := s.Ports().GetPortByAddress(t.Context(), "52:54:00:00:00:02")
	wantErr(t, "GetPortByAddress", err, nil)
	wantEqual(t, "stored", got, p)
	if ps, _ := s.Ports().ListPorts(t.Context(), store.PortQuery{NodeUUID: a.UUID}); len(ps) != 0 {
		t.Fatalf("old node still has %d ports", len(ps))
	}
}

func updatePortErrors(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("n"))
	mustCreatePort(t, s, newPort(n.UUID, "52:54:00:00:00:01"))
	p := mustCreatePort(t, s, newPort(n.UUID, "52:54:00:00:00:02"))
	stale := *p
	fresh := *p
	wantErr(t, "first update", s.Ports().UpdatePort(t.Context(), &fresh), nil)
	cases := []struct {
		name string
		edit func(p *model.Port)
		want error
	}{
		{"stale", func(q *model.Port) { *q = stale }, store.ErrStale},
		{"unknown port", func(q *model.Port) { q.UUID = uuid.NewString() }, store.ErrNotFound},
		{"unknown node", func(q *model.Port) { q.NodeUUID = uuid.NewString() }, store.ErrNotFound},
		{"duplicate address", func(q *model.Port) { q.Address = "52:54:00:00:00:01" }, store.ErrDuplicate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := fresh
			c.edit(&q)
			version := q.Version
			wantErr(t, "UpdatePort", s.Ports().UpdatePort(t.Context(), &q), c.want)
			if q.Version != version {
				t.Fatalf("failed update bumped version to %d", q.Version)
			}
		})
	}
	got, err := s.Ports().GetPort(t.Context(), p.UUID)
	wantErr(t, "GetPort", err, nil)
	wantEqual(t, "stored after failed updates", got, &fresh)
}

func deletePort(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("n"))
	p := mustCreatePort(t, s, newPort(n.UUID, "52:54:00:00:00:01"))
	wantErr(t, "DeletePort", s.Ports().DeletePort(t.Context(), p.UUID), nil)
	_, err := s.Ports().GetPort(t.Context(), p.UUID)
	wantErr(t, "GetPort", err, store.ErrNotFound)
	wantErr(t, "DeletePort again", s.Ports().DeletePort(t.Context(), p.UUID), store.ErrNotFound)
	mustGetNode(t, s, n.UUID)
}

// nodeByPortAddress: GetNodeByPortAddress finds a node by any of its
// ports' MACs, the first MAC in the caller's order winning, in one call
// however many MACs (more than one query's chunk included).
func nodeByPortAddress(t *testing.T, s store.Store) {
	a := mustCreateNode(t, s, newNode("a"))
	b := mustCreateNode(t, s, newNode("b"))
	mustCreatePort(t, s, newPort(a.UUID, "52:54:00:00:0a:01"))
	mustCreatePort(t, s, newPort(a.UUID, "52:54:00:00:0a:02"))
	mustCreatePort(t, s, newPort(b.UUID, "52:54:00:00:0b:01"))
	many := func(n int, last string) []string {
		out := make([]string, 0, n+1)
		for i := range n {
			out = append(out, fmt.Sprintf("02:00:%02x:%02x:%02x:00", i>>16&0xff, i>>8&0xff, i&0xff))
		}
		return append(out, last)
	}
	for _, tc := range []struct {
		name string
		macs []string
		want string // node UUID, "" for ErrNotFound
	}{
		{"one MAC", []string{"52:54:00:00:0a:02"}, a.UUID},
		{"unknown before known", []string{"52:54:00:00:ff:ff", "52:54:00:00:0b:01"}, b.UUID},
		{"first in the caller's order wins", []string{"52:54:00:00:0b:01", "52:54:00:00:0a:01"}, b.UUID},
		{"first in the caller's order wins, reversed", []string{"52:54:00:00:0a:01", "52:54:00:00:0b:01"}, a.UUID},
		{"duplicates", []string{"52:54:00:00:0a:01", "52:54:00:00:0a:01"}, a.UUID},
		{"compared as given", []string{"52:54:00:00:0A:01"}, ""},
		{"none known", []string{"52:54:00:00:ff:ff"}, ""},
		{"no MACs", nil, ""},
		{"beyond one chunk", many(1200, "52:54:00:00:0b:01"), b.UUID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := s.Ports().GetNodeByPortAddress(t.Context(), tc.macs)
			if tc.want == "" {
				wantErr(t, "GetNodeByPortAddress", err, store.ErrNotFound)
				return
			}
			if err != nil || n.UUID != tc.want {
				t.Fatalf("GetNodeByPortAddress = %v, %v; want node %s", n, err, tc.want)
			}
			if n.Name == "" || n.Version < 1 || n.ID <= 0 {
				t.Fatalf("node read incompletely: %+v", n)
			}
		})
	}
}
