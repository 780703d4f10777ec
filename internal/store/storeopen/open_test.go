package storeopen_test

import (
	"path/filepath"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store/storeopen"
)

func TestIsPostgres(t *testing.T) {
	cases := []struct {
		database string
		want     bool
	}{
		{"postgres://anvil@db/anvil", true},
		{"postgresql://anvil@db/anvil?sslmode=disable", true},
		{"/var/lib/anvil/anvil.db", false},
		{"anvil.db", false},
		{"file:anvil.db", false},
	}
	for _, c := range cases {
		if got := storeopen.IsPostgres(c.database); got != c.want {
			t.Errorf("IsPostgres(%q) = %v, want %v", c.database, got, c.want)
		}
	}
}

func TestOpenSQLite(t *testing.T) {
	s, err := storeopen.Open(t.Context(), filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Nodes().CreateNode(t.Context(), &model.Node{Name: "n", Driver: "fake-hardware"}); err != nil {
		t.Fatal(err)
	}
}
