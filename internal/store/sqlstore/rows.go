package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Ports, portgroups, allocations, chassis, deploy templates, runbooks,
// inspection rules and volume connectors and targets are tables of JSON
// rows: the JSON encoding of the model in data, beside id, uuid, version,
// created_at and updated_at, and copies of the fields that queries filter
// and sort on or that a unique constraint covers. One jsonTable describes
// such a table; its methods are the store's create, get, list, update and
// delete of it, so that every resource behaves alike. The generic record
// table is one too, of many kinds: its jsonTable is scoped to a kind
// column, and in gives the table of one kind.

// rowHead points at the fields every JSON-row model has.
type rowHead struct {
	id, version      *int64
	uuid             *string
	created, updated *time.Time
}

// jsonTable describes the table of JSON rows of model T. newJSONTable
// completes it; it is read-only afterwards.
type jsonTable[T any] struct {
	what   string // one row, in errors: "deploy template"
	plural string // in list errors: "deploy templates"
	table  string
	byName bool // get looks up an ident that is not UUID-shaped by name
	head   func(*T) rowHead
	// cols are the columns copied out of the model, written between
	// version and created_at; args gives their values in the same order
	// (nil without cols).
	cols []string
	args func(*T) []any
	// unique gives, for a unique column other than uuid, the value a
	// *store.DuplicateError names.
	unique map[string]func(*T) string
	sorts  map[string]sortCol // the sort keys of list

	// within, when its col is set, keeps every statement to the rows whose
	// col holds val (a create writes val): in sets val.
	within scope
	// read are columns read back beside id, version and data (between
	// version and data), into the pointers dest gives: the head's columns
	// of a table whose data is not decoded. nil: none.
	read []string
	dest func(*T) []any
	// encode gives the data column of a row, fill takes it back (fill must
	// copy data); nil: json.Marshal and json.Unmarshal of the row.
	encode func(*T) ([]byte, error)
	fill   func(*T, []byte) error

	insertSQL, updateSQL, deleteSQL, selectSQL string
}

// newJSONTable builds t's statements.
func newJSONTable[T any](t jsonTable[T]) *jsonTable[T] {
	cols := append(slices.Clone(t.cols), "created_at", "updated_at", "data")
	insert := cols
	if t.within.col != "" {
		insert = append([]string{t.within.col}, cols...)
	}
	t.insertSQL = "INSERT INTO " + t.table + " (uuid, version, " + strings.Join(insert, ", ") +
		") VALUES (?, 1" + strings.Repeat(", ?", len(insert)) + ") RETURNING id"
	t.updateSQL = "UPDATE " + t.table + " SET " + strings.Join(cols, " = ?, ") +
		" = ?, version = version + 1 WHERE uuid = ? AND version = ?" + t.within.cond("")
	t.deleteSQL = "DELETE FROM " + t.table + " WHERE uuid = ?" + t.within.cond("")
	t.selectSQL = "SELECT " + strings.Join(append(append([]string{"id", "version"}, t.read...), "data"), ", ") +
		" FROM " + t.table
	return &t
}

// in is t kept to the rows whose scope column holds val.
func (t *jsonTable[T]) in(val, what, plural string) *jsonTable[T] {
	c := *t
	c.within.val, c.what, c.plural = val, what, plural
	return &c
}

// data is the data column of v.
func (t *jsonTable[T]) data(v *T) ([]byte, error) {
	if t.encode != nil {
		return t.encode(v)
	}
	return json.Marshal(v)
}

// rowArgs are the values of the written columns after uuid and version.
func (t *jsonTable[T]) rowArgs(s *Store, v *T, data []byte) []any {
	var args []any
	if t.args != nil {
		args = t.args(v)
	}
	h := t.head(v)
	return append(args, s.d.EncodeTime(*h.created), s.timeArg(*h.updated), string(data))
}

// value gives the value of v's unique column, for DuplicateError.
func (t *jsonTable[T]) value(v *T) func(string) string {
	return func(col string) string {
		if f, ok := t.unique[col]; ok {
			return f(v)
		}
		return *t.head(v).uuid
	}
}

// stampNew fills a new row's UUID if empty and creation time if zero, and
// normalises both times.
func (s *Store) stampNew(id *string, created, updated *time.Time) {
	if *id == "" {
		*id = uuid.NewString()
	}
	if created.IsZero() {
		*created = s.now()
	}
	*created, *updated = norm(*created), norm(*updated)
}

// create inserts v as a single statement on the write pool: it sets ID,
// Version 1, a UUID if empty and CreatedAt if zero. Errors:
// *store.DuplicateError, store.ErrNotFound (an unknown node).
func (t *jsonTable[T]) create(ctx context.Context, s *Store, v *T) error {
	h := t.head(v)
	s.stampNew(h.uuid, h.created, h.updated)
	data, err := t.data(v)
	if err != nil {
		return fmt.Errorf("create %s %s: %w", t.what, *h.uuid, err)
	}
	args := append(t.within.args(*h.uuid), t.rowArgs(s, v, data)...)
	var id int64
	if err := s.writer().queryRow(ctx, t.insertSQL, args...).Scan(&id); err != nil {
		return fmt.Errorf("create %s %s: %w", t.what, *h.uuid, s.writeErr(err, t.value(v)))
	}
	*h.id, *h.version = id, 1
	return nil
}

