package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// memStore is an in-memory store.Store for this package's tests (the SQLite
// store is written concurrently). It keeps the contract's semantics that the
// API relies on: copies in and out, version checks, unique constraints,
// filters, (sort key, id) ordering with markers.
type memStore struct {
	mu         sync.Mutex
	now        func() time.Time
	nextID     int64
	nodes      map[string]*model.Node
	ports      map[string]*model.Port
	conductors []*model.Conductor
	history    map[string][]*model.HistoryEvent
}

var _ store.Store = (*memStore)(nil)

func newMemStore(now func() time.Time) *memStore {
	return &memStore{now: now, nodes: map[string]*model.Node{}, ports: map[string]*model.Port{},
		history: map[string][]*model.HistoryEvent{}}
}

func cloneNode(n *model.Node) *model.Node {
	b, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	out := &model.Node{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	out.ID, out.Version, out.Reservation, out.Conductor = n.ID, n.Version, n.Reservation, n.Conductor
	return out
}

func clonePort(p *model.Port) *model.Port {
	b, _ := json.Marshal(p)
	out := &model.Port{}
	_ = json.Unmarshal(b, out)
	out.ID, out.Version = p.ID, p.Version
	return out
}

func (m *memStore) findNode(ident string) *model.Node {
	if n, ok := m.nodes[ident]; ok {
		return n
	}
	if _, err := uuid.Parse(ident); err == nil {
		return nil
	}
	for _, n := range m.nodes {
		if n.Name != "" && n.Name == ident {
			return n
		}
	}
	return nil
}

func (m *memStore) nodeDup(n *model.Node) error {
	for _, o := range m.nodes {
		if o.UUID == n.UUID {
			continue
		}
		if n.Name != "" && o.Name == n.Name {
			return &store.DuplicateError{Field: "name", Value: n.Name}
		}
		if n.InstanceUUID != "" && o.InstanceUUID == n.InstanceUUID {
			return &store.DuplicateError{Field: "instance_uuid", Value: n.InstanceUUID}
		}
	}
	return nil
}

func (m *memStore) CreateNode(_ context.Context, n *model.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n.UUID == "" {
		n.UUID = uuid.NewString()
	}
	if _, ok := m.nodes[n.UUID]; ok {
		return &store.DuplicateError{Field: "uuid", Value: n.UUID}
	}
	if err := m.nodeDup(n); err != nil {
		return err
	}
	m.nextID++
	n.ID, n.Version = m.nextID, 1
	if n.CreatedAt.IsZero() {
		n.CreatedAt = m.now()
	}
	c := cloneNode(n)
	c.Reservation = "" // only ReserveNode takes the lock
	m.nodes[n.UUID] = c
	return nil
}

func (m *memStore) GetNode(_ context.Context, ident string) (*model.Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.findNode(ident)
	if n == nil {
		return nil, fmt.Errorf("node %s: %w", ident, store.ErrNotFound)
	}
	return cloneNode(n), nil
}

func (m *memStore) matchNode(n *model.Node, q store.NodeQuery) bool {
	switch {
	case q.ProvisionState != "" && n.ProvisionState != q.ProvisionState,
		q.Maintenance != nil && n.Maintenance != *q.Maintenance,
		q.Driver != "" && n.Driver != q.Driver,
		q.ResourceClass != "" && n.ResourceClass != q.ResourceClass,
		q.Associated != nil && (n.InstanceUUID != "") != *q.Associated,
		q.Fault != "" && n.Fault != q.Fault,
		q.Owner != "" && n.Owner != q.Owner,
		q.Lessee != "" && n.Lessee != q.Lessee,
		q.ConductorGroup != nil && n.ConductorGroup != *q.ConductorGroup,
		q.InstanceUUID != "" && n.InstanceUUID != q.InstanceUUID,
		q.Reserved != nil && (n.Reservation != "") != *q.Reserved,
		q.ReservedBy != "" && n.Reservation != q.ReservedBy,
		len(q.ProvisionStates) > 0 && !slices.Contains(q.ProvisionStates, n.ProvisionState):
		return false
	}
	return true
}

func nodeSortValue(n *model.Node, key string) any {
	switch key {
	case "", "id":
		return n.ID
	case "uuid":
		return n.UUID
	case "name":
		return n.Name
	case "created_at":
		return n.CreatedAt
	case "updated_at":
		return n.UpdatedAt
	case "provision_updated_at":
		return n.ProvisionUpdatedAt
	case "maintenance":
		return n.Maintenance
	}
	v, _ := json.Marshal(n)
	var m map[string]any
	_ = json.Unmarshal(v, &m)
	s, _ := m[key].(string)
	if key == "reservation" {
		s = n.Reservation
	}
	return s
}

func compareAny(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, b.(int64))
	case string:
		return strings.Compare(x, b.(string))
	case time.Time:
		return x.Compare(b.(time.Time))
	case bool:
		return cmp.Compare(boolInt(x), boolInt(b.(bool)))
	}
	return 0
}

