package sqlstore

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Volume connectors and targets are stored like portgroups: the JSON of the
// model in data, with the columns that are filtered, sorted on and kept
// unique beside it. Their list errors name the table.

// connectorTable is the volume_connectors table;
// store.VolumeConnectorSortKeys are its sort keys.
var connectorTable = newJSONTable(jsonTable[model.VolumeConnector]{
	what: "volume connector", plural: "volume_connectors", table: "volume_connectors",
	head: func(c *model.VolumeConnector) rowHead {
		return rowHead{&c.ID, &c.Version, &c.UUID, &c.CreatedAt, &c.UpdatedAt}
	},
	cols: []string{"node_uuid", "type", "connector_id"},
	args: func(c *model.VolumeConnector) []any { return []any{c.NodeUUID, c.Type, c.ConnectorID} },
	unique: map[string]func(*model.VolumeConnector) string{
		"type": func(c *model.VolumeConnector) string { return c.Type + " " + c.ConnectorID },
	},
	sorts: map[string]sortCol{
		"id": {col: "id"}, "uuid": {col: "uuid"}, "node_uuid": {col: "node_uuid"},
		"type": {col: "type"}, "connector_id": {col: "connector_id"},
		"created_at": {col: "created_at"}, "updated_at": {"updated_at", nullTime},
	},
})

// targetTable is the volume_targets table; store.VolumeTargetSortKeys are
// its sort keys.
var targetTable = newJSONTable(jsonTable[model.VolumeTarget]{
	what: "volume target", plural: "volume_targets", table: "volume_targets",
	head: func(t *model.VolumeTarget) rowHead {
		return rowHead{&t.ID, &t.Version, &t.UUID, &t.CreatedAt, &t.UpdatedAt}
	},
	cols: []string{"node_uuid", "volume_type", "volume_id", "boot_index"},
	args: func(t *model.VolumeTarget) []any { return []any{t.NodeUUID, t.VolumeType, t.VolumeID, t.BootIndex} },
	unique: map[string]func(*model.VolumeTarget) string{
		"boot_index": func(t *model.VolumeTarget) string { return fmt.Sprint(t.BootIndex) },
	},
	sorts: map[string]sortCol{
		"id": {col: "id"}, "uuid": {col: "uuid"}, "node_uuid": {col: "node_uuid"},
		"volume_type": {col: "volume_type"}, "volume_id": {col: "volume_id"}, "boot_index": {col: "boot_index"},
		"created_at": {col: "created_at"}, "updated_at": {"updated_at", nullTime},
	},
})

// volumeWhere translates q's filter.
func volumeWhere(q store.VolumeQuery) *where {
	w := &where{}
	w.eq("node_uuid", q.NodeUUID)
	return w
}

// CreateVolumeConnector implements store.VolumeStore.
func (rs volumeStore) CreateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	s := rs.s
	return connectorTable.create(ctx, s, c)
}

// GetVolumeConnector implements store.VolumeStore.
func (rs volumeStore) GetVolumeConnector(ctx context.Context, id string) (*model.VolumeConnector, error) {
	s := rs.s
	return connectorTable.get(ctx, s, id)
}

// ListVolumeConnectors implements store.VolumeStore, paginated like ListNodes.
func (rs volumeStore) ListVolumeConnectors(ctx context.Context, q store.VolumeQuery) ([]*model.VolumeConnector, error) {
	s := rs.s
	return connectorTable.list(ctx, s, volumeWhere(q), q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateVolumeConnector implements store.VolumeStore, version-checked like UpdateNode.
func (rs volumeStore) UpdateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	s := rs.s
	return connectorTable.update(ctx, s, c)
}

// DeleteVolumeConnector implements store.VolumeStore.
func (rs volumeStore) DeleteVolumeConnector(ctx context.Context, id string) error {
	s := rs.s
	return connectorTable.delete(ctx, s, id)
}

// CreateVolumeTarget implements store.VolumeStore.
func (rs volumeStore) CreateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	s := rs.s
	return targetTable.create(ctx, s, t)
}

// GetVolumeTarget implements store.VolumeStore.
func (rs volumeStore) GetVolumeTarget(ctx context.Context, id string) (*model.VolumeTarget, error) {
	s := rs.s
	return targetTable.get(ctx, s, id)
}

// ListVolumeTargets implements store.VolumeStore, paginated like ListNodes.
func (rs volumeStore) ListVolumeTargets(ctx context.Context, q store.VolumeQuery) ([]*model.VolumeTarget, error) {
	s := rs.s
	return targetTable.list(ctx, s, volumeWhere(q), q.SortKey, q.SortDir, q.Marker, q.Limit)
}

// UpdateVolumeTarget implements store.VolumeStore, version-checked like UpdateNode.
func (rs volumeStore) UpdateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	s := rs.s
	return targetTable.update(ctx, s, t)
}

// DeleteVolumeTarget implements store.VolumeStore.
func (rs volumeStore) DeleteVolumeTarget(ctx context.Context, id string) error {
	s := rs.s
	return targetTable.delete(ctx, s, id)
}
