package eventbus

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-metal/anvil/pkg/events"
)

// Errors a subscription ends with.
var (
	// ErrOverflow: the subscriber let its queue fill up and was cut off.
	ErrOverflow = errors.New("events: subscriber fell behind")
	// ErrClosed: the subscription or the broker was closed.
	ErrClosed = errors.New("events: subscription closed")
)

// Config configures a Broker. Zero values take the defaults.
type Config struct {
	// Buffer is how many recent events are kept for resumption (10,000).
	Buffer int
	// SubscriberBuffer is how many new events may wait for one subscriber
	// before it is cut off (1,000). The backlog a resume replays is not
	// copied: it is read from the ring as the subscriber takes it.
	SubscriberBuffer int
	// Heartbeat is how often stream servers send a keep-alive (15 s).
	Heartbeat time.Duration
	// IDBase numbers events from IDBase+1; zero takes the start time in
	// microseconds, so that IDs keep growing across restarts.
	IDBase uint64
	Now    func() time.Time
}

// Broker numbers events, keeps the last Buffer of them and fans them out to
// subscriptions without ever waiting for one. It is safe for concurrent use.
type Broker struct {
	cfg Config

	mu        sync.Mutex
	seq       uint64         // ID of the last published event
	floor     uint64         // every event with an ID above floor is in ring
	ring      []events.Event // the last len(ring) events, oldest at head
	head      int
	subs      map[*Subscription]struct{}
	observers []func(events.Event)
	closed    bool
	stats     Stats
	sync      func(context.Context) error // see SetSync
}

// Stats are the broker's counters.
type Stats struct {
	Published     uint64 // events published
	Subscribers   int    // open subscriptions
	Subscriptions uint64 // subscriptions ever opened
	Overflows     uint64 // subscriptions cut off for falling behind
	Resets        uint64 // resumes that could not be served from the ring
	LastID        uint64
}

// NewBroker returns a broker.
func NewBroker(cfg Config) *Broker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 10000
	}
	if cfg.SubscriberBuffer <= 0 {
		cfg.SubscriberBuffer = 1000
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.IDBase == 0 {
		cfg.IDBase = uint64(cfg.Now().UnixMicro())
	}
	return &Broker{cfg: cfg, seq: cfg.IDBase, floor: cfg.IDBase, ring: make([]events.Event, 0, cfg.Buffer),
		subs: map[*Subscription]struct{}{}}
}

// Heartbeat is how often a stream server should send a keep-alive.
func (b *Broker) Heartbeat() time.Duration { return b.cfg.Heartbeat }

// Observe registers fn to be called with every published event, in order,
// inside Publish: fn must be quick and must not call the broker.
func (b *Broker) Observe(fn func(events.Event)) {
	b.mu.Lock()
	b.observers = append(b.observers, fn)
	b.mu.Unlock()
}

// Publish numbers e, stamps its time (if zero), keeps it for resumption and
// queues it for every matching subscriber, and returns it. It never blocks on
// a subscriber. After Close it does nothing.
func (b *Broker) Publish(e events.Event) events.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return e
	}
	e.ID = b.seq + 1
	return b.publish(e)
}

// Append publishes e (the broker is the decorator's Sink in a single
// process): there is nothing to wait for.
func (b *Broker) Append(e events.Event) (wait func()) {
	b.Publish(e)
	return nil
}

// Relay publishes e with the ID it already has, numbered elsewhere (by the
// log processes share, internal/eventlog), if that ID is above the last
// published one; it reports whether it did. IDs relayed need not be
// consecutive, only increasing.
func (b *Broker) Relay(e events.Event) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || e.ID <= b.seq {
		return false
	}
	b.publish(e)
	return true
}

// publish keeps and fans out e, whose ID is above b.seq; b.mu is held.
func (b *Broker) publish(e events.Event) events.Event {
	if e.Time.IsZero() {
		e.Time = b.cfg.Now().UTC()
	}
	b.seq = e.ID
	e.Encode()
	if len(b.ring) < cap(b.ring) {
		b.ring = append(b.ring, e)
	} else {
		b.floor = b.ring[b.head].ID
		b.ring[b.head] = e
		b.head = (b.head + 1) % len(b.ring)
	}
	b.stats.Published++
	for s := range b.subs {
		if s.offer(&e) {
			delete(b.subs, s)
			b.stats.Overflows++
		}
	}
	for _, fn := range b.observers {
		fn(e)
	}
	return e
}

