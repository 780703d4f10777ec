package eventlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/pkg/events"
)

// channel is the NOTIFY channel; the payload is the newest ID written.
const channel = "anvil_node_events"

// lockKey is the advisory lock writers hold while they insert, so that IDs
// are allocated in commit order.
const lockKey = 0x616e76696c657673 // "anvilevs"

// fetchBatch is how many rows one read of the table takes.
const fetchBatch = 1000

// writeAttempts bounds the retries of one batch's insert.
const writeAttempts = 5

// Config configures a Log. Zero values take the defaults.
type Config struct {
	DSN string // postgres:// URL of the (migrated) database
	Log *slog.Logger
	// Keep is how many of the newest events the table keeps (20,000); it
	// should be at least a broker's ring (events.Config.Buffer).
	Keep int
	// Batch bounds the events of one insert (1,000).
	Batch int
	// Poll is how often a follower reads the table without a NOTIFY (1 s).
	Poll time.Duration
	Now  func() time.Time
}

// Log is one process's end of the shared event log: it writes the
// process's events (Append, a Sink of the store decorator) and follows
// everyone's (Follow, CatchUp). It is safe for concurrent use.
type Log struct {
	cfg Config
	db  *sql.DB

	mu      sync.Mutex
	pending *batch // events queued for the next insert
	closed  bool
	wake    chan struct{}
	written chan struct{} // closed when the writer has exited
	pruneIn int           // events to write before the next prune

	fetchMu sync.Mutex // one read of the table at a time
}

// batch is the events of one insert, and who waits for it.
type batch struct {
	nodes []string
	data  []string
	done  chan struct{}
}

// Open connects to the database and starts the writer.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 20000
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	db, err := postgres.Connect(ctx, cfg.DSN, 4, 4)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l := &Log{cfg: cfg, db: db, wake: make(chan struct{}, 1), written: make(chan struct{}),
		pruneIn: max(cfg.Keep/10, 1)}
	go l.writer()
	return l, nil
}

// Close writes what is queued, stops the writer and closes the
// connections. Appends after Close are dropped.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.signal()
	}
	l.mu.Unlock()
	<-l.written
	return l.db.Close()
}

func (l *Log) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Append queues e for the next insert and returns what waits for its
// commit (it implements internal/events.Sink). The order of Appends is the
// order of the IDs.
func (l *Log) Append(e events.Event) (wait func()) {
	if e.Time.IsZero() {
		e.Time = l.cfg.Now().UTC()
	}
	e.ID = 0
	data, err := json.Marshal(recordOf(&e))
	if err != nil { // an Event always encodes
		l.cfg.Log.Error("eventlog: encode event", "node", e.Node, "err", err)
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.cfg.Log.Warn("eventlog: event after close dropped", "node", e.Node, "type", e.Type)
		return nil
	}
	if l.pending == nil {
		l.pending = &batch{done: make(chan struct{})}
	}
	b := l.pending
	b.nodes = append(b.nodes, e.Node)
	b.data = append(b.data, string(data))
	l.signal()
	return func() { <-b.done }
}

// writer inserts the queued batches, one transaction each, until Close.
func (l *Log) writer() {
	defer close(l.written)
	for {
		l.mu.Lock()
		b, closed := l.pending, l.closed
		if b != nil && len(b.data) > l.cfg.Batch { // split: the rest waits for the next round
			rest := &batch{nodes: b.nodes[l.cfg.Batch:], data: b.data[l.cfg.Batch:], done: b.done}
			b = &batch{nodes: b.nodes[:l.cfg.Batch], data: b.data[:l.cfg.Batch], done: make(chan struct{})}
			l.pending = rest
		} else {
			l.pending = nil
		}
		l.mu.Unlock()
		if b == nil {
			if closed {
				return
			}
			<-l.wake
			continue
		}
		l.write(b)
		close(b.done)
	}
}

