package storetest

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

// migrationsUpTo is d's migrations numbered up to last ("0015") only.
func migrationsUpTo(t *testing.T, d sqlstore.Dialect, last string) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(d.Migrations, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || len(p) < 4 || p[:4] > last {
			return err
		}
		b, err := fs.ReadFile(d.Migrations, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Migration16 checks migration 0016 (API 1.112-1.115) on an empty
// database of the dialect d (w writes, r reads; r may be nil): a runbook
// stored before runbook traits gets its name as its trait, as Ironic's
// online migration migrate_runbook_names_to_traits; a history row written
// before gets a null duration and empty project and states; a runbook
// created afterwards has no traits; and the migration reverts. strip is
// the dialect's statement that removes the traits and description keys
// from every runbook's data, as the code before 1.112 stored it.
func Migration16(t *testing.T, d sqlstore.Dialect, w, r *sql.DB, strip string) {
	ctx := context.Background()
	old := d
	old.Migrations = migrationsUpTo(t, d, "0015")
	s := sqlstore.New(w, r, old)
	if err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SchemaVersion(ctx); v != 15 {
		t.Fatalf("schema %d, want 15", v)
	}
	rb := &model.Runbook{UUID: "6b8c2b4e-9a1d-4f7e-8f43-0d0c8b1f2a01", Name: "CUSTOM_OLD",
		Steps: []model.RunbookStep{{Interface: "deploy", Step: "erase_devices", Order: 1, Args: model.JSON{}}}}
	if err := s.Runbooks().CreateRunbook(ctx, rb); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, strip); err != nil {
		t.Fatal(err)
	}
	n := &model.Node{UUID: "6b8c2b4e-9a1d-4f7e-8f43-0d0c8b1f2a02", Driver: "fake-hardware", ProvisionState: "enroll"}
	if err := s.Nodes().CreateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `INSERT INTO node_history (uuid, node_uuid, created_at, event) VALUES
		('6b8c2b4e-9a1d-4f7e-8f43-0d0c8b1f2a03', '`+n.UUID+`', '2026-01-01T00:00:00.000000Z', 'old')`); err != nil {
		t.Fatal(err)
	}

	s = sqlstore.New(w, r, d)
	if err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Runbooks().GetRunbook(ctx, rb.UUID)
	if err != nil || !slices.Equal(got.Traits, []string{"CUSTOM_OLD"}) || got.Description != "" {
		t.Fatalf("after migration 16: %+v %v", got, err)
	}
	evs, err := s.Nodes().ListHistory(ctx, n.UUID)
	if err != nil || len(evs) != 1 || evs[0].DurationSeconds != nil || evs[0].State != "" || evs[0].Project != "" {
		t.Fatalf("history after migration 16: %+v %v", evs, err)
	}
	fresh := &model.Runbook{UUID: "6b8c2b4e-9a1d-4f7e-8f43-0d0c8b1f2a04", Name: "CUSTOM_NEW", Steps: rb.Steps}
	if err := s.Runbooks().CreateRunbook(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Runbooks().GetRunbook(ctx, fresh.UUID); err != nil || len(got.Traits) != 0 {
		t.Fatalf("new runbook: %+v %v", got, err)
	}
	if err := s.MigrateDown(ctx); err != nil {
		t.Fatalf("down: %v", err)
	}
}
