package eventbus

import (
	"context"
	"sync"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"

	"github.com/anvil-metal/anvil/pkg/events"
)

// Publisher is a store that publishes its node changes (what Store returns).
// It satisfies the API's readers (api.NodeReader with its Broker, ...): the
// API serves the stream of its Broker.
type Publisher interface {
	store.Store
	Broker() *Broker
}

// Sink takes the decorator's events in the order of the writes. Append is
// called with the decorator's lock held and must not wait for I/O: it
// queues e and returns what waits until e is published (nil when it
// already is). The decorator calls wait before the write call returns, so
// that a node's next writer (the next holder of its lock, maybe in another
// process) publishes after it.
type Sink interface {
	Append(e events.Event) (wait func())
}

// Store returns inner with every successful write of its node store
// published on b: CreateNode, UpdateNode (when a watched field changed),
// DeleteNode, the reservation changes of ReserveNode, ReleaseNode and
// ReleaseHost, and AddHistory. Reads, and every other role store, pass
// through. Writes made by other processes sharing
// the database are not seen: for those, see StoreVia.
func Store(inner store.Store, b *Broker) Publisher {
	return StoreVia(inner, b, b)
}

// StoreVia is Store with the events sent to sink rather than to b: when
// processes share a database, sink is the log they share
// (internal/eventlog), which relays every process's events, in one order,
// to each process's broker b.
func StoreVia(inner store.Store, b *Broker, sink Sink) Publisher {
	return &publisher{Store: inner, b: b,
		nodes: &nodePublisher{NodeStore: inner.Nodes(), sink: sink, known: map[string]known{}}}
}

// publisher is the decorator: its node store publishes, every other role
// store is inner's.
type publisher struct {
	store.Store
	b     *Broker
	nodes *nodePublisher
}

// nodePublisher is the node store that publishes. It remembers the last
// published state of each node it has seen, to tell what an update changed
// without reading the node again: O(nodes) small entries.
type nodePublisher struct {
	store.NodeStore
	sink Sink

	mu    sync.Mutex
	known map[string]known // node UUID → last published state
}

type known struct {
	version int64
	name    string
	state   events.NodeState
}

func (p *publisher) Broker() *Broker { return p.b }

// Nodes implements store.Store: inner's node store, publishing.
func (p *publisher) Nodes() store.NodeStore { return p.nodes }

// emit sends e to the sink; p.mu is held. Call the result (maybe nil) with
// wait once p.mu is released.
func (p *nodePublisher) emit(e events.Event) func() { return p.sink.Append(e) }

// wait runs a Sink's wait, if any.
func wait(w func()) {
	if w != nil {
		w()
	}
}

// CreateNode implements store.NodeStore.
func (p *nodePublisher) CreateNode(ctx context.Context, n *model.Node) error {
	if err := p.NodeStore.CreateNode(ctx, n); err != nil {
		return err
	}
	st := StateOf(n)
	p.mu.Lock()
	p.known[n.UUID] = known{version: n.Version, name: n.Name, state: st}
	w := p.emit(events.Event{Type: events.TypeCreated, Node: n.UUID, Name: n.Name, State: &st})
	p.mu.Unlock()
	wait(w)
	return nil
}

// UpdateNode implements store.NodeStore.
func (p *nodePublisher) UpdateNode(ctx context.Context, n *model.Node) error {
	p.mu.Lock()
	_, seen := p.known[n.UUID]
	p.mu.Unlock()
	var before *model.Node
	if !seen { // first write to a node this process has not read through us
		before, _ = p.NodeStore.GetNode(ctx, n.UUID)
	}
	if err := p.NodeStore.UpdateNode(ctx, n); err != nil {
		return err
	}
	wait(p.updated(n, before))
	return nil
}

