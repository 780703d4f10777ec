package sqlstore

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJSONTableStatements checks each table's statements: the ones the
// resources wrote out by hand before jsonTable built them (spacing aside),
// with as many placeholders as the values rowArgs gives.
func TestJSONTableStatements(t *testing.T) {
	s := &Store{d: Dialect{EncodeTime: EncodeTimeText}}
	for _, c := range []tableCase{
		jsonTableCase(s, "allocations", allocationTable,
			`INSERT INTO allocations (uuid, version, name, node_uuid, state, resource_class, owner, created_at, updated_at, data)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE allocations SET name = ?, node_uuid = ?, state = ?, resource_class = ?, owner = ?, created_at = ?,
			updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "chassis", chassisTable,
			`INSERT INTO chassis (uuid, version, created_at, updated_at, data) VALUES (?, 1, ?, ?, ?) RETURNING id`,
			`UPDATE chassis SET created_at = ?, updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "portgroups", portgroupTable,
			`INSERT INTO portgroups (uuid, version, name, address, node_uuid, created_at, updated_at, data)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE portgroups SET name = ?, address = ?, node_uuid = ?, created_at = ?, updated_at = ?, data = ?,
			version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "ports", portTable,
			`INSERT INTO ports (uuid, version, address, name, node_uuid, portgroup_uuid, pxe_enabled, created_at, updated_at, data)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE ports SET address = ?, name = ?, node_uuid = ?, portgroup_uuid = ?, pxe_enabled = ?, created_at = ?,
			updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "deploy_templates", templateTable,
			`INSERT INTO deploy_templates (uuid, version, name, created_at, updated_at, data)
			VALUES (?, 1, ?, ?, ?, ?) RETURNING id`,
			`UPDATE deploy_templates SET name = ?, created_at = ?, updated_at = ?, data = ?,
			version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "runbooks", runbookTable,
			`INSERT INTO runbooks (uuid, version, name, owner, public, disable_ramdisk, created_at, updated_at, data)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE runbooks SET name = ?, owner = ?, public = ?, disable_ramdisk = ?, created_at = ?,
			updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "inspection_rules", ruleTable,
			`INSERT INTO inspection_rules (uuid, version, priority, phase, description, sensitive,
			created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE inspection_rules SET priority = ?, phase = ?, description = ?, sensitive = ?,
			created_at = ?, updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "volume_connectors", connectorTable,
			`INSERT INTO volume_connectors (uuid, version, node_uuid, type, connector_id,
			created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE volume_connectors SET node_uuid = ?, type = ?, connector_id = ?,
			created_at = ?, updated_at = ?, data = ?, version = version + 1 WHERE uuid = ? AND version = ?`),
		jsonTableCase(s, "volume_targets", targetTable,
			`INSERT INTO volume_targets (uuid, version, node_uuid, volume_type, volume_id,
			boot_index, created_at, updated_at, data) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			`UPDATE volume_targets SET node_uuid = ?, volume_type = ?, volume_id = ?,
			boot_index = ?, created_at = ?, updated_at = ?, data = ?, version = version + 1
			WHERE uuid = ? AND version = ?`),
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.insert != c.wantInsert {
				t.Errorf("insert:\n got %s\nwant %s", c.insert, c.wantInsert)
			}
			if c.update != c.wantUpdate {
				t.Errorf("update:\n got %s\nwant %s", c.update, c.wantUpdate)
			}
			if want := "DELETE FROM " + c.name + " WHERE uuid = ?"; c.delete != want {
				t.Errorf("delete: got %s, want %s", c.delete, want)
			}
			// insert: uuid, then rowArgs; update: rowArgs, then uuid and version.
			if n := strings.Count(c.insert, "?"); n != 1+c.args {
				t.Errorf("insert has %d placeholders for %d values", n, 1+c.args)
			}
			if n := strings.Count(c.update, "?"); n != c.args+2 {
				t.Errorf("update has %d placeholders for %d values", n, c.args+2)
			}
		})
	}
}

// tableCase is a table's statements, the ones expected, and how many
// values rowArgs gives for a row.
type tableCase struct {
	name                   string
	insert, update, delete string
	wantInsert, wantUpdate string
	args                   int
}

func jsonTableCase[T any](s *Store, name string, tb *jsonTable[T], insert, update string) tableCase {
	v := new(T)
	*tb.head(v).created = time.Unix(0, 0)
	return tableCase{name: name, insert: tb.insertSQL, update: tb.updateSQL, delete: tb.deleteSQL,
		wantInsert: oneLine(insert), wantUpdate: oneLine(update), args: len(tb.rowArgs(s, v, nil))}
}

// oneLine turns every run of white space into one space.
func oneLine(q string) string { return strings.Join(strings.Fields(q), " ") }

// TestScopedTableStatements checks the statements of a table scoped to a
// column (the generic record table's kind): a create writes the scope, and
// every other statement, the marker's subquery included, stays in it.
func TestScopedTableStatements(t *testing.T) {
	s := &Store{d: Dialect{EncodeTime: EncodeTimeText, ZeroTime: "''"}}
	tb := kindTable("widget")
	for _, c := range []struct{ name, got, want string }{
		{"insert", tb.insertSQL, `INSERT INTO records (uuid, version, kind, name, owner, created_at, updated_at, data)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?) RETURNING id`},
		{"update", tb.updateSQL, `UPDATE records SET name = ?, owner = ?, created_at = ?, updated_at = ?, data = ?,
			version = version + 1 WHERE uuid = ? AND version = ? AND kind = ?`},
		{"delete", tb.deleteSQL, `DELETE FROM records WHERE uuid = ? AND kind = ?`},
		{"select", tb.selectSQL, `SELECT id, version, uuid, COALESCE(name, ''), owner, created_at, updated_at, data FROM records`},
	} {
		if c.got != oneLine(c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, oneLine(c.want))
		}
	}
	v := &recordRow{}
	// insert: uuid, the kind, then rowArgs; update: rowArgs, uuid, version, the kind.
	if n, args := strings.Count(tb.insertSQL, "?"), len(append(tb.within.args("uuid"), tb.rowArgs(s, v, nil)...)); n != args {
		t.Errorf("insert has %d placeholders for %d values", n, args)
	}
	if n, args := strings.Count(tb.updateSQL, "?"), len(tb.within.args(append(tb.rowArgs(s, v, nil), "uuid", 1)...)); n != args {
		t.Errorf("update has %d placeholders for %d values", n, args)
	}

	w := &where{}
	w.eq("owner", "p1")
	w.add(tb.within.col+" = ?", tb.within.val)
	tail, err := s.paginate(w, tb.sorts, page{tb.table, "name", "desc", "m-uuid", 2, tb.within})
	if err != nil {
		t.Fatal(err)
	}
	want := oneLine(`WHERE owner = ? AND kind = ? AND (COALESCE(name, ''), id) <
		(SELECT COALESCE(m.name, ''), m.id FROM records m WHERE m.uuid = ? AND m.kind = ?)
		ORDER BY COALESCE(name, '') DESC, id DESC LIMIT ?`)
	if got := strings.TrimSpace(w.String() + tail); got != want {
		t.Errorf("list:\n got %s\nwant %s", got, want)
	}
	wantArgs := []any{"p1", "widget", "m-uuid", "widget", 2}
	if fmt.Sprint(w.args) != fmt.Sprint(wantArgs) {
		t.Errorf("list args %v, want %v", w.args, wantArgs)
	}
}