func (m *memStore) ListNodes(_ context.Context, q store.NodeQuery) ([]*model.Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q.SortKey != "" && !slices.Contains(store.NodeSortKeys, q.SortKey) {
		return nil, fmt.Errorf("bad sort key %q", q.SortKey)
	}
	order := func(a, b *model.Node) int {
		c := cmp.Or(compareAny(nodeSortValue(a, q.SortKey), nodeSortValue(b, q.SortKey)), cmp.Compare(a.ID, b.ID))
		if q.SortDir == "desc" {
			return -c
		}
		return c
	}
	var out []*model.Node
	var marker *model.Node
	if q.Marker != "" {
		if marker = m.nodes[q.Marker]; marker == nil {
			return nil, fmt.Errorf("marker %s: %w", q.Marker, store.ErrNotFound)
		}
	}
	for _, n := range m.nodes {
		if m.matchNode(n, q) && (marker == nil || order(n, marker) > 0) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, order)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	for i, n := range out {
		out[i] = cloneNode(n)
	}
	return out, nil
}

func (m *memStore) CountNodes(ctx context.Context, q store.NodeQuery) (int, error) {
	q.Limit, q.Marker = 0, ""
	l, err := m.ListNodes(ctx, q)
	return len(l), err
}

func (m *memStore) UpdateNode(_ context.Context, n *model.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.nodes[n.UUID]
	if !ok {
		return store.ErrNotFound
	}
	if cur.Version != n.Version {
		return store.ErrStale
	}
	if err := m.nodeDup(n); err != nil {
		return err
	}
	n.Version++
	n.UpdatedAt = m.now()
	c := cloneNode(n)
	c.Reservation = cur.Reservation
	m.nodes[n.UUID] = c
	return nil
}

func (m *memStore) DeleteNode(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[id]; !ok {
		return store.ErrNotFound
	}
	delete(m.nodes, id)
	delete(m.history, id)
	for k, p := range m.ports {
		if p.NodeUUID == id {
			delete(m.ports, k)
		}
	}
	return nil
}

func (m *memStore) ReserveNode(_ context.Context, id, host string) (*model.Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	if n.Reservation != "" {
		return nil, &store.LockedError{Node: id, Holder: n.Reservation}
	}
	n.Reservation = host
	return cloneNode(n), nil
}

func (m *memStore) ReleaseNode(_ context.Context, id, host string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[id]
	if !ok {
		return store.ErrNotFound
	}
	if n.Reservation != "" && n.Reservation != host {
		return &store.LockedError{Node: id, Holder: n.Reservation}
	}
	n.Reservation = ""
	return nil
}

func (m *memStore) ReleaseHost(_ context.Context, host string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, n := range m.nodes {
		if n.Reservation == host {
			n.Reservation = ""
			out = append(out, n.UUID)
		}
	}
	return out, nil
}

func (m *memStore) portDup(p *model.Port) error {
	for _, o := range m.ports {
		if o.UUID == p.UUID {
			continue
		}
		if o.Address == p.Address {
			return &store.DuplicateError{Field: "address", Value: p.Address}
		}
		if p.Name != "" && o.Name == p.Name {
			return &store.DuplicateError{Field: "name", Value: p.Name}
		}
	}
	return nil
}

func (m *memStore) CreatePort(_ context.Context, p *model.Port) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[p.NodeUUID]; !ok {
		return store.ErrNotFound
	}
	if _, ok := m.ports[p.UUID]; ok {
		return &store.DuplicateError{Field: "uuid", Value: p.UUID}
	}
	if err := m.portDup(p); err != nil {
		return err
	}
	m.nextID++
	p.ID, p.Version = m.nextID, 1
	m.ports[p.UUID] = clonePort(p)
	return nil
}

