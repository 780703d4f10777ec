package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
)

const (
	historyCols = `uuid, node_uuid, created_at, severity, event_type, event, conductor,
		user_name, from_state, to_state, trigger_event, duration_ns, project, state,
		target_provision_state, duration_seconds`
	insertHistorySQL = `INSERT INTO node_history (` + historyCols + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	// pruneHistorySQL keeps a node's newest events, newest by (created_at, id)
	// as ListHistory orders them.
	pruneHistorySQL = `DELETE FROM node_history WHERE node_uuid = ? AND id NOT IN
		(SELECT id FROM node_history WHERE node_uuid = ?
		 ORDER BY created_at DESC, id DESC LIMIT ?)`
	selectHistorySQL = `SELECT id, ` + historyCols + ` FROM node_history`
)

// AddHistory implements store.NodeStore: insert and prune in one transaction.
// Errors: ErrNotFound when the node does not exist, *DuplicateError (uuid).
func (rs nodeStore) AddHistory(ctx context.Context, e *model.HistoryEvent, keep int) error {
	s := rs.s
	if e.UUID == "" {
		e.UUID = uuid.NewString()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.now()
	}
	e.CreatedAt = norm(e.CreatedAt)
	var id int64
	err := s.write(ctx, func(c conn) error {
		err := c.queryRow(ctx, insertHistorySQL, e.UUID, e.NodeUUID,
			s.d.EncodeTime(e.CreatedAt), e.Severity, e.EventType, e.Event, e.Conductor,
			e.User, e.FromState, e.ToState, e.Trigger, int64(e.Duration), e.Project, e.State,
			e.TargetProvisionState, e.DurationSeconds).Scan(&id)
		if err != nil {
			return s.writeErr(err, func(string) string { return e.UUID })
		}
		if keep <= 0 {
			return nil
		}
		_, err = c.exec(ctx, pruneHistorySQL, e.NodeUUID, e.NodeUUID, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("add history to node %s: %w", e.NodeUUID, err)
	}
	e.ID = id
	return nil
}

// ListHistory implements store.NodeStore: oldest first; an unknown node has none.
func (rs nodeStore) ListHistory(ctx context.Context, nodeUUID string) ([]*model.HistoryEvent, error) {
	s := rs.s
	rows, err := s.reader().query(ctx,
		selectHistorySQL+" WHERE node_uuid = ? ORDER BY created_at, id", nodeUUID)
	if err != nil {
		return nil, fmt.Errorf("list history of node %s: %w", nodeUUID, err)
	}
	defer rows.Close()
	var evs []*model.HistoryEvent
	for rows.Next() {
		e, err := scanHistory(rows)
		if err != nil {
			return nil, fmt.Errorf("list history of node %s: %w", nodeUUID, err)
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list history of node %s: %w", nodeUUID, err)
	}
	return evs, nil
}

// GetHistory implements store.NodeStore. Errors: ErrNotFound.
func (rs nodeStore) GetHistory(ctx context.Context, nodeUUID, eventUUID string) (*model.HistoryEvent, error) {
	s := rs.s
	e, err := scanHistory(s.reader().queryRow(ctx,
		selectHistorySQL+" WHERE node_uuid = ? AND uuid = ?", nodeUUID, eventUUID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("history event", eventUUID)
	}
	if err != nil {
		return nil, fmt.Errorf("get history event %s: %w", eventUUID, err)
	}
	return e, nil
}

func scanHistory(sc scanner) (*model.HistoryEvent, error) {
	var (
		e    model.HistoryEvent
		dur  int64
		secs sql.NullInt64
	)
	err := sc.Scan(&e.ID, &e.UUID, &e.NodeUUID, timeDest{&e.CreatedAt}, &e.Severity,
		&e.EventType, &e.Event, &e.Conductor, &e.User, &e.FromState, &e.ToState,
		&e.Trigger, &dur, &e.Project, &e.State, &e.TargetProvisionState, &secs)
	if err != nil {
		return nil, err
	}
	e.Duration = time.Duration(dur)
	if secs.Valid {
		e.DurationSeconds = &secs.Int64
	}
	return &e, nil
}