// Discontinue says the events numbered up to upto are lost to this broker
// (the shared log pruned them before it read them): resumes from below upto
// become resets, and each open subscription ends with an overflow event at
// its position, so that its reader reconnects, gets the reset and re-reads
// the nodes. It does nothing if upto is not above the last ID.
func (b *Broker) Discontinue(upto uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if upto <= b.seq {
		return
	}
	b.seq, b.floor = upto, upto
	now := b.cfg.Now().UTC()
	for s := range b.subs {
		s.cut(now)
		delete(b.subs, s)
		b.stats.Overflows++
	}
}

// SetSync sets what Sync runs: catching up with events published
// elsewhere (internal/eventlog's follower). Call it before serving.
func (b *Broker) SetSync(fn func(context.Context) error) {
	b.mu.Lock()
	b.sync = fn
	b.mu.Unlock()
}

// Sync brings the broker up to date with the events other processes
// published before the call, so that a resume from an ID another process
// delivered finds it. Without SetSync (one process) it does nothing.
func (b *Broker) Sync(ctx context.Context) error {
	b.mu.Lock()
	fn := b.sync
	b.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(ctx)
}

// Subscribe follows the events published from now on that match f.
func (b *Broker) Subscribe(f events.Filter) *Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subscribe(f, b.seq)
}

// Resume follows the events matching f published after the event with ID
// after, replaying those still kept. ok is false if some of them are no
// longer kept, or after is not an ID of this broker's run: the subscription
// then follows new events only, and the reader must re-read what it watches.
//
// The replay is read from the ring as the reader takes it, not copied: a
// resume from far back costs no memory. A reader slower than the ring
// turns over (its next replayed event evicted before it took it) is cut
// off with an overflow event at its position, from which a resume answers
// reset.
func (b *Broker) Resume(f events.Filter, after uint64) (s *Subscription, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if after > b.seq || after < b.floor {
		b.stats.Resets++
		return b.subscribe(f, b.seq), false
	}
	return b.subscribe(f, after), true
}

// subscribe registers a subscription that replays the kept events after
// the ID from (none when from is the last ID); b.mu is held.
func (b *Broker) subscribe(f events.Filter, from uint64) *Subscription {
	s := &Subscription{b: b, m: f.Compile(), start: b.seq, pos: b.seq, cursor: from,
		limit: b.cfg.SubscriberBuffer, wake: make(chan struct{}, 1)}
	if from < b.seq {
		s.replaying.Store(true)
		s.signal()
	}
	b.stats.Subscriptions++
	if b.closed {
		s.end(ErrClosed)
		return s
	}
	b.subs[s] = struct{}{}
	return s
}

// Stats returns the broker's counters.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	st.Subscribers = len(b.subs)
	st.LastID = b.seq
	return st
}

// Close ends every subscription (they drain what is queued, then report
// ErrClosed) and makes Publish a no-op. Servers call it on shutdown so that
// open streams end.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		s.end(ErrClosed)
	}
	clear(b.subs)
}