// get reads the row of ident: its UUID, or, for a table looked up by
// name, its name when ident is not UUID-shaped. Errors: store.ErrNotFound.
func (t *jsonTable[T]) get(ctx context.Context, s *Store, ident string) (*T, error) {
	col := "uuid"
	if t.byName && !uuidShaped(ident) {
		col = "name"
	}
	return t.getBy(ctx, s, col, ident)
}

// getBy reads the row where col = v. Errors: store.ErrNotFound (wrapped,
// naming what).
func (t *jsonTable[T]) getBy(ctx context.Context, s *Store, col, v string) (*T, error) {
	out, err := t.query(ctx, s, t.selectSQL+" WHERE "+col+" = ?"+t.within.cond(""), t.within.args(v))
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", t.what, v, err)
	}
	if len(out) == 0 {
		return nil, notFound(t.what, v)
	}
	return out[0], nil
}

// list reads one page: w's filters, sorted by key and dir (t.sorts), the
// rows after marker, at most limit (<= 0: all). An unknown marker
// (store.ErrNotFound) is told apart from an empty page.
func (t *jsonTable[T]) list(ctx context.Context, s *Store, w *where, key, dir, marker string, limit int) ([]*T, error) {
	out, err := t.listPage(ctx, s, w, page{t.table, key, dir, marker, limit, t.within})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t.plural, err)
	}
	return out, nil
}

func (t *jsonTable[T]) listPage(ctx context.Context, s *Store, w *where, p page) ([]*T, error) {
	if t.within.col != "" {
		w.add(t.within.col+" = ?", t.within.val)
	}
	tail, err := s.paginate(w, t.sorts, p)
	if err != nil {
		return nil, err
	}
	out, err := t.query(ctx, s, t.selectSQL+w.String()+tail, w.args)
	if err == nil && len(out) == 0 && p.marker != "" {
		err = s.markerExists(ctx, t.table, p.marker, t.within)
	}
	return out, err
}

// query runs a query of selectSQL and decodes every row.
func (t *jsonTable[T]) query(ctx context.Context, s *Store, query string, args []any) ([]*T, error) {
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out         []*T
		id, version int64
		data        sql.RawBytes
	)
	cols := []any{&id, &version, &data}
	for rows.Next() {
		v := new(T)
		dest := cols
		if t.dest != nil {
			dest = slices.Concat(cols[:2], t.dest(v), cols[2:])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if err := t.decode(v, data); err != nil {
			return nil, fmt.Errorf("decode %s %d: %w", t.what, id, err)
		}
		h := t.head(v)
		*h.id, *h.version = id, version
		out = append(out, v)
	}
	return out, rows.Err()
}

// decode fills v from its data column.
func (t *jsonTable[T]) decode(v *T, data []byte) error {
	if t.fill != nil {
		return t.fill(v, data)
	}
	return json.Unmarshal(data, v)
}

// update writes v if its Version is the stored one, as a single statement
// on the write pool: it sets UpdatedAt and bumps Version, or on error
// leaves both as they were. Errors: store.ErrNotFound, store.ErrStale,
// *store.DuplicateError.
func (t *jsonTable[T]) update(ctx context.Context, s *Store, v *T) error {
	h := t.head(v)
	prev := *h.updated
	*h.updated, *h.created = norm(s.now()), norm(*h.created)
	err := t.updateRow(ctx, s, v, h)
	if err != nil {
		*h.updated = prev
		return fmt.Errorf("update %s %s: %w", t.what, *h.uuid, err)
	}
	*h.version++
	return nil
}

func (t *jsonTable[T]) updateRow(ctx context.Context, s *Store, v *T, h rowHead) error {
	data, err := t.data(v)
	if err != nil {
		return err
	}
	args := t.within.args(append(t.rowArgs(s, v, data), *h.uuid, *h.version)...)
	res, err := s.writer().exec(ctx, t.updateSQL, args...)
	if err != nil {
		return s.writeErr(err, t.value(v))
	}
	if rows, err := res.RowsAffected(); err != nil || rows == 1 {
		return err
	}
	return s.missingOrStale(ctx, t.table, *h.uuid, t.within)
}

// delete removes the row of UUID id. Errors: store.ErrNotFound.
func (t *jsonTable[T]) delete(ctx context.Context, s *Store, id string) error {
	if err := deleteOne(ctx, s.writer(), t.deleteSQL, t.within.args(id)...); err != nil {
		return fmt.Errorf("delete %s %s: %w", t.what, id, err)
	}
	return nil
}
