package sqlstore

import (
	"bytes"
	"context"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// recordRow is a row of the generic record table as jsonTable sees it:
// the head (the caller's, written in place) and the kind's JSON, made by
// enc on a write and kept in data on a read.
type recordRow struct {
	h    *model.RecordHead
	enc  func() ([]byte, error)
	data []byte
}

// head is r's head; a row being read gets a new one.
func (r *recordRow) head() *model.RecordHead {
	if r.h == nil {
		r.h = new(model.RecordHead)
	}
	return r.h
}

// recordTable is the records table, of every kind: in(kind) is one kind's.
// The head is in columns (read back from them: data is never decoded here);
// store.RecordSortKeys are its sort keys.
var recordTable = newJSONTable(jsonTable[recordRow]{
	table: "records", byName: true, within: scope{col: "kind"},
	head: func(r *recordRow) rowHead {
		h := r.head()
		return rowHead{&h.ID, &h.Version, &h.UUID, &h.CreatedAt, &h.UpdatedAt}
	},
	cols: []string{"name", "owner"},
	args: func(r *recordRow) []any { return []any{nullStr(r.head().Name), r.head().Owner} },
	read: []string{"uuid", "COALESCE(name, '')", "owner", "created_at", "updated_at"},
	dest: func(r *recordRow) []any {
		h := r.head()
		return []any{&h.UUID, &h.Name, &h.Owner, timeDest{&h.CreatedAt}, timeDest{&h.UpdatedAt}}
	},
	encode: func(r *recordRow) ([]byte, error) { return r.enc() },
	fill: func(r *recordRow, data []byte) error {
		r.data = bytes.Clone(data)
		return nil
	},
	unique: map[string]func(*recordRow) string{
		"name": func(r *recordRow) string { return r.head().Name },
	},
	sorts: map[string]sortCol{
		"id":         {col: "id"},
		"uuid":       {col: "uuid"},
		"name":       {"name", nullText},
		"owner":      {col: "owner"},
		"created_at": {col: "created_at"},
		"updated_at": {"updated_at", nullTime},
	},
})

// kindTable is the records table of kind: errors name the kind.
func kindTable(kind string) *jsonTable[recordRow] {
	return recordTable.in(kind, kind, kind+" records")
}

func raw(r *recordRow) *store.RawRecord { return &store.RawRecord{Head: *r.head(), Data: r.data} }

// CreateRecord implements store.RecordStore: h is stamped before data is
// called.
func (rs recordStore) CreateRecord(ctx context.Context, kind string, h *model.RecordHead, data func() ([]byte, error)) error {
	return kindTable(kind).create(ctx, rs.s, &recordRow{h: h, enc: data})
}

// GetRecord implements store.RecordStore: by UUID, or by name.
func (rs recordStore) GetRecord(ctx context.Context, kind, ident string) (*store.RawRecord, error) {
	r, err := kindTable(kind).get(ctx, rs.s, ident)
	if err != nil {
		return nil, err
	}
	return raw(r), nil
}

// ListRecords implements store.RecordStore, paginated like ListNodes.
func (rs recordStore) ListRecords(ctx context.Context, kind string, q store.RecordQuery) ([]*store.RawRecord, error) {
	w := &where{}
	w.eq("owner", q.Owner)
	rows, err := kindTable(kind).list(ctx, rs.s, w, q.SortKey, q.SortDir, q.Marker, q.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]*store.RawRecord, len(rows))
	for i, r := range rows {
		out[i] = raw(r)
	}
	return out, nil
}

// UpdateRecord implements store.RecordStore, version-checked like
// UpdateNode: UpdatedAt is set before data is called.
func (rs recordStore) UpdateRecord(ctx context.Context, kind string, h *model.RecordHead, data func() ([]byte, error)) error {
	return kindTable(kind).update(ctx, rs.s, &recordRow{h: h, enc: data})
}

// DeleteRecord implements store.RecordStore. Errors: ErrNotFound.
func (rs recordStore) DeleteRecord(ctx context.Context, kind, uuid string) error {
	return kindTable(kind).delete(ctx, rs.s, uuid)
}
