package workq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/fault"
)

// channel is the NOTIFY channel; the payload is the owner's name.
const channel = "anvil_conductor_calls"

// answerPoll is how often a caller looks for its answer.
const answerPoll = 5 * time.Millisecond

// staleAfter: a call older than this is never run (its caller gave up or
// died: running it later would surprise everyone) and is deleted by the
// owner's next pass. A caller waits at most half of it.
const staleAfter = 2 * time.Minute

// Handler runs one call for node; body is the JSON the caller sent. Its
// reply (nil for none) is the caller's answer when it succeeds.
type Handler func(ctx context.Context, kind, node string, body []byte) (reply []byte, err error)

// Queue is the hand-off on one PostgreSQL database.
type Queue struct {
	dsn string
	db  *sql.DB
	log *slog.Logger
}

// Open connects to the PostgreSQL database dsn (already migrated).
func Open(ctx context.Context, dsn string, log *slog.Logger) (*Queue, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("workq: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(16)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("workq: connect: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Queue{dsn: dsn, db: db, log: log}, nil
}

// Close closes the queue's connections.
func (q *Queue) Close() error { return q.db.Close() }

// Call hands kind with body for node to owner and returns its answer.
// Without an answer within timeout the call is withdrawn: fault Unavailable.
func (q *Queue) Call(ctx context.Context, owner, kind, node string, body any, timeout time.Duration) error {
	_, err := q.CallReply(ctx, owner, kind, node, body, timeout)
	return err
}

// CallReply is Call that also returns the handler's reply.
func (q *Queue) CallReply(ctx context.Context, owner, kind, node string, body any, timeout time.Duration) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("workq: encode %s: %w", kind, err)
	}
	timeout = min(timeout, staleAfter/2)
	var id int64
	err = q.db.QueryRowContext(ctx, `WITH call AS (
		INSERT INTO conductor_calls (owner, kind, node_uuid, body) VALUES ($1, $2, $3, $4) RETURNING id)
		SELECT id FROM call, pg_notify($5, $1)`, owner, kind, node, string(b), channel).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("workq: queue %s: %w", kind, err)
	}
	deadline := time.Now().Add(timeout)
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
		time.Sleep(answerPoll) // polling with a deadline
	}
}

// answer reads call id: whether it is done, the reply and the answer; once
// done, it deletes the row.
func (q *Queue) answer(ctx context.Context, id int64) (bool, []byte, error, error) {
	var (
		done bool
		kind int
		msg  string
	)
	err := q.db.QueryRowContext(ctx, "SELECT done, fault_kind, message FROM conductor_calls WHERE id = $1", id).Scan(&done, &kind, &msg)
	if err != nil {
		return false, nil, nil, fmt.Errorf("workq: read answer: %w", err)
	}
	if !done {
		return false, nil, nil, nil
	}
	if _, err := q.db.ExecContext(ctx, "DELETE FROM conductor_calls WHERE id = $1", id); err != nil {
		q.log.Warn("workq: delete answered call", "id", id, "err", err)
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
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, fault.New(fault.Unavailable, "Conductor %s did not take the request in time; try again.", owner)
	}
	_, reply, answer, err := q.answer(ctx, id)
	if err != nil {
		return nil, err
	}
	return reply, answer
}

// Serve runs owner's calls with h until ctx ends: it drains the queue, then
// waits for a NOTIFY or poll, whichever comes first.
func (q *Queue) Serve(ctx context.Context, owner string, h Handler, poll time.Duration) error {
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
		for {
			ran, err := q.runOne(ctx, owner, h)
			if err != nil && ctx.Err() == nil {
				q.log.Error("workq: run a call", "err", err)
			}
			if !ran || err != nil {
				break
			}
		}
		if listener == nil {
			l, err := pgx.Connect(ctx, q.dsn)
			if err == nil {
				_, err = l.Exec(ctx, "LISTEN "+channel)
			}
			if err != nil {
				if l != nil {
					_ = l.Close(context.Background())
				}
				if ctx.Err() == nil {
					q.log.Warn("workq: listen (polling meanwhile)", "err", err)
				}
				_ = clock.Sleep(ctx, poll)
				continue
			}
			listener = l
			continue // drain again: a NOTIFY sent before LISTEN is lost
		}
		wctx, cancel := context.WithTimeout(ctx, poll)
		_, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			q.log.Warn("workq: listener lost; reconnecting", "err", err)
			_ = listener.Close(context.Background())
			listener = nil
		}
	}
	return nil
}

// runOne claims and runs the oldest queued call of owner, if any.
func (q *Queue) runOne(ctx context.Context, owner string, h Handler) (bool, error) {
	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var (
		id               int64
		kind, node, body string
	)
	err = tx.QueryRowContext(ctx, `SELECT id, kind, node_uuid, body FROM conductor_calls
		WHERE owner = $1 AND NOT done AND created_at >= now() - make_interval(secs => $2)
		ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`, owner, staleAfter.Seconds()).Scan(&id, &kind, &node, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return false, tx.Commit()
	}
	if err != nil {
		return false, err
	}
	reply, herr := h(ctx, kind, node, []byte(body))
	if _, isFault := fault.As(herr); herr != nil && !isFault {
		q.log.Error("workq: call failed", "kind", kind, "node", node, "err", herr)
	}
	fk, msg := encode(herr)
	if herr == nil {
		msg = string(reply)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE conductor_calls SET done = TRUE, fault_kind = $1, message = $2 WHERE id = $3", fk, msg, id); err != nil {
		return false, err
	}
	return true, tx.Commit()
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
