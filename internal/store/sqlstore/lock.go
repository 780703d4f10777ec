package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// reserveAttempts bounds the retries of a reservation that failed because the
// lock was held, yet was free again when we looked at who held it.
const reserveAttempts = 5

// ReserveNode implements store.NodeStore: a compare-and-set on the reservation
// column. A host asking again for a lock it holds gets *store.LockedError, as
// in Ironic. The version is not bumped: the lock is not node data.
func (rs nodeStore) ReserveNode(ctx context.Context, id, host string) (*model.Node, error) {
	s := rs.s
	if host == "" {
		return nil, fmt.Errorf("reserve node %s: empty host", id)
	}
	for range reserveAttempts {
		var n *model.Node
		err := s.writeOne(ctx, func(c conn) (err error) {
			n, err = s.scanNode(c.queryRow(ctx, `UPDATE nodes SET reservation = ?
				WHERE uuid = ? AND reservation IS NULL RETURNING `+nodeReadCols, host, id))
			return err
		})
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("reserve node %s: %w", id, err)
		}
		holder, err := s.holder(ctx, id)
		switch {
		case err != nil:
			return nil, fmt.Errorf("reserve node %s: %w", id, err)
		case holder.Valid:
			return nil, &store.LockedError{Node: id, Holder: holder.String}
		}
		// Released between our update and our look: try again.
	}
	return nil, fmt.Errorf("reserve node %s: lock contended: %w", id, store.ErrLocked)
}

// holder reads who holds a node's reservation (NULL: nobody).
func (s *Store) holder(ctx context.Context, id string) (sql.NullString, error) {
	var holder sql.NullString
	err := s.writer().queryRow(ctx, "SELECT reservation FROM nodes WHERE uuid = ?", id).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return holder, store.ErrNotFound
	}
	return holder, err
}

// ReleaseNode implements store.NodeStore.
func (rs nodeStore) ReleaseNode(ctx context.Context, id, host string) error {
	s := rs.s
	var rows int64
	err := s.writeOne(ctx, func(c conn) error {
		res, err := c.exec(ctx,
			"UPDATE nodes SET reservation = NULL WHERE uuid = ? AND reservation = ?", id, host)
		if err != nil {
			return err
		}
		rows, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("release node %s: %w", id, err)
	}
	if rows == 1 {
		return nil
	}
	holder, err := s.holder(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("release node %s: %w", id, err)
	case holder.Valid:
		return &store.LockedError{Node: id, Holder: holder.String}
	}
	return nil
}

// ReleaseHost implements store.NodeStore; the UUIDs come back sorted.
func (rs nodeStore) ReleaseHost(ctx context.Context, host string) ([]string, error) {
	s := rs.s
	rows, err := s.writer().query(ctx,
		"UPDATE nodes SET reservation = NULL WHERE reservation = ? RETURNING uuid", host)
	if err != nil {
		return nil, fmt.Errorf("release host %s: %w", host, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("release host %s: %w", host, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("release host %s: %w", host, err)
	}
	slices.Sort(ids)
	return ids, nil
}