func (m *memStore) GetPort(_ context.Context, ident string) (*model.Port, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.ports[ident]; ok {
		return clonePort(p), nil
	}
	for _, p := range m.ports {
		if p.Name != "" && p.Name == ident {
			return clonePort(p), nil
		}
	}
	return nil, store.ErrNotFound
}

func (m *memStore) GetPortByAddress(_ context.Context, mac string) (*model.Port, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.ports {
		if p.Address == mac {
			return clonePort(p), nil
		}
	}
	return nil, store.ErrNotFound
}

func portSortValue(p *model.Port, key string) any {
	switch key {
	case "", "id":
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
	return p.ID
}

func (m *memStore) ListPorts(_ context.Context, q store.PortQuery) ([]*model.Port, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	order := func(a, b *model.Port) int {
		c := cmp.Or(compareAny(portSortValue(a, q.SortKey), portSortValue(b, q.SortKey)), cmp.Compare(a.ID, b.ID))
		if q.SortDir == "desc" {
			return -c
		}
		return c
	}
	var marker *model.Port
	if q.Marker != "" {
		if marker = m.ports[q.Marker]; marker == nil {
			return nil, store.ErrNotFound
		}
	}
	var out []*model.Port
	for _, p := range m.ports {
		if (q.NodeUUID == "" || p.NodeUUID == q.NodeUUID) && (q.Address == "" || p.Address == q.Address) &&
			(marker == nil || order(p, marker) > 0) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, order)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	for i, p := range out {
		out[i] = clonePort(p)
	}
	return out, nil
}

func (m *memStore) UpdatePort(_ context.Context, p *model.Port) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.ports[p.UUID]
	if !ok {
		return store.ErrNotFound
	}
	if cur.Version != p.Version {
		return store.ErrStale
	}
	if err := m.portDup(p); err != nil {
		return err
	}
	p.Version++
	p.UpdatedAt = m.now()
	m.ports[p.UUID] = clonePort(p)
	return nil
}

func (m *memStore) DeletePort(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ports[id]; !ok {
		return store.ErrNotFound
	}
	delete(m.ports, id)
	return nil
}

func (m *memStore) RegisterConductor(_ context.Context, c *model.Conductor) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for _, o := range m.conductors {
		if o.Hostname == c.Hostname {
			o.ConductorGroup, o.Drivers, o.Online, o.UpdatedAt = c.ConductorGroup, c.Drivers, true, now
			return nil
		}
	}
	cp := *c
	cp.Online, cp.CreatedAt, cp.UpdatedAt = true, now, now
	m.conductors = append(m.conductors, &cp)
	return nil
}

func (m *memStore) HeartbeatConductor(_ context.Context, host string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conductors {
		if c.Hostname == host {
			c.UpdatedAt = now
			return nil
		}
	}
	return store.ErrNotFound
}

func (m *memStore) UnregisterConductor(_ context.Context, host string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conductors {
		if c.Hostname == host {
			c.Online = false
		}
	}
	return nil
}

func (m *memStore) GetConductor(_ context.Context, host string) (*model.Conductor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conductors {
		if c.Hostname == host {
			cp := *c
			return &cp, nil
		}
	}
	return nil, store.ErrNotFound
}

func (m *memStore) ListConductors(context.Context) ([]*model.Conductor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*model.Conductor, len(m.conductors))
	for i, c := range m.conductors {
		cp := *c
		out[i] = &cp
	}
	return out, nil
}

func (m *memStore) AddHistory(_ context.Context, e *model.HistoryEvent, keep int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	e.ID = m.nextID
	if e.UUID == "" {
		e.UUID = uuid.NewString()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = m.now()
	}
	cp := *e
	h := append(m.history[e.NodeUUID], &cp)
	if keep > 0 && len(h) > keep {
		h = h[len(h)-keep:]
	}
	m.history[e.NodeUUID] = h
	return nil
}

func (m *memStore) ListHistory(_ context.Context, node string) ([]*model.HistoryEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*model.HistoryEvent, 0, len(m.history[node]))
	for _, e := range m.history[node] {
		cp := *e
		out = append(out, &cp)
	}
	return out, nil
}

func (m *memStore) GetHistory(_ context.Context, node, event string) (*model.HistoryEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.history[node] {
		if e.UUID == event {
			cp := *e
			return &cp, nil
		}
	}
	return nil, store.ErrNotFound
}

func (m *memStore) Close() error { return nil }
