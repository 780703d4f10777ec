package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/anvil-metal/anvil/internal/model"
)

// The generic record table keeps every record kind that needs nothing of
// its own from the database but a unique name and an owner: one table,
// the kind's JSON in data beside the RecordHead's columns. A kind is a Go
// type embedding model.RecordHead and a kind name ("widget"); RecordsOf
// gives its typed store. (Nodes, ports and the kinds older than this
// table keep their own tables.)

// RecordQuery selects the records of one kind.
type RecordQuery struct {
	// Owner, when set, selects the records it owns.
	Owner   string
	Limit   int    // <= 0: all
	Marker  string // a UUID: the records after it
	SortKey string // one of RecordSortKeys; "" means "id"
	SortDir string // "asc" (default) or "desc"
}

// RecordSortKeys are the sort keys a RecordQuery accepts.
var RecordSortKeys = []string{"id", "uuid", "name", "owner", "created_at", "updated_at"}

// RawRecord is one stored record: its head and its JSON.
type RawRecord struct {
	Head model.RecordHead
	Data []byte
}

// RecordStore keeps records of any kind as JSON. Every call names the
// kind; a record of another kind is not found. Errors as the other
// stores': ErrNotFound, ErrStale, *DuplicateError (field "uuid" or
// "name").
type RecordStore interface {
	// CreateRecord inserts data with h's columns, setting h.ID,
	// h.Version=1, a UUID if empty and CreatedAt if zero (data is written
	// as given: RecordsOf encodes it after stamping h).
	CreateRecord(ctx context.Context, kind string, h *model.RecordHead, data func() ([]byte, error)) error
	// GetRecord finds a record by UUID, or by name when ident is not
	// UUID-shaped.
	GetRecord(ctx context.Context, kind, ident string) (*RawRecord, error)
	// ListRecords returns the records matching q in q's order.
	ListRecords(ctx context.Context, kind string, q RecordQuery) ([]*RawRecord, error)
	// UpdateRecord writes data and h's columns if h.Version is the stored
	// one; it sets UpdatedAt and bumps Version (both unchanged on error).
	UpdateRecord(ctx context.Context, kind string, h *model.RecordHead, data func() ([]byte, error)) error
	// DeleteRecord removes the record of UUID uuid.
	DeleteRecord(ctx context.Context, kind, uuid string) error
}

// RecordPtr is the constraint of a record kind: a pointer to a type
// embedding model.RecordHead.
type RecordPtr[T any] interface {
	*T
	Head() *model.RecordHead
}

// Records is the typed store of one record kind.
type Records[T any, P RecordPtr[T]] struct {
	raw  RecordStore
	kind string
}

// RecordsOf is kind's typed store on st (a store.Store's Records()).
func RecordsOf[T any, P RecordPtr[T]](st RecordStore, kind string) Records[T, P] {
	return Records[T, P]{raw: st, kind: kind}
}

func (r Records[T, P]) encode(v P) func() ([]byte, error) {
	return func() ([]byte, error) { return json.Marshal(v) }
}

// Create inserts v (see RecordStore.CreateRecord).
func (r Records[T, P]) Create(ctx context.Context, v P) error {
	return r.raw.CreateRecord(ctx, r.kind, v.Head(), r.encode(v))
}

// Get reads the record ident names: its UUID or name.
func (r Records[T, P]) Get(ctx context.Context, ident string) (P, error) {
	raw, err := r.raw.GetRecord(ctx, r.kind, ident)
	if err != nil {
		return nil, err
	}
	return r.decode(raw)
}

// List reads the records q selects.
func (r Records[T, P]) List(ctx context.Context, q RecordQuery) ([]P, error) {
	raws, err := r.raw.ListRecords(ctx, r.kind, q)
	if err != nil {
		return nil, err
	}
	out := make([]P, 0, len(raws))
	for _, raw := range raws {
		v, err := r.decode(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Update writes v, version-checked (see RecordStore.UpdateRecord).
func (r Records[T, P]) Update(ctx context.Context, v P) error {
	return r.raw.UpdateRecord(ctx, r.kind, v.Head(), r.encode(v))
}

// Delete removes the record of UUID uuid.
func (r Records[T, P]) Delete(ctx context.Context, uuid string) error {
	return r.raw.DeleteRecord(ctx, r.kind, uuid)
}

// decode is the stored JSON with the head's columns over it (the
// columns are the truth: ID and Version are not in the JSON).
func (r Records[T, P]) decode(raw *RawRecord) (P, error) {
	v := P(new(T))
	if err := json.Unmarshal(raw.Data, v); err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", r.kind, raw.Head.UUID, err)
	}
	*v.Head() = raw.Head
	return v, nil
}
