package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

// Migration 0014 copies each stored node's parent_node into its new column:
// on a database written before it (here: the column dropped after the
// fact), the migration's own SQL makes its child nodes list by parent.
func TestParentNodeBackfill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anvil.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	parent := &model.Node{Name: "parent", Driver: "fake-hardware"}
	if err := s.Nodes().CreateNode(t.Context(), parent); err != nil {
		t.Fatal(err)
	}
	kid := &model.Node{Name: "kid", Driver: "fake-hardware", ParentNode: parent.UUID}
	if err := s.Nodes().CreateNode(t.Context(), kid); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	up, err := os.ReadFile("migrations/0014_parent_node.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE nodes DROP COLUMN parent_node", string(up)} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	none := ""
	for _, c := range []struct {
		parent *string
		want   string
	}{{&parent.UUID, "kid"}, {&none, "parent"}} {
		got, err := s.Nodes().ListNodes(t.Context(), store.NodeQuery{ParentNode: c.parent})
		if err != nil || len(got) != 1 || got[0].Name != c.want {
			t.Errorf("ParentNode %q after the migration: %v, %v; want %s", *c.parent, got, err, c.want)
		}
	}
}
