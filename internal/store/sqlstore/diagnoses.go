package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anvil-metal/anvil/internal/store"
)

// Node diagnoses (store.DiagnosisStore): one JSON document per node, the
// latest, replaced in one transaction.

// PutDiagnosis implements store.DiagnosisStore.
func (rs diagnosisStore) PutDiagnosis(ctx context.Context, nodeUUID string, data []byte) error {
	s := rs.s
	now := EncodeTimeText(s.clock())
	err := s.write(ctx, func(c conn) error {
		if err := nodeExists(ctx, c, nodeUUID); err != nil {
			return err
		}
		if _, err := c.exec(ctx, "DELETE FROM node_diagnoses WHERE node_uuid = ?", nodeUUID); err != nil {
			return err
		}
		_, err := c.exec(ctx, "INSERT INTO node_diagnoses (node_uuid, created_at, data) VALUES (?, ?, ?)",
			nodeUUID, now, string(data))
		return err
	})
	if err != nil {
		return fmt.Errorf("put diagnosis of node %s: %w", nodeUUID, err)
	}
	return nil
}

// GetDiagnosis implements store.DiagnosisStore.
func (rs diagnosisStore) GetDiagnosis(ctx context.Context, nodeUUID string) ([]byte, error) {
	s := rs.s
	var data string
	err := s.reader().queryRow(ctx, "SELECT data FROM node_diagnoses WHERE node_uuid = ?", nodeUUID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("diagnosis of node %s: %w", nodeUUID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get diagnosis of node %s: %w", nodeUUID, err)
	}
	return []byte(data), nil
}
