package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// nullKind says how a sort column's NULLs sort: as the empty string or as
// the zero time, both below every other value, so SQL and Go agree on order.
type nullKind int

const (
	notNull nullKind = iota
	nullText
	nullTime
)

// sortCol is a sort key's column.
type sortCol struct {
	col  string
	null nullKind
}

// nodeSorts maps store.NodeSortKeys to columns.
var nodeSorts = map[string]sortCol{
	"id":                     {col: "id"},
	"uuid":                   {col: "uuid"},
	"name":                   {"name", nullText},
	"created_at":             {col: "created_at"},
	"updated_at":             {"updated_at", nullTime},
	"provision_state":        {col: "provision_state"},
	"provision_updated_at":   {"provision_updated_at", nullTime},
	"power_state":            {col: "power_state"},
	"driver":                 {col: "driver"},
	"maintenance":            {col: "maintenance"},
	"instance_uuid":          {"instance_uuid", nullText},
	"resource_class":         {col: "resource_class"},
	"owner":                  {col: "owner"},
	"lessee":                 {col: "lessee"},
	"conductor_group":        {col: "conductor_group"},
	"fault":                  {col: "fault"},
	"reservation":            {"reservation", nullText},
	"target_provision_state": {col: "target_provision_state"},
}

// where collects the conditions and arguments of a query.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// eq adds col = v, unless v is "" (no filter).
func (w *where) eq(col, v string) {
	if v != "" {
		w.add(col+" = ?", v)
	}
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// page is the pagination of a listing.
type page struct {
	table, key, dir, marker string
	limit                   int
	within                  scope // the marker is a row of the scope
}

// scope is the rows of a table whose column col holds val: the generic
// record table's rows of one kind. The zero scope is every row.
type scope struct{ col, val string }

// cond is the condition that keeps a statement within the scope, to append
// to a WHERE (prefix qualifies the column), or "" for every row.
func (sc scope) cond(prefix string) string {
	if sc.col == "" {
		return ""
	}
	return " AND " + prefix + sc.col + " = ?"
}

// args appends cond's argument to args.
func (sc scope) args(args ...any) []any {
	if sc.col == "" {
		return args
	}
	return append(args, sc.val)
}

// paginate adds the keyset condition to w and returns the ORDER BY and LIMIT
// tail: rows strictly after the marker row in (key, id) order. An unknown
// marker selects nothing; the caller then tells it apart with markerExists.
func (s *Store) paginate(w *where, sorts map[string]sortCol, p page) (string, error) {
	if p.key == "" {
		p.key = "id"
	}
	col, ok := sorts[p.key]
	if !ok {
		return "", fmt.Errorf("invalid sort key %q", p.key)
	}
	desc, err := sortDesc(p.dir)
	if err != nil {
		return "", err
	}
	cmp, dir := ">", " ASC"
	if desc {
		cmp, dir = "<", " DESC"
	}
	expr := s.sortExpr(col, "")
	if p.marker != "" {
		from := " FROM " + p.table + " m WHERE m.uuid = ?" + p.within.cond("m.") + ")"
		if p.key == "id" {
			w.add("id "+cmp+" (SELECT m.id"+from, p.within.args(p.marker)...)
		} else {
			w.add("("+expr+", id) "+cmp+" (SELECT "+s.sortExpr(col, "m.")+", m.id"+from, p.within.args(p.marker)...)
		}
	}
	tail := " ORDER BY " + expr + dir
	if p.key != "id" {
		tail += ", id" + dir
	}
	if p.limit > 0 {
		tail += " LIMIT ?"
		w.args = append(w.args, p.limit)
	}
	return tail, nil
}

func (s *Store) sortExpr(c sortCol, prefix string) string {
	switch c.null {
	case nullText:
		return "COALESCE(" + prefix + c.col + ", '')"
	case nullTime:
		return "COALESCE(" + prefix + c.col + ", " + s.d.ZeroTime + ")"
	}
	return prefix + c.col
}

// markerExists tells an unknown marker (ErrNotFound) from an empty page:
// the marker must be a row of the scope.
func (s *Store) markerExists(ctx context.Context, table, marker string, within scope) error {
	var one int
	err := s.reader().queryRow(ctx, "SELECT 1 FROM "+table+" WHERE uuid = ?"+within.cond(""), within.args(marker)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("marker", marker)
	}
	return err
}

// nodeWhere translates q's filters.
func (s *Store) nodeWhere(q *store.NodeQuery) *where {
	w := &where{}
	isNull := func(col string, b *bool) {
		if b != nil && *b {
			w.add(col + " IS NOT NULL")
		} else if b != nil {
			w.add(col + " IS NULL")
		}
	}
	w.eq("provision_state", q.ProvisionState)
	w.eq("driver", q.Driver)
	w.eq("resource_class", q.ResourceClass)
	w.eq("fault", q.Fault)
	w.eq("owner", q.Owner)
	w.eq("lessee", q.Lessee)
	if q.Project != "" {
		w.add("(owner = ? OR lessee = ?)", q.Project, q.Project)
	}
	w.eq("instance_uuid", q.InstanceUUID)
	w.eq("chassis_uuid", q.ChassisUUID)
	switch {
	case q.ParentNode == nil:
	case *q.ParentNode == "":
		w.add("parent_node IS NULL")
	default:
		w.add("parent_node = ?", *q.ParentNode)
	}
	w.eq("reservation", q.ReservedBy)
	isNull("instance_uuid", q.Associated)
	isNull("reservation", q.Reserved)
	if q.Maintenance != nil {
		w.add("maintenance = ?", *q.Maintenance)
	}
	if q.ConductorGroup != nil {
		w.add("conductor_group = ?", *q.ConductorGroup)
	}
	switch q.PowerState {
	case "":
	case store.NoPowerState:
		w.add("power_state = ''")
	default:
		w.add("power_state = ?", q.PowerState)
	}
	if q.Search != "" {
		cond, args := searchNodes(q.Search)
		w.add(cond, args...)
	}
	if !q.ProvisionUpdatedBefore.IsZero() {
		w.add("provision_updated_at < ?", s.d.EncodeTime(q.ProvisionUpdatedBefore.UTC().Truncate(time.Microsecond)))
	}
	if len(q.ProvisionStates) > 0 {
		marks := strings.Repeat(", ?", len(q.ProvisionStates))[2:]
		args := make([]any, len(q.ProvisionStates))
		for i, st := range q.ProvisionStates {
			args[i] = st
		}
		w.add("provision_state IN ("+marks+")", args...)
	}
	return w
}

// searchNodes is the condition of NodeQuery.Search and its arguments: one
// indexed subquery per kind of match (UUID prefix as a range of the uuid
// index, name part over the name index, MAC through the address index), so
// that no branch forces a scan of the nodes table.
func searchNodes(search string) (string, []any) {
	low := strings.ToLower(search)
	like := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(low)
	var parts []string
	var args []any
	if strings.Trim(low, "0123456789abcdef-") == "" {
		// Every UUID starting with low sorts in [low, low+"g"): its next
		// character is a hex digit or a hyphen, all below "g".
		parts = append(parts, "SELECT id FROM nodes WHERE uuid >= ? AND uuid < ?")
		args = append(args, low, low+"g")
	}
	parts = append(parts, `SELECT id FROM nodes WHERE LOWER(name) LIKE ? ESCAPE '\'`,
		"SELECT n.id FROM ports p JOIN nodes n ON n.uuid = p.node_uuid WHERE p.address = ?")
	args = append(args, "%"+like+"%", low)
	return "id IN (" + strings.Join(parts, " UNION ALL ") + ")", args
}

// ListNodes implements store.NodeStore in one query. An unknown sort key or
// direction is an error; Limit <= 0 means no limit.
func (rs nodeStore) ListNodes(ctx context.Context, q store.NodeQuery) ([]*model.Node, error) {
	s := rs.s
	w := s.nodeWhere(&q)
	// A page that is filtered or not in id order may need a sort. The
	// parent_node condition (every default list has it: no child nodes) has
	// no index, so alone it leaves the scan in id order.
	filtered := len(w.conds) > 1 || (len(w.conds) == 1 && q.ParentNode == nil)
	sorted := filtered || (q.SortKey != "" && q.SortKey != "id")
	tail, err := s.paginate(w, nodeSorts, page{"nodes", q.SortKey, q.SortDir, q.Marker, q.Limit, scope{}})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	sel := selectNodeSQL
	cols, set, only := onlyColumns(q.Only)
	if only {
		sel = "SELECT " + cols + " FROM nodes"
	}
	query := sel + w.String() + tail
	if order, limited := strings.CutSuffix(tail, " LIMIT ?"); limited && sorted {
		// Choose the page's ids first, then read only those rows, so that a
		// sort the indexes cannot give handles ids and keys, never whole
		// rows (a filtered, sorted page of 100,000 nodes stays cheap). A
		// plain page in id order reads the table in order and stops early.
		query = sel + " WHERE id IN (SELECT id FROM nodes" + w.String() + tail + ")" + order
	}
	var nodes []*model.Node
	if only {
		nodes, err = s.queryNodeColumns(ctx, query, w.args, set, q.Limit)
	} else {
		nodes, err = s.queryNodes(ctx, query, w.args, q.Limit)
	}
	if err == nil && len(nodes) == 0 && q.Marker != "" {
		err = s.markerExists(ctx, "nodes", q.Marker, scope{})
	}
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return nodes, nil
}

func (s *Store) queryNodes(ctx context.Context, query string, args []any, limit int) ([]*model.Node, error) {
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	nodes := make([]*model.Node, 0, max(min(limit, 1000), 16))
	var (
		id, version int64
		res         sql.NullString
		data        sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&id, &version, &res, &data); err != nil {
			return nil, err
		}
		n, err := s.decodeNode(id, version, res, data)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, rows.Err()
}

// CountNodes implements store.NodeStore; pagination fields of q are ignored.
func (rs nodeStore) CountNodes(ctx context.Context, q store.NodeQuery) (int, error) {
	s := rs.s
	w := s.nodeWhere(&q)
	var n int
	err := s.reader().queryRow(ctx, "SELECT COUNT(*) FROM nodes"+w.String(), w.args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count nodes: %w", err)
	}
	return n, nil
}

// CountNodeGroups implements store.NodeStore; pagination fields of q are ignored.
func (rs nodeStore) CountNodeGroups(ctx context.Context, q store.NodeQuery) ([]store.NodeGroup, error) {
	s := rs.s
	w := s.nodeWhere(&q)
	rows, err := s.reader().query(ctx, "SELECT provision_state, power_state, maintenance, COALESCE(reservation, ''), COALESCE(fault, ''), COUNT(*), MIN(provision_updated_at) FROM nodes"+
		w.String()+" GROUP BY provision_state, power_state, maintenance, reservation, fault", w.args...)
	if err != nil {
		return nil, fmt.Errorf("count node groups: %w", err)
	}
	defer rows.Close()
	var out []store.NodeGroup
	for rows.Next() {
		var g store.NodeGroup
		if err := rows.Scan(&g.ProvisionState, &g.PowerState, &g.Maintenance, &g.Reservation, &g.Fault, &g.Count, timeDest{&g.OldestProvisionUpdate}); err != nil {
			return nil, fmt.Errorf("count node groups: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count node groups: %w", err)
	}
	return out, nil
}
