package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

// TestFilesOwnerOnly: after writes, the database and the -wal and -shm
// files SQLite made are 0600, even under a permissive umask.
func TestFilesOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "anvil.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := &model.Node{Name: "n", Driver: "ipmi", DriverInfo: map[string]any{"ipmi_password": "s3cret"}}
	if err := s.Nodes().CreateNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(name), m)
		}
	}
}

// TestNarrowsExisting: a database left 0644 by an older build is narrowed.
func TestNarrowsExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anvil.db")
	for _, name := range []string{path, path + "-wal"} {
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{path, path + "-wal"} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(name), m)
		}
	}
}

func TestRefusesWorldWritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), filepath.Join(dir, "anvil.db"))
	if err == nil || !strings.Contains(err.Error(), "writable by every user") {
		t.Fatalf("Open in a 0777 directory: %v, want refusal", err)
	}
	// Sticky (as /tmp) is fine: others cannot replace the owner's file.
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, "anvil.db"))
	if err != nil {
		t.Fatalf("Open in a sticky directory: %v", err)
	}
	s.Close()
}
