package workq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/store/postgres"
)

// channel is the NOTIFY channel of queued calls; the payload is the
// owner's name.
const channel = "anvil_conductor_calls"

// answered is the NOTIFY channel of answers; the payload is the call's id.
const answered = "anvil_conductor_answers"

// answerPoll is how often a caller looks for its answer while nothing
// tells it of answers (its listener is down); answerCheck how often it
// looks anyway while the listener is up (a notification lost with a
// connection).
const (
	answerPoll  = 5 * time.Millisecond
	answerCheck = 250 * time.Millisecond
)

// poolSize is the queue's connections, all kept when idle: callers' and
// the owner's serveWorkers, each call in a transaction of its own.
const poolSize = 16

// serveWorkers is how many calls a conductor runs at once, each in its own
// transaction (a connection of the queue's poolSize); calls for one node run one
// at a time, in the order they were queued.
const serveWorkers = 8

// staleAfter: a call older than this is never run (its caller gave up or
// died: running it later would surprise everyone) and is deleted by the
// owner's next pass. A caller waits at most half of it.
const staleAfter = 2 * time.Minute

// Handler runs one call for node; body is the JSON the caller sent. Its
// reply (nil for none) is the caller's answer when it succeeds.
type Handler func(ctx context.Context, kind, node string, body []byte) (reply []byte, err error)

// Queue is the hand-off on one PostgreSQL database.
type Queue struct {
	dsn  string
	db   *sql.DB
	log  *slog.Logger
	stop context.CancelFunc
	ctx  context.Context // ends with Close
	wait waiters
	bg   sync.WaitGroup // the answer listener
	// checks counts the answer reads of callers (tests: a caller told of
	// its answer does not poll for it).
	checks atomic.Int64
}

// Open connects to the PostgreSQL database dsn (already migrated).
func Open(ctx context.Context, dsn string, log *slog.Logger) (*Queue, error) {
	db, err := postgres.Connect(ctx, dsn, poolSize, poolSize)
	if err != nil {
		return nil, fmt.Errorf("workq: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	qctx, stop := context.WithCancel(context.Background())
	return &Queue{dsn: dsn, db: db, log: log, ctx: qctx, stop: stop}, nil
}

// Close stops the answer listener and closes the queue's connections.
func (q *Queue) Close() error {
	q.stop()
	q.bg.Wait()
	return q.db.Close()
}

// Call hands kind with body for node to owner and returns its answer.
// Without an answer within timeout the call is withdrawn: fault Unavailable.
func (q *Queue) Call(ctx context.Context, owner, kind, node string, body any, timeout time.Duration) error {
	_, err := q.CallReply(ctx, owner, kind, node, body, timeout)
	return err
}

// CallReply is Call that also returns the handler's reply. The caller
// waits for the answer's NOTIFY (looking every answerCheck regardless),
// or polls every answerPoll while its listener is down.
func (q *Queue) CallReply(ctx context.Context, owner, kind, node string, body any, timeout time.Duration) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("workq: encode %s: %w", kind, err)
	}
	timeout = min(timeout, staleAfter/2)
	q.listen()
	var id int64
	err = q.db.QueryRowContext(ctx, `WITH call AS (
		INSERT INTO conductor_calls (owner, kind, node_uuid, body) VALUES ($1, $2, $3, $4) RETURNING id)
		SELECT id FROM call, pg_notify($5, $1)`, owner, kind, node, string(b), channel).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("workq: queue %s: %w", kind, err)
	}
	wake, listening := q.wait.add(id)
	defer q.wait.remove(id)
	deadline := time.Now().Add(timeout)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		done, reply, answer, err := q.answer(ctx, id)
		if err != nil {
			return nil, err
		}
		if done {
			return reply, answer
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return q.withdraw(id, owner)
		}
		next := answerPoll
		if listening() {
			next = answerCheck
		}
		timer.Reset(min(next, max(time.Until(deadline), time.Millisecond)))
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
}

