package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Portgroups and allocations are stored as the JSON of their model in a
// data column beside id and version, like ports; these helpers read them.

// getJSON reads one row of table (SELECT id, version, data) where col = v
// into a new T, then calls set with its id and version. Errors:
// store.ErrNotFound (wrapped, naming what).
func getJSON[T any](ctx context.Context, c conn, what, table, col, v string, set func(*T, int64, int64)) (*T, error) {
	var (
		id, version int64
		data        []byte
	)
	err := c.queryRow(ctx, "SELECT id, version, data FROM "+table+" WHERE "+col+" = ?", v).Scan(&id, &version, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(what, v)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", what, v, err)
	}
	return decodeJSON(what, id, version, data, set)
}

func decodeJSON[T any](what string, id, version int64, data []byte, set func(*T, int64, int64)) (*T, error) {
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("decode %s %d: %w", what, id, err)
	}
	set(out, id, version)
	return out, nil
}

// queryJSON runs a SELECT id, version, data query and decodes every row.
func queryJSON[T any](ctx context.Context, c conn, what, query string, args []any, set func(*T, int64, int64)) ([]*T, error) {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		var (
			id, version int64
			data        sql.RawBytes
		)
		if err := rows.Scan(&id, &version, &data); err != nil {
			return nil, err
		}
		v, err := decodeJSON(what, id, version, data, set)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// listJSON lists one page of a table of JSON rows (id, version, data):
// w's filters, p's sort and keyset page, rows built by set; an unknown
// marker (store.ErrNotFound) is told apart from an empty page.
func listJSON[T any](ctx context.Context, s *Store, what string, w *where, sorts map[string]sortCol, p page, set func(*T, int64, int64)) ([]*T, error) {
	tail, err := s.paginate(w, sorts, p)
	if err != nil {
		return nil, err
	}
	out, err := queryJSON(ctx, s.reader(), what, "SELECT id, version, data FROM "+p.table+w.String()+tail, w.args, set)
	if err == nil && len(out) == 0 && p.marker != "" {
		err = s.markerExists(ctx, p.table, p.marker)
	}
	return out, err
}

// updateVersioned runs a version-checked UPDATE of one row; no row updated
// is store.ErrNotFound or store.ErrStale.
func (s *Store) updateVersioned(ctx context.Context, table, uuid, query string, args []any, value func(string) string) error {
	res, err := s.writer().exec(ctx, query, args...)
	if err != nil {
		return s.writeErr(err, value)
	}
	if rows, err := res.RowsAffected(); err != nil || rows == 1 {
		return err
	}
	return s.missingOrStale(ctx, table, uuid)
}
