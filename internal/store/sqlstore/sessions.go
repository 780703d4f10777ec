package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/store"
)

// Dashboard sessions (store.SessionStore). Their times are TimeLayout text
// on both engines: only compared, never shown.

// PutSession implements store.SessionStore.
func (rs sessionStore) PutSession(ctx context.Context, key string, data []byte, expires time.Time) error {
	s := rs.s
	now := EncodeTimeText(s.clock())
	err := s.writeOne(ctx, func(c conn) error {
		if _, err := c.exec(ctx, "DELETE FROM dashboard_sessions WHERE expires_at <= ?", now); err != nil {
			return err
		}
		_, err := c.exec(ctx, "INSERT INTO dashboard_sessions (key_hash, data, expires_at) VALUES (?, ?, ?)",
			key, string(data), EncodeTimeText(expires))
		return err
	})
	if err != nil {
		return fmt.Errorf("put session: %w", err)
	}
	return nil
}

// GetSession implements store.SessionStore.
func (rs sessionStore) GetSession(ctx context.Context, key string) ([]byte, error) {
	s := rs.s
	var data string
	err := s.reader().queryRow(ctx, "SELECT data FROM dashboard_sessions WHERE key_hash = ? AND expires_at > ?",
		key, EncodeTimeText(s.clock())).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get session: %w", err)
	}
	return []byte(data), nil
}

// DeleteSession implements store.SessionStore.
func (rs sessionStore) DeleteSession(ctx context.Context, key string) error {
	s := rs.s
	err := s.writeOne(ctx, func(c conn) error {
		_, err := c.exec(ctx, "DELETE FROM dashboard_sessions WHERE key_hash = ?", key)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}