// write inserts b, retrying a failed attempt a few times.
func (l *Log) write(b *batch) {
	var err error
	for attempt := range writeAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond) // backoff between attempts
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = l.insert(ctx, b)
		cancel()
		if err == nil {
			break
		}
		l.cfg.Log.Warn("eventlog: insert failed; retrying", "events", len(b.data), "attempt", attempt+1, "err", err)
	}
	if err != nil {
		l.cfg.Log.Error("eventlog: events dropped: other processes' streams miss them", "events", len(b.data), "err", err)
		return
	}
	l.mu.Lock()
	l.pruneIn -= len(b.data)
	prune := l.pruneIn <= 0
	if prune {
		l.pruneIn = max(l.cfg.Keep/10, 1)
	}
	l.mu.Unlock()
	if prune {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Prune(ctx); err != nil {
			l.cfg.Log.Warn("eventlog: prune", "err", err)
		}
	}
}

// insert writes b and wakes the followers, in one statement (one round
// trip, its own transaction): the writers' advisory lock is taken before
// any row is numbered (the sort of the insert's rows needs the join with
// the lock's row first) and held until the commit.
func (l *Log) insert(ctx context.Context, b *batch) error {
	_, err := l.db.ExecContext(ctx, `WITH locked AS (SELECT pg_advisory_xact_lock($4) AS ok),
		ins AS (
			INSERT INTO node_events (node_uuid, data)
			SELECT n, d FROM locked, unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(n, d, i) ORDER BY i
			RETURNING id)
		SELECT pg_notify($3, (SELECT max(id) FROM ins)::text)`, b.nodes, b.data, channel, int64(lockKey))
	return err
}

// Prune deletes all but the newest Keep events, and records the highest
// ID deleted.
func (l *Log) Prune(ctx context.Context) error {
	_, err := l.db.ExecContext(ctx, `WITH gone AS (
		DELETE FROM node_events WHERE id < (SELECT id FROM node_events ORDER BY id DESC OFFSET $1 LIMIT 1)
		RETURNING id)
		UPDATE node_events_pruned SET upto = GREATEST(upto, (SELECT max(id) FROM gone))
		WHERE EXISTS (SELECT 1 FROM gone)`, l.cfg.Keep-1)
	return err
}

// NewBroker returns a broker that starts with the newest events of the
// table (up to its ring's size) and whose Sync catches up with the table.
// Run Follow to keep it up to date.
func (l *Log) NewBroker(ctx context.Context, cfg eventbus.Config) (*eventbus.Broker, error) {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 10000
	}
	recent, err := l.newest(ctx, cfg.Buffer)
	if err != nil {
		return nil, err
	}
	// Read after the events: a prune in between raises it past what was
	// loaded and is gone.
	var pruned int64
	if err := l.db.QueryRowContext(ctx, "SELECT upto FROM node_events_pruned").Scan(&pruned); err != nil {
		return nil, fmt.Errorf("eventlog: read pruned: %w", err)
	}
	// Every event above the base is in the ring. With the whole table
	// read, that is every event above the last pruned one (1 when none
	// was: the position of a reader that connected to an empty log);
	// otherwise events below the oldest loaded one may be gone.
	cfg.IDBase = max(uint64(pruned), 1)
	if len(recent) == cfg.Buffer {
		cfg.IDBase = max(recent[0].ID-1, 1)
	}
	b := eventbus.NewBroker(cfg)
	for _, e := range recent {
		b.Relay(e)
	}
	b.SetSync(func(ctx context.Context) error { return l.CatchUp(ctx, b) })
	return b, nil
}