func (b *Broker) unsubscribe(s *Subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

// Subscription is one reader's queue of events: first the replay of a
// resume (read from the broker's ring, up to start), then the new events
// queued for it. Its methods are safe for concurrent use, but events are
// meant for one consumer.
type Subscription struct {
	b     *Broker
	m     *events.Matcher
	start uint64 // the broker's last ID when the subscription began
	wake  chan struct{}
	// replaying is set while events up to start remain to be replayed
	// from the ring; cursor is the last ID replayed (or skipped).
	replaying atomic.Bool

	mu     sync.Mutex
	cursor uint64
	queue  []events.Event
	limit  int
	pos    uint64 // ID of the last event offered (queued or filtered out)
	err    error  // why it ended; nil while open
}

// offer queues e if it matches. If the queue is full it ends the
// subscription with an overflow event instead and reports true. b.mu is held.
func (s *Subscription) offer(e *events.Event) (overflow bool) {
	match := s.m.Match(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !match {
		s.pos = e.ID
		return false
	}
	if len(s.queue) >= s.limit {
		last := s.pos
		if n := len(s.queue); n > 0 {
			last = s.queue[n-1].ID
		}
		s.queue = append(s.queue, events.Event{ID: last, Type: events.TypeOverflow, Time: e.Time})
		s.endLocked(ErrOverflow)
		return true
	}
	s.queue = append(s.queue, *e)
	s.pos = e.ID
	s.signal()
	return false
}

// cut ends the subscription with an overflow event at its position.
func (s *Subscription) cut(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.pos
	if n := len(s.queue); n > 0 {
		last = s.queue[n-1].ID
	}
	s.queue = append(s.queue, events.Event{ID: last, Type: events.TypeOverflow, Time: now})
	s.endLocked(ErrOverflow)
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(err)
}

func (s *Subscription) endLocked(err error) {
	if s.err == nil {
		s.err = err
		s.signal()
	}
}

// Start is the broker's last event ID when the subscription began: the
// position a reader is at before its first event (snapshots carry it).
func (s *Subscription) Start() uint64 { return s.start }

// Ready receives when events may be queued or the subscription ended; call
// Take after it fires.
func (s *Subscription) Ready() <-chan struct{} { return s.wake }

// Take appends the queued events to buf and returns it, with the reader's
// position once they are delivered (a valid resume point even if the last
// events were filtered out) and, once the queue is empty and the
// subscription ended, why it ended (ErrOverflow, ErrClosed).
func (s *Subscription) Take(buf []events.Event) ([]events.Event, uint64, error) {
	return s.TakeUpTo(buf, 0)
}

// TakeUpTo is Take of at most max events (max <= 0: all), the rest left
// for the next call: a stream server takes a bounded batch at a time.
// Ready fires again while events remain.
func (s *Subscription) TakeUpTo(buf []events.Event, max int) ([]events.Event, uint64, error) {
	if max <= 0 {
		max = math.MaxInt
	}
	if s.replaying.Load() {
		var pos uint64
		var more bool
		before := len(buf)
		buf, pos, more = s.replay(buf, max)
		if more {
			return buf, pos, nil
		}
		if max -= len(buf) - before; max <= 0 {
			s.signal()
			return buf, pos, nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(max, len(s.queue))
	buf = append(buf, s.queue[:n]...)
	rest := copy(s.queue, s.queue[n:])
	clear(s.queue[rest:])
	s.queue = s.queue[:rest]
	pos := s.pos
	if rest > 0 {
		pos = buf[len(buf)-1].ID
		s.signal()
		return buf, pos, nil
	}
	if n := len(buf); n > 0 && buf[n-1].ID > pos {
		pos = buf[n-1].ID
	}
	return buf, pos, s.err
}

// replay appends up to max kept events after the cursor (up to start)
// that match, and returns the reader's position and whether more remain to
// replay. If the ring has dropped the next event to replay, it ends the
// subscription with an overflow event at the cursor instead.
func (s *Subscription) replay(buf []events.Event, max int) ([]events.Event, uint64, bool) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.replaying.Load() { // raced with another taker
		return buf, s.cursor, false
	}
	if s.cursor < b.floor {
		// Lost: end with an overflow at the reader's position, after
		// which a resume is answered reset.
		clear(s.queue)
		s.queue = append(s.queue[:0], events.Event{ID: s.cursor, Type: events.TypeOverflow, Time: b.cfg.Now().UTC()})
		s.replaying.Store(false)
		if _, open := b.subs[s]; open {
			delete(b.subs, s)
			b.stats.Overflows++
		}
		s.endLocked(ErrOverflow)
		return buf, s.cursor, false
	}
	n := len(b.ring)
	// The first kept event after the cursor (IDs grow along the ring).
	i := sort.Search(n, func(i int) bool { return b.ring[(b.head+i)%n].ID > s.cursor })
	taken := 0
	for ; i < n && taken < max; i++ {
		e := &b.ring[(b.head+i)%n]
		if e.ID > s.start {
			break
		}
		s.cursor = e.ID
		if s.m.Match(e) {
			buf = append(buf, *e)
			taken++
		}
	}
	if i == n || b.ring[(b.head+i)%n].ID > s.start {
		s.cursor = s.start
		s.replaying.Store(false)
		return buf, s.cursor, false
	}
	s.signal()
	return buf, s.cursor, true
}

// Next waits for the next event. It returns the subscription's error (after
// the queued events, overflow included, are delivered) or ctx's.
func (s *Subscription) Next(ctx context.Context) (events.Event, error) {
	var one [1]events.Event
	for {
		evs, _, err := s.TakeUpTo(one[:0], 1)
		if len(evs) > 0 {
			return evs[0], nil
		}
		if err != nil {
			return events.Event{}, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return events.Event{}, ctx.Err()
		}
	}
}

// Close ends the subscription; the broker forgets it.
func (s *Subscription) Close() {
	s.b.unsubscribe(s)
	s.end(ErrClosed)
}
