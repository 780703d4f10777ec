package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// chassisSorts maps store.ChassisSortKeys to columns.
var chassisSorts = map[string]sortCol{
	"id":         {col: "id"},
	"uuid":       {col: "uuid"},
	"created_at": {col: "created_at"},
	"updated_at": {"updated_at", nullTime},
}

func setChassisRow(c *model.Chassis, id, version int64) { c.ID, c.Version = id, version }

func chassisValue(c *model.Chassis) func(string) string { return func(string) string { return c.UUID } }

// CreateChassis implements store.Store.
func (s *Store) CreateChassis(ctx context.Context, c *model.Chassis) error {
	if c.UUID == "" {
		c.UUID = uuid.NewString()
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now()
	}
	c.CreatedAt, c.UpdatedAt = norm(c.CreatedAt), norm(c.UpdatedAt)
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("create chassis %s: %w", c.UUID, err)
	}
	var id int64
	err = s.writer().queryRow(ctx, `INSERT INTO chassis (uuid, version, created_at, updated_at, data)
		VALUES (?, 1, ?, ?, ?) RETURNING id`, c.UUID, s.d.EncodeTime(c.CreatedAt), s.timeArg(c.UpdatedAt), string(data)).Scan(&id)
	if err != nil {
		return fmt.Errorf("create chassis %s: %w", c.UUID, s.writeErr(err, chassisValue(c)))
	}
	c.ID, c.Version = id, 1
	return nil
}

// GetChassis implements store.Store.
func (s *Store) GetChassis(ctx context.Context, id string) (*model.Chassis, error) {
	return getJSON(ctx, s.reader(), "chassis", "chassis", "uuid", id, setChassisRow)
}

// ListChassis implements store.Store, paginated like ListNodes.
func (s *Store) ListChassis(ctx context.Context, q store.ChassisQuery) ([]*model.Chassis, error) {
	w := &where{}
	cs, err := listJSON(ctx, s, "chassis", w, chassisSorts, page{"chassis", q.SortKey, q.SortDir, q.Marker, q.Limit}, setChassisRow)
	if err != nil {
		return nil, fmt.Errorf("list chassis: %w", err)
	}
	return cs, nil
}

// UpdateChassis implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateChassis(ctx context.Context, c *model.Chassis) error {
	prev := c.UpdatedAt
	c.UpdatedAt = norm(s.now())
	c.CreatedAt = norm(c.CreatedAt)
	data, err := json.Marshal(c)
	if err == nil {
		err = s.updateVersioned(ctx, "chassis", c.UUID, `UPDATE chassis SET created_at = ?, updated_at = ?, data = ?,
			version = version + 1 WHERE uuid = ? AND version = ?`,
			[]any{s.d.EncodeTime(c.CreatedAt), s.timeArg(c.UpdatedAt), string(data), c.UUID, c.Version}, chassisValue(c))
	}
	if err != nil {
		c.UpdatedAt = prev
		return fmt.Errorf("update chassis %s: %w", c.UUID, err)
	}
	c.Version++
	return nil
}

// DeleteChassis implements store.Store: in one transaction, refused while
// a node names the chassis.
func (s *Store) DeleteChassis(ctx context.Context, id string) error {
	err := s.write(ctx, func(c conn) error {
		var n int
		if err := c.queryRow(ctx, "SELECT COUNT(*) FROM nodes WHERE chassis_uuid = ?", id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return store.ErrChassisNotEmpty
		}
		return deleteOne(ctx, c, "DELETE FROM chassis WHERE uuid = ?", id)
	})
	if err != nil {
		return fmt.Errorf("delete chassis %s: %w", id, err)
	}
	return nil
}

var _ store.ChassisStore = (*Store)(nil)