// answer takes call id's answer if it is done: whether it was, the reply
// and the answer (the row is deleted with it).
func (q *Queue) answer(ctx context.Context, id int64) (bool, []byte, error, error) {
	q.checks.Add(1)
	var (
		kind int
		msg  string
	)
	err := q.db.QueryRowContext(ctx, "DELETE FROM conductor_calls WHERE id = $1 AND done RETURNING fault_kind, message", id).Scan(&kind, &msg)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil, nil, nil
	}
	if err != nil {
		return false, nil, nil, fmt.Errorf("workq: read answer: %w", err)
	}
	if kind == 0 { // a success's message is its reply
		return true, []byte(msg), nil, nil
	}
	return true, nil, decode(kind, msg), nil
}

// withdraw deletes a call nobody took; a call being run (its row locked)
// is waited for and its answer returned.
func (q *Queue) withdraw(id int64, owner string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := q.db.ExecContext(ctx, "DELETE FROM conductor_calls WHERE id = $1 AND NOT done", id)
	if err != nil {
		return nil, fmt.Errorf("workq: withdraw: %w", err)
	}
	untaken := fault.New(fault.Unavailable, "Conductor %s did not take the request in time; try again.", owner)
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, untaken
	}
	done, reply, answer, err := q.answer(ctx, id)
	if err != nil {
		return nil, err
	}
	if !done { // gone: deleted as stale by its owner
		return nil, untaken
	}
	return reply, answer
}

// Serve runs owner's calls with h until ctx ends, serveWorkers at a time:
// they drain the queue, then wait for a NOTIFY for owner or poll,
// whichever comes first.
func (q *Queue) Serve(ctx context.Context, owner string, h Handler, poll time.Duration) error {
	s := &server{q: q, owner: owner, h: h, busy: map[string]bool{}, kick: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	for range serveWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); s.work(ctx) }()
	}
	defer wg.Wait()
	var listener *pgx.Conn
	defer func() {
		if listener != nil {
			_ = listener.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if _, err := q.db.ExecContext(ctx, "DELETE FROM conductor_calls WHERE owner = $1 AND created_at < now() - make_interval(secs => $2)",
			owner, staleAfter.Seconds()); err != nil && ctx.Err() == nil {
			q.log.Warn("workq: delete stale calls", "err", err)
		}
		signal(s.kick)
		if listener == nil {
			l, err := postgres.Listen(ctx, q.dsn, channel)
			if err != nil {
				if ctx.Err() == nil {
					q.log.Warn("workq: listen (polling meanwhile)", "err", err)
				}
				_ = clock.Sleep(ctx, poll)
				continue
			}
			listener = l
			continue // drain again: a NOTIFY sent before LISTEN is lost
		}
		if err := waitFor(ctx, listener, owner, poll); err != nil && ctx.Err() == nil {
			q.log.Warn("workq: listener lost; reconnecting", "err", err)
			_ = listener.Close(context.Background())
			listener = nil
		}
	}
	return nil
}

// waitFor waits up to poll for a NOTIFY on l whose payload is owner (the
// other owners' are passed over).
func waitFor(ctx context.Context, l *pgx.Conn, owner string, poll time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, poll)
	defer cancel()
	for {
		n, err := l.WaitForNotification(wctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		if n.Payload == owner {
			return nil
		}
	}
}

// server is one owner's Serve: busy holds the nodes whose call is
// running; a kick wakes one idle worker.
type server struct {
	q     *Queue
	owner string
	h     Handler
	kick  chan struct{}
	mu    sync.Mutex // claims are made one at a time, so busy is exact
	busy  map[string]bool
}

// work waits for a kick, then runs calls until it finds none it may run.
// A worker that claims a call kicks another first, so that the workers
// join in while calls are queued and one claim finds the queue empty.
func (s *server) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		for ctx.Err() == nil {
			ran, err := s.runOne(ctx)
			if err != nil && ctx.Err() == nil {
				s.q.log.Error("workq: run a call", "err", err)
			}
			if !ran || err != nil {
				break
			}
		}
	}
}

