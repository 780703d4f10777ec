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

// CreateChassis implements store.ChassisStore.
func (rs chassisStore) CreateChassis(ctx context.Context, c *model.Chassis) error {
	s := rs.s
	return chassisTable.create(ctx, s, c)
}

// GetChassis implements store.ChassisStore.
func (rs chassisStore) GetChassis(ctx context.Context, id string) (*model.Chassis, error) {
	s := rs.s
	return chassisTable.get(ctx, s, id)
}

// ListChassis implements store.ChassisStore, paginated like ListNodes.
func (rs chassisStore) ListChassis(ctx context.Context, q store.ChassisQuery) ([]*model.Chassis, error) {
	s := rs.s
	return chassisTable.list(ctx, s, &where{}, q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateChassis implements store.ChassisStore, version-checked like UpdateNode.
func (rs chassisStore) UpdateChassis(ctx context.Context, c *model.Chassis) error {
	s := rs.s
	return chassisTable.update(ctx, s, c)
}

// DeleteChassis implements store.ChassisStore: in one transaction, refused while
// a node names the chassis.
func (rs chassisStore) DeleteChassis(ctx context.Context, id string) error {
	s := rs.s
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
