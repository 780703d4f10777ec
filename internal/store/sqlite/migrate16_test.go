package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/anvil-metal/anvil/internal/store/storetest"
)

// TestMigration16 runs storetest.Migration16 on SQLite.
func TestMigration16(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	w, err := openPool(t.Context(), dsn(path, writerParams), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := openPool(t.Context(), dsn(path, readerParams), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	storetest.Migration16(t, Dialect(), w, r, `UPDATE runbooks SET data = json_remove(data, '$.traits', '$.description')`)
}
