package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// The node columns written from model.Node, in nodeArgs order.
const nodeWriteCols = `name, instance_uuid, driver, provision_state, target_provision_state,
	power_state, maintenance, resource_class, fault, owner, lessee, conductor_group,
	provision_updated_at, created_at, updated_at, data, chassis_uuid, parent_node`

const (
	insertNodeSQL = `INSERT INTO nodes (uuid, version, ` + nodeWriteCols + `)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	updateNodeSQL = `UPDATE nodes SET name = ?, instance_uuid = ?, driver = ?,
		provision_state = ?, target_provision_state = ?, power_state = ?, maintenance = ?,
		resource_class = ?, fault = ?, owner = ?, lessee = ?, conductor_group = ?,
		provision_updated_at = ?, created_at = ?, updated_at = ?, data = ?, chassis_uuid = ?,
		parent_node = ?, version = version + 1
		WHERE uuid = ? AND version = ?`
	nodeReadCols  = `id, version, reservation, data`
	selectNodeSQL = `SELECT ` + nodeReadCols + ` FROM nodes`
)

// nodeArgs are the values of nodeWriteCols for n, whose JSON encoding is data.
func (s *Store) nodeArgs(n *model.Node, data []byte) []any {
	return []any{nullStr(n.Name), nullStr(n.InstanceUUID), n.Driver, n.ProvisionState,
		n.TargetProvisionState, n.PowerState, n.Maintenance, n.ResourceClass, n.Fault,
		n.Owner, n.Lessee, n.ConductorGroup, s.timeArg(n.ProvisionUpdatedAt),
		s.d.EncodeTime(n.CreatedAt), s.timeArg(n.UpdatedAt), string(data), nullStr(n.ChassisUUID),
		nullStr(n.ParentNode)}
}

// nodeValue gives the value of a node's unique column, for DuplicateError.
func nodeValue(n *model.Node) func(string) string {
	return func(col string) string {
		switch col {
		case "name":
			return n.Name
		case "instance_uuid":
			return n.InstanceUUID
		}
		return n.UUID
	}
}

// decodeNode builds a node from its columns.
func (s *Store) decodeNode(id, version int64, reservation sql.NullString, data []byte) (*model.Node, error) {
	n, err := s.cache.decode(id, data)
	if err != nil {
		return nil, fmt.Errorf("decode node %d: %w", id, err)
	}
	n.ID, n.Version, n.Reservation = id, version, reservation.String
	return n, nil
}

// scanNode reads one row of nodeReadCols.
func (s *Store) scanNode(row *sql.Row) (*model.Node, error) {
	var (
		id, version int64
		res         sql.NullString
		data        []byte
	)
	if err := row.Scan(&id, &version, &res, &data); err != nil {
		return nil, err
	}
	return s.decodeNode(id, version, res, data)
}

// CreateNode implements store.NodeStore. It fills in a UUID when n has none.
func (rs nodeStore) CreateNode(ctx context.Context, n *model.Node) error {
	s := rs.s
	s.stampNew(&n.UUID, &n.CreatedAt, &n.UpdatedAt)
	normNode(n)
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.UUID, err)
	}
	args := append([]any{n.UUID}, s.nodeArgs(n, data)...)
	var id int64
	err = s.writeOne(ctx, func(c conn) error {
		return c.queryRow(ctx, insertNodeSQL, args...).Scan(&id)
	})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.UUID, s.writeErr(err, nodeValue(n)))
	}
	n.ID, n.Version = id, 1
	return nil
}

// GetNode implements store.NodeStore.
func (rs nodeStore) GetNode(ctx context.Context, ident string) (*model.Node, error) {
	s := rs.s
	where := " WHERE name = ?"
	if uuidShaped(ident) {
		where = " WHERE uuid = ?"
	}
	n, err := s.scanNode(s.reader().queryRow(ctx, selectNodeSQL+where, ident))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("node", ident)
	}
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", ident, err)
	}
	return n, nil
}

// UpdateNode implements store.NodeStore.
func (rs nodeStore) UpdateNode(ctx context.Context, n *model.Node) error {
	s := rs.s
	prev := n.UpdatedAt
	n.UpdatedAt = s.now()
	normNode(n)
	err := s.updateNode(ctx, n)
	if err != nil {
		n.UpdatedAt = prev
		return fmt.Errorf("update node %s: %w", n.UUID, err)
	}
	n.Version++
	return nil
}

func (s *Store) updateNode(ctx context.Context, n *model.Node) error {
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	args := append(s.nodeArgs(n, data), n.UUID, n.Version)
	var rows int64
	err = s.writeOne(ctx, func(c conn) error {
		res, err := c.exec(ctx, updateNodeSQL, args...)
		if err != nil {
			return err
		}
		rows, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return s.writeErr(err, nodeValue(n))
	}
	if rows == 1 {
		return nil
	}
	return s.missingOrStale(ctx, "nodes", n.UUID, scope{})
}

// missingOrStale explains why a version-checked update changed no row.
// A row outside the scope is missing.
func (s *Store) missingOrStale(ctx context.Context, table, id string, within scope) error {
	var one int
	err := s.writer().queryRow(ctx, "SELECT 1 FROM "+table+" WHERE uuid = ?"+within.cond(""), within.args(id)...).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	}
	return store.ErrStale
}

// DeleteNode implements store.NodeStore.
func (rs nodeStore) DeleteNode(ctx context.Context, id string) error {
	s := rs.s
	err := s.write(ctx, func(c conn) error {
		if _, err := c.exec(ctx, "DELETE FROM node_history WHERE node_uuid = ?", id); err != nil {
			return err
		}
		for _, table := range []string{"ports", "portgroups", "allocations", "bios_settings", "firmware_components", "node_diagnoses",
			"volume_connectors", "volume_targets"} {
			if _, err := c.exec(ctx, "DELETE FROM "+table+" WHERE node_uuid = ?", id); err != nil {
				return err
			}
		}
		return deleteOne(ctx, c, "DELETE FROM nodes WHERE uuid = ?", id)
	})
	if err != nil {
		return fmt.Errorf("delete node %s: %w", id, err)
	}
	return nil
}

// deleteOne runs a delete that must remove exactly one row.
func deleteOne(ctx context.Context, c conn, query string, args ...any) error {
	res, err := c.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	rows, err := res.RowsAffected()
	if err == nil && rows == 0 {
		return store.ErrNotFound
	}
	return err
}