// updated records and emits an update of n (before: the node as stored
// before it, when not known); it returns the sink's wait.
func (p *nodePublisher) updated(n, before *model.Node) func() {
	cur := StateOf(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.known[n.UUID]
	switch {
	case ok && old.version >= n.Version:
		return nil // a newer write was published already, with these changes
	case !ok && before != nil:
		old, ok = known{version: before.Version, name: before.Name, state: StateOf(before)}, true
	}
	// UpdateNode never writes the reservation: keep the one we know.
	cur.Reservation = old.state.Reservation
	p.known[n.UUID] = known{version: n.Version, name: n.Name, state: cur}
	e := events.Event{Type: events.TypeUpdated, Node: n.UUID, Name: n.Name, State: &cur}
	if ok {
		prev := old.state
		e.Previous = &prev
		e.Changed = changed(old.name, old.state, n.Name, cur)
		moved := old.state.Owner != cur.Owner || old.state.Lessee != cur.Lessee
		if len(e.Changed) == 0 && !moved { // a move between projects is published for their streams
			return nil
		}
	} else {
		e.Changed = events.Fields()
	}
	return p.emit(e)
}

// DeleteNode implements store.NodeStore.
func (p *nodePublisher) DeleteNode(ctx context.Context, uuid string) error {
	if err := p.NodeStore.DeleteNode(ctx, uuid); err != nil {
		return err
	}
	p.mu.Lock()
	e := events.Event{Type: events.TypeDeleted, Node: uuid}
	if k, ok := p.known[uuid]; ok {
		e.Name, e.State = k.name, &k.state
		delete(p.known, uuid)
	}
	w := p.emit(e)
	p.mu.Unlock()
	wait(w)
	return nil
}

// ReserveNode implements store.NodeStore.
func (p *nodePublisher) ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error) {
	n, err := p.NodeStore.ReserveNode(ctx, uuid, host)
	if err != nil {
		return n, err
	}
	p.mu.Lock()
	old, ok := p.known[n.UUID]
	var cur events.NodeState
	switch {
	case ok && old.version >= n.Version:
		// Nothing but the lock changed since (or a newer write is known).
		cur = old.state
		cur.Reservation = n.Reservation
	case ok:
		cur = StateOf(n) // written by someone we did not see
		old.version, old.name = n.Version, n.Name
	default:
		cur = StateOf(n)
		old = known{version: n.Version, name: n.Name, state: cur}
		old.state.Reservation = ""
	}
	w := p.publishLock(n.UUID, old, cur)
	p.mu.Unlock()
	wait(w)
	return n, nil
}

// publishLock records cur as node uuid's state and emits the change from
// old, if any, returning the sink's wait. p.mu is held.
func (p *nodePublisher) publishLock(uuid string, old known, cur events.NodeState) func() {
	p.known[uuid] = known{version: old.version, name: old.name, state: cur}
	ch := changed(old.name, old.state, old.name, cur)
	if len(ch) == 0 {
		return nil
	}
	prev := old.state
	return p.emit(events.Event{Type: events.TypeUpdated, Node: uuid, Name: old.name, Changed: ch,
		State: &cur, Previous: &prev})
}

// ReleaseNode implements store.NodeStore.
func (p *nodePublisher) ReleaseNode(ctx context.Context, uuid, host string) error {
	if err := p.NodeStore.ReleaseNode(ctx, uuid, host); err != nil {
		return err
	}
	p.released(uuid, host)
	return nil
}

// ReleaseHost implements store.NodeStore.
func (p *nodePublisher) ReleaseHost(ctx context.Context, host string) ([]string, error) {
	freed, err := p.NodeStore.ReleaseHost(ctx, host)
	for _, uuid := range freed {
		p.mu.Lock()
		_, seen := p.known[uuid]
		p.mu.Unlock()
		if !seen {
			if n, gerr := p.NodeStore.GetNode(ctx, uuid); gerr == nil && n.Reservation == "" {
				p.mu.Lock()
				if _, ok := p.known[uuid]; !ok {
					st := StateOf(n)
					st.Reservation = host
					p.known[uuid] = known{version: n.Version, name: n.Name, state: st}
				}
				p.mu.Unlock()
			}
		}
		p.released(uuid, host)
	}
	return freed, err
}

// released publishes that host no longer holds uuid's lock.
func (p *nodePublisher) released(uuid, host string) {
	p.mu.Lock()
	old, ok := p.known[uuid]
	if !ok || old.state.Reservation != host {
		p.mu.Unlock()
		return
	}
	cur := old.state
	cur.Reservation = ""
	w := p.publishLock(uuid, old, cur)
	p.mu.Unlock()
	wait(w)
}

// AddHistory implements store.NodeStore.
func (p *nodePublisher) AddHistory(ctx context.Context, e *model.HistoryEvent, keep int) error {
	if err := p.NodeStore.AddHistory(ctx, e, keep); err != nil {
		return err
	}
	p.mu.Lock()
	k := p.known[e.NodeUUID]
	h := historyOf(e)
	h.Owner = k.state.Owner
	w := p.emit(events.Event{Type: events.TypeHistory, Node: e.NodeUUID, Name: k.name, History: h})
	p.mu.Unlock()
	wait(w)
	return nil
}