// newest reads the newest n events, oldest first.
func (l *Log) newest(ctx context.Context, n int) ([]events.Event, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT id, data FROM
		(SELECT id, data FROM node_events ORDER BY id DESC LIMIT $1) AS newest ORDER BY id`, n)
	if err != nil {
		return nil, fmt.Errorf("eventlog: read newest events: %w", err)
	}
	return scan(rows)
}

// scan decodes rows of (id, data).
func scan(rows *sql.Rows) ([]events.Event, error) {
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		var (
			id   int64
			data []byte
			r    record
		)
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("eventlog: %w", err)
		}
		if err := json.Unmarshal(data, &r); err != nil || r.Event == nil {
			return nil, fmt.Errorf("eventlog: event %d: %w", id, errors.Join(err, errors.New("not an event record")))
		}
		e := r.event()
		e.ID = uint64(id)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	return out, nil
}

// CatchUp relays into b every event committed before the call that b has
// not published yet.
func (l *Log) CatchUp(ctx context.Context, b *eventbus.Broker) error {
	l.fetchMu.Lock()
	defer l.fetchMu.Unlock()
	for {
		last := b.Stats().LastID
		rows, err := l.db.QueryContext(ctx, "SELECT id, data FROM node_events WHERE id > $1 ORDER BY id LIMIT $2",
			int64(last), fetchBatch)
		if err != nil {
			return fmt.Errorf("eventlog: read events: %w", err)
		}
		evs, err := scan(rows)
		if err != nil {
			return err
		}
		if len(evs) > 0 && evs[0].ID > last+1 {
			// A gap: rolled-back IDs, or events pruned before this
			// follower read them (it lagged more than Keep behind).
			var pruned int64
			if err := l.db.QueryRowContext(ctx, "SELECT upto FROM node_events_pruned").Scan(&pruned); err != nil {
				return fmt.Errorf("eventlog: read pruned: %w", err)
			}
			if uint64(pruned) > last {
				l.cfg.Log.Warn("eventlog: events pruned before this process read them; streams are reset", "after", last, "upto", pruned)
				b.Discontinue(uint64(pruned))
			}
		}
		for _, e := range evs {
			if !b.Relay(e) { // closed: the IDs are above its last one
				return nil
			}
		}
		if len(evs) < fetchBatch {
			return nil
		}
	}
}

// Follow relays the table's events into b until ctx ends: it catches up,
// then waits for a NOTIFY or the poll interval, whichever comes first.
func (l *Log) Follow(ctx context.Context, b *eventbus.Broker) {
	var listener *pgx.Conn
	defer func() {
		if listener != nil {
			_ = listener.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if listener == nil {
			c, err := postgres.Listen(ctx, l.cfg.DSN, channel)
			if err != nil {
				if ctx.Err() == nil {
					l.cfg.Log.Warn("eventlog: listen (polling meanwhile)", "err", err)
				}
			} else {
				listener = c
			}
		}
		// After LISTEN: a commit notified before it is read now.
		if err := l.CatchUp(ctx, b); err != nil && ctx.Err() == nil {
			l.cfg.Log.Warn("eventlog: follow", "err", err)
		}
		if listener == nil {
			_ = clock.Sleep(ctx, l.cfg.Poll)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, l.cfg.Poll)
		_, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			l.cfg.Log.Warn("eventlog: listener lost; reconnecting", "err", err)
			_ = listener.Close(context.Background())
			listener = nil
		}
	}
}

// record is an event as the table stores it: the stream's JSON of the
// event and what that JSON leaves out but other processes' brokers need
// (the node's projects, for project-scoped streams).
type record struct {
	Event        *events.Event `json:"e"`
	Owner        string        `json:"o,omitempty"`
	Lessee       string        `json:"l,omitempty"`
	PrevOwner    string        `json:"po,omitempty"`
	PrevLessee   string        `json:"pl,omitempty"`
	HistoryOwner string        `json:"ho,omitempty"`
}

func recordOf(e *events.Event) record {
	r := record{Event: e}
	if e.State != nil {
		r.Owner, r.Lessee = e.State.Owner, e.State.Lessee
	}
	if e.Previous != nil {
		r.PrevOwner, r.PrevLessee = e.Previous.Owner, e.Previous.Lessee
	}
	if e.History != nil {
		r.HistoryOwner = e.History.Owner
	}
	return r
}

// event is the event r stores, projects included.
func (r record) event() events.Event {
	e := *r.Event
	if e.State != nil {
		e.State.Owner, e.State.Lessee = r.Owner, r.Lessee
	}
	if e.Previous != nil {
		e.Previous.Owner, e.Previous.Lessee = r.PrevOwner, r.PrevLessee
	}
	if e.History != nil {
		e.History.Owner = r.HistoryOwner
	}
	return e
}
