package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Volume connectors and targets are stored like portgroups: the JSON of the
// model in data, with the columns that are filtered, sorted on and kept
// unique beside it.

const (
	insertConnectorSQL = `INSERT INTO volume_connectors (uuid, version, node_uuid, type, connector_id,
		created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?) RETURNING id`
	updateConnectorSQL = `UPDATE volume_connectors SET node_uuid = ?, type = ?, connector_id = ?,
		created_at = ?, updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`
	insertTargetSQL = `INSERT INTO volume_targets (uuid, version, node_uuid, volume_type, volume_id,
		boot_index, created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	updateTargetSQL = `UPDATE volume_targets SET node_uuid = ?, volume_type = ?, volume_id = ?,
		boot_index = ?, created_at = ?, updated_at = ?, data = ?, version = version + 1
		WHERE uuid = ? AND version = ?`
)

// connectorSorts and targetSorts map store.VolumeConnectorSortKeys and
// store.VolumeTargetSortKeys to columns.
var (
	connectorSorts = map[string]sortCol{
		"id": {col: "id"}, "uuid": {col: "uuid"}, "node_uuid": {col: "node_uuid"},
		"type": {col: "type"}, "connector_id": {col: "connector_id"},
		"created_at": {col: "created_at"}, "updated_at": {"updated_at", nullTime},
	}
	targetSorts = map[string]sortCol{
		"id": {col: "id"}, "uuid": {col: "uuid"}, "node_uuid": {col: "node_uuid"},
		"volume_type": {col: "volume_type"}, "volume_id": {col: "volume_id"}, "boot_index": {col: "boot_index"},
		"created_at": {col: "created_at"}, "updated_at": {"updated_at", nullTime},
	}
)

func setConnectorRow(c *model.VolumeConnector, id, version int64) { c.ID, c.Version = id, version }
func setTargetRow(t *model.VolumeTarget, id, version int64)       { t.ID, t.Version = id, version }

func connectorValue(c *model.VolumeConnector) func(string) string {
	return func(col string) string {
		if col == "type" {
			return c.Type + " " + c.ConnectorID
		}
		return c.UUID
	}
}

func targetValue(t *model.VolumeTarget) func(string) string {
	return func(col string) string {
		if col == "boot_index" {
			return fmt.Sprint(t.BootIndex)
		}
		return t.UUID
	}
}

// stampNew fills a new row's UUID and creation time and normalises times.
func (s *Store) stampNew(id *string, created, updated *time.Time) {
	if *id == "" {
		*id = uuid.NewString()
	}
	if created.IsZero() {
		*created = s.now()
	}
	*created, *updated = norm(*created), norm(*updated)
}

// CreateVolumeConnector implements store.Store.
func (s *Store) CreateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	s.stampNew(&c.UUID, &c.CreatedAt, &c.UpdatedAt)
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("create volume connector %s: %w", c.UUID, err)
	}
	var id int64
	err = s.writer().queryRow(ctx, insertConnectorSQL, c.UUID, c.NodeUUID, c.Type, c.ConnectorID,
		s.d.EncodeTime(c.CreatedAt), s.timeArg(c.UpdatedAt), string(data)).Scan(&id)
	if err != nil {
		return fmt.Errorf("create volume connector %s: %w", c.UUID, s.writeErr(err, connectorValue(c)))
	}
	c.ID, c.Version = id, 1
	return nil
}

// GetVolumeConnector implements store.Store.
func (s *Store) GetVolumeConnector(ctx context.Context, id string) (*model.VolumeConnector, error) {
	return getJSON(ctx, s.reader(), "volume connector", "volume_connectors", "uuid", id, setConnectorRow)
}

// ListVolumeConnectors implements store.Store, paginated like ListNodes.
func (s *Store) ListVolumeConnectors(ctx context.Context, q store.VolumeQuery) ([]*model.VolumeConnector, error) {
	return listVolumes(ctx, s, "volume_connectors", connectorSorts, q, setConnectorRow)
}

// UpdateVolumeConnector implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	prev := c.UpdatedAt
	c.UpdatedAt, c.CreatedAt = norm(s.now()), norm(c.CreatedAt)
	data, err := json.Marshal(c)
	if err == nil {
		err = s.updateVersioned(ctx, "volume_connectors", c.UUID, updateConnectorSQL,
			[]any{c.NodeUUID, c.Type, c.ConnectorID, s.d.EncodeTime(c.CreatedAt), s.timeArg(c.UpdatedAt),
				string(data), c.UUID, c.Version}, connectorValue(c))
	}
	if err != nil {
		c.UpdatedAt = prev
		return fmt.Errorf("update volume connector %s: %w", c.UUID, err)
	}
	c.Version++
	return nil
}

// DeleteVolumeConnector implements store.Store.
func (s *Store) DeleteVolumeConnector(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM volume_connectors WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete volume connector %s: %w", id, err)
	}
	return nil
}

// CreateVolumeTarget implements store.Store.
func (s *Store) CreateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	s.stampNew(&t.UUID, &t.CreatedAt, &t.UpdatedAt)
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("create volume target %s: %w", t.UUID, err)
	}
	var id int64
	err = s.writer().queryRow(ctx, insertTargetSQL, t.UUID, t.NodeUUID, t.VolumeType, t.VolumeID, t.BootIndex,
		s.d.EncodeTime(t.CreatedAt), s.timeArg(t.UpdatedAt), string(data)).Scan(&id)
	if err != nil {
		return fmt.Errorf("create volume target %s: %w", t.UUID, s.writeErr(err, targetValue(t)))
	}
	t.ID, t.Version = id, 1
	return nil
}

// GetVolumeTarget implements store.Store.
func (s *Store) GetVolumeTarget(ctx context.Context, id string) (*model.VolumeTarget, error) {
	return getJSON(ctx, s.reader(), "volume target", "volume_targets", "uuid", id, setTargetRow)
}

// ListVolumeTargets implements store.Store, paginated like ListNodes.
func (s *Store) ListVolumeTargets(ctx context.Context, q store.VolumeQuery) ([]*model.VolumeTarget, error) {
	return listVolumes(ctx, s, "volume_targets", targetSorts, q, setTargetRow)
}

// UpdateVolumeTarget implements store.Store, version-checked like UpdateNode.
func (s *Store) UpdateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	prev := t.UpdatedAt
	t.UpdatedAt, t.CreatedAt = norm(s.now()), norm(t.CreatedAt)
	data, err := json.Marshal(t)
	if err == nil {
		err = s.updateVersioned(ctx, "volume_targets", t.UUID, updateTargetSQL,
			[]any{t.NodeUUID, t.VolumeType, t.VolumeID, t.BootIndex, s.d.EncodeTime(t.CreatedAt),
				s.timeArg(t.UpdatedAt), string(data), t.UUID, t.Version}, targetValue(t))
	}
	if err != nil {
		t.UpdatedAt = prev
		return fmt.Errorf("update volume target %s: %w", t.UUID, err)
	}
	t.Version++
	return nil
}

// DeleteVolumeTarget implements store.Store.
func (s *Store) DeleteVolumeTarget(ctx context.Context, id string) error {
	if err := deleteOne(ctx, s.writer(), "DELETE FROM volume_targets WHERE uuid = ?", id); err != nil {
		return fmt.Errorf("delete volume target %s: %w", id, err)
	}
	return nil
}

// listVolumes lists the connectors or targets of table matching q.
func listVolumes[T any](ctx context.Context, s *Store, table string, sorts map[string]sortCol, q store.VolumeQuery,
	set func(*T, int64, int64)) ([]*T, error) {
	w := &where{}
	if q.NodeUUID != "" {
		w.add("node_uuid = ?", q.NodeUUID)
	}
	tail, err := s.paginate(w, sorts, page{table, q.SortKey, q.SortDir, q.Marker, q.Limit})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", table, err)
	}
	out, err := queryJSON(ctx, s.reader(), table, "SELECT id, version, data FROM "+table+w.String()+tail, w.args, set)
	if err == nil && len(out) == 0 && q.Marker != "" {
		err = s.markerExists(ctx, table, q.Marker)
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", table, err)
	}
	return out, nil
}

var _ store.VolumeStore = (*Store)(nil)
