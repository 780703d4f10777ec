package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// A settings table holds one JSON document per (node, key): BIOS settings
// keyed by name, firmware components by component. The timestamps live in
// their columns, not in the document.
type settingsTable struct{ table, key string }

var (
	biosTable     = settingsTable{"bios_settings", "name"}
	firmwareTable = settingsTable{"firmware_components", "component"}
)

// settingsRow is one stored row.
type settingsRow struct {
	key              string
	data             []byte
	created, updated time.Time
}

func (s *Store) listRows(ctx context.Context, c conn, t settingsTable, nodeUUID string) ([]settingsRow, error) {
	rows, err := c.query(ctx, "SELECT "+t.key+", data, created_at, updated_at FROM "+t.table+
		" WHERE node_uuid = ? ORDER BY "+t.key, nodeUUID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []settingsRow
	for rows.Next() {
		var r settingsRow
		var data string
		if err := rows.Scan(&r.key, &data, timeDest{&r.created}, timeDest{&r.updated}); err != nil {
			return nil, err
		}
		r.data = []byte(data)
		out = append(out, r)
	}
	return out, rows.Err()
}

// nodeExists answers ErrNotFound for a missing node.
func nodeExists(ctx context.Context, c conn, nodeUUID string) error {
	var one int
	err := c.queryRow(ctx, "SELECT 1 FROM nodes WHERE uuid = ?", nodeUUID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("node", nodeUUID)
	}
	return err
}

// syncRows writes plan(stored documents) (key → document) into t for the
// node, in one transaction: new keys are inserted, keys whose document
// changed are updated (updated_at now), and keys absent from the plan are
// deleted when prune.
func (s *Store) syncRows(ctx context.Context, t settingsTable, nodeUUID string, plan func(old map[string][]byte) (map[string][]byte, error), prune bool) error {
	now := s.d.EncodeTime(s.clock())
	return s.write(ctx, func(c conn) error {
		if err := nodeExists(ctx, c, nodeUUID); err != nil {
			return err
		}
		have, err := s.listRows(ctx, c, t, nodeUUID)
		if err != nil {
			return err
		}
		old := map[string][]byte{}
		for _, r := range have {
			old[r.key] = r.data
		}
		want, err := plan(old)
		if err != nil {
			return err
		}
		for k, doc := range want {
			prev, ok := old[k]
			switch {
			case !ok:
				_, err = c.exec(ctx, "INSERT INTO "+t.table+" (node_uuid, "+t.key+", created_at, data) VALUES (?, ?, ?, ?)",
					nodeUUID, k, now, string(doc))
			case !jsonEqual(prev, doc):
				_, err = c.exec(ctx, "UPDATE "+t.table+" SET data = ?, updated_at = ? WHERE node_uuid = ? AND "+t.key+" = ?",
					string(doc), now, nodeUUID, k)
			}
			if err != nil {
				return err
			}
		}
		if !prune {
			return nil
		}
		for k := range old {
			if _, ok := want[k]; !ok {
				if _, err := c.exec(ctx, "DELETE FROM "+t.table+" WHERE node_uuid = ? AND "+t.key+" = ?", nodeUUID, k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// jsonEqual compares two JSON documents by value (PostgreSQL's JSONB
// reorders keys).
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// biosDoc is what bios_settings.data holds: the setting without its times.
func biosDoc(b model.BIOSSetting) []byte {
	b.CreatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	doc, _ := json.Marshal(struct {
		model.BIOSSetting
		CreatedAt *int `json:"created_at,omitempty"`
		UpdatedAt *int `json:"updated_at,omitempty"`
	}{BIOSSetting: b})
	return doc
}

func decodeBIOS(r settingsRow) (model.BIOSSetting, error) {
	var b model.BIOSSetting
	if err := json.Unmarshal(r.data, &b); err != nil {
		return b, fmt.Errorf("bad stored BIOS setting %s: %w", r.key, err)
	}
	b.Name, b.CreatedAt, b.UpdatedAt = r.key, r.created, r.updated
	return b, nil
}

// ListBIOSSettings implements store.SettingsStore.
func (rs settingsStore) ListBIOSSettings(ctx context.Context, nodeUUID string) ([]model.BIOSSetting, error) {
	s := rs.s
	rows, err := s.listRows(ctx, s.reader(), biosTable, nodeUUID)
	if err != nil {
		return nil, fmt.Errorf("list BIOS settings of node %s: %w", nodeUUID, err)
	}
	out := make([]model.BIOSSetting, 0, len(rows))
	for _, r := range rows {
		b, err := decodeBIOS(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GetBIOSSetting implements store.SettingsStore.
func (rs settingsStore) GetBIOSSetting(ctx context.Context, nodeUUID, name string) (*model.BIOSSetting, error) {
	s := rs.s
	var r settingsRow
	var data string
	err := s.reader().queryRow(ctx, "SELECT name, data, created_at, updated_at FROM bios_settings WHERE node_uuid = ? AND name = ?",
		nodeUUID, name).Scan(&r.key, &data, timeDest{&r.created}, timeDest{&r.updated})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("BIOS setting", name)
	}
	if err != nil {
		return nil, fmt.Errorf("get BIOS setting %s of node %s: %w", name, nodeUUID, err)
	}
	r.data = []byte(data)
	b, err := decodeBIOS(r)
	return &b, err
}

// SyncBIOSSettings implements store.SettingsStore.
func (rs settingsStore) SyncBIOSSettings(ctx context.Context, nodeUUID string, settings []model.BIOSSetting) error {
	s := rs.s
	want := make(map[string][]byte, len(settings))
	for _, b := range settings {
		want[b.Name] = biosDoc(b)
	}
	same := func(map[string][]byte) (map[string][]byte, error) { return want, nil }
	if err := s.syncRows(ctx, biosTable, nodeUUID, same, true); err != nil {
		return fmt.Errorf("cache BIOS settings of node %s: %w", nodeUUID, err)
	}
	return nil
}

// firmwareDoc is what firmware_components.data holds.
type firmwareDoc struct {
	Initial string `json:"initial_version"`
	Current string `json:"current_version"`
	Flashed string `json:"last_version_flashed,omitempty"`
	// The hardware's identity (API 1.114), refreshed on every sync.
	Vendor string `json:"vendor,omitempty"`
	Model  string `json:"model,omitempty"`
	Serial string `json:"serial_number,omitempty"`
}

// ListFirmwareComponents implements store.SettingsStore.
func (rs settingsStore) ListFirmwareComponents(ctx context.Context, nodeUUID string) ([]model.FirmwareComponent, error) {
	s := rs.s
	rows, err := s.listRows(ctx, s.reader(), firmwareTable, nodeUUID)
	if err != nil {
		return nil, fmt.Errorf("list firmware components of node %s: %w", nodeUUID, err)
	}
	out := make([]model.FirmwareComponent, 0, len(rows))
	for _, r := range rows {
		var d firmwareDoc
		if err := json.Unmarshal(r.data, &d); err != nil {
			return nil, fmt.Errorf("bad stored firmware component %s: %w", r.key, err)
		}
		out = append(out, model.FirmwareComponent{Component: r.key, InitialVersion: d.Initial, CurrentVersion: d.Current,
			LastVersionFlashed: d.Flashed, Vendor: d.Vendor, Model: d.Model, SerialNumber: d.Serial,
			CreatedAt: r.created, UpdatedAt: r.updated})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out, nil
}

// SyncFirmwareComponents implements store.SettingsStore.
func (rs settingsStore) SyncFirmwareComponents(ctx context.Context, nodeUUID string, comps []model.FirmwareComponent) error {
	s := rs.s
	plan := func(old map[string][]byte) (map[string][]byte, error) {
		want := map[string][]byte{}
		for _, c := range comps {
			d := firmwareDoc{Initial: c.CurrentVersion, Current: c.CurrentVersion}
			if raw, ok := old[c.Component]; ok {
				if err := json.Unmarshal(raw, &d); err != nil {
					return nil, fmt.Errorf("bad stored firmware component %s: %w", c.Component, err)
				}
				if d.Current != c.CurrentVersion {
					d.Current, d.Flashed = c.CurrentVersion, c.CurrentVersion
				}
			}
			d.Vendor, d.Model, d.Serial = c.Vendor, c.Model, c.SerialNumber
			want[c.Component], _ = json.Marshal(d)
		}
		return want, nil
	}
	if err := s.syncRows(ctx, firmwareTable, nodeUUID, plan, false); err != nil {
		return fmt.Errorf("cache firmware components of node %s: %w", nodeUUID, err)
	}
	return nil
}
