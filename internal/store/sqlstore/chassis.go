package sqlstore

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// chassisTable is the chassis table: no column beside the common ones, no
// lookup by name; store.ChassisSortKeys are its sort keys.
var chassisTable = newJSONTable(jsonTable[model.Chassis]{
	what: "chassis", plural: "chassis", table: "chassis",
	head: func(c *model.Chassis) rowHead { return rowHead{&c.ID, &c.Version, &c.UUID, &c.CreatedAt, &c.UpdatedAt} },
	sorts: map[string]sortCol{
		"id":         {col: "id"},
		"uuid":       {col: "uuid"},
		"created_at": {col: "created_at"},
		"updated_at": {"updated_at", nullTime},
	},
})

// CreateChassis implements store.Store.
func (s *Store) CreateChassis(ctx context.Context, c *model.Chassis) error {
	return chassisTable.create(ctx, s, c)
}

// GetChassis implements store.Store.
func (s *Store) GetChassis(ctx context.Context, id string) (*model.Chassis, error) {
	return chassisTable.get(ctx, s, id)
}

// ListChassis implements store.Store, paginated like ListNodes.
func (s *Store) ListChassis(ctx context.Context, q store.ChassisQuery) ([]*model.Chassis, error) {
	return chassisTable.list(ctx, s, &where{}, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateChassis implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateChassis(ctx context.Context, c *model.Chassis) error {
	return chassisTable.update(ctx, s, c)
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
		return deleteOne(ctx, c, chassisTable.deleteSQL, id)
	})
	if err != nil {
		return fmt.Errorf("delete chassis %s: %w", id, err)
	}
	return nil
}

var _ store.ChassisStore = (*Store)(nil)