// runOne claims and runs the oldest queued call of the owner for a node
// with no call running, if any.
func (s *server) runOne(ctx context.Context) (bool, error) {
	q := s.q
	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var (
		id               int64
		kind, node, body string
	)
	s.mu.Lock()
	busy := make([]string, 0, len(s.busy))
	for n := range s.busy {
		busy = append(busy, n)
	}
	err = tx.QueryRowContext(ctx, `SELECT id, kind, node_uuid, body FROM conductor_calls
		WHERE owner = $1 AND NOT done AND created_at >= now() - make_interval(secs => $2) AND NOT node_uuid = ANY($3)
		ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`, s.owner, staleAfter.Seconds(), busy).Scan(&id, &kind, &node, &body)
	if err == nil {
		s.busy[node] = true
		signal(s.kick)
	}
	s.mu.Unlock()
	if errors.Is(err, sql.ErrNoRows) {
		return false, tx.Commit()
	}
	if err != nil {
		return false, err
	}
	defer func() {
		s.mu.Lock()
		delete(s.busy, node)
		s.mu.Unlock()
	}()
	reply, herr := s.h(ctx, kind, node, []byte(body))
	if _, isFault := fault.As(herr); herr != nil && !isFault {
		q.log.Error("workq: call failed", "kind", kind, "node", node, "err", herr)
	}
	fk, msg := encode(herr)
	if herr == nil {
		msg = string(reply)
	}
	if _, err := tx.ExecContext(ctx, `WITH call AS (
		UPDATE conductor_calls SET done = TRUE, fault_kind = $1, message = $2 WHERE id = $3 RETURNING id)
		SELECT pg_notify($4, id::text) FROM call`, fk, msg, id, answered); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// waiters are the callers waiting for answers, woken by the answer
// listener (one connection per queue, started by the first call).
type waiters struct {
	mu      sync.Mutex
	started bool
	up      bool
	ch      map[int64]chan struct{}
}

// listen starts the answer listener once, and waits (up to 2 s) for its
// first LISTEN, so that the first call's answer is not missed.
func (q *Queue) listen() {
	w := &q.wait
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return
	}
	w.started = true
	w.ch = map[int64]chan struct{}{}
	w.mu.Unlock()
	first := make(chan struct{})
	q.bg.Add(1)
	go func() { defer q.bg.Done(); q.listenAnswers(first) }()
	select {
	case <-first:
	case <-time.After(2 * time.Second):
	case <-q.ctx.Done():
	}
}

// listenAnswers wakes the waiter of every answered call until the queue
// is closed; while its connection is down, callers poll.
func (q *Queue) listenAnswers(first chan struct{}) {
	once := sync.OnceFunc(func() { close(first) })
	defer once()
	for q.ctx.Err() == nil {
		l, err := postgres.Listen(q.ctx, q.dsn, answered)
		if err != nil {
			once()
			if q.ctx.Err() == nil {
				q.log.Warn("workq: listen for answers (polling meanwhile)", "err", err)
			}
			_ = clock.Sleep(q.ctx, time.Second)
			continue
		}
		q.wait.setUp(true) // and wakes every waiter: it may have missed one
		once()
		for {
			n, err := l.WaitForNotification(q.ctx)
			if err != nil {
				break
			}
			if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
				q.wait.wake(id)
			}
		}
		q.wait.setUp(false)
		_ = l.Close(context.Background())
		if q.ctx.Err() == nil {
			q.log.Warn("workq: answer listener lost; reconnecting")
		}
	}
}

// add registers a waiter for id: its wake channel, and whether the
// listener is up (a func: it may go down or come up while it waits).
func (w *waiters) add(id int64) (<-chan struct{}, func() bool) {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	w.ch[id] = c
	w.mu.Unlock()
	return c, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.up
	}
}

func (w *waiters) remove(id int64) {
	w.mu.Lock()
	delete(w.ch, id)
	w.mu.Unlock()
}

func (w *waiters) wake(id int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.ch[id]; ok {
		signal(c)
	}
}

func (w *waiters) setUp(up bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.up = up
	for _, c := range w.ch {
		signal(c)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// internalMsg answers a call that failed with an error that is not a fault
// (its text may hold internals and is never sent back).
const internalMsg = "internal error"

func encode(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	if f, ok := fault.As(err); ok {
		return int(f.Kind), f.Msg
	}
	return -1, internalMsg
}

func decode(kind int, msg string) error {
	switch {
	case kind == 0:
		return nil
	case kind < 0:
		return errors.New("workq: the conductor failed the call: " + msg)
	}
	return &fault.Error{Kind: fault.Kind(kind), Msg: msg}
}
