package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fileMode is the mode of the database and of the -wal and -shm files
// SQLite creates beside it (SQLite gives them the database file's mode):
// they hold BMC passwords and agent keys, so only the owner reads them.
const fileMode = 0o600

// secure prepares the database file at dsnPath before SQLite opens it: the
// directory must not be writable by every user (unless sticky, as /tmp is),
// a missing file is created 0600, and an existing database, -wal or -shm
// file readable by others is narrowed to 0600. In-memory databases are left
// alone.
func secure(dsnPath string) error {
	p := filePath(dsnPath)
	if p == "" {
		return nil
	}
	dir := filepath.Dir(p)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("database directory: %w", err)
	}
	if st.Mode().Perm()&0o002 != 0 && st.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("database directory %s is writable by every user (mode %v): another user could replace the database", dir, st.Mode().Perm())
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	for _, name := range []string{p, p + "-wal", p + "-shm"} {
		st, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("database file: %w", err)
		}
		if st.Mode().Perm()&^fileMode != 0 {
			if err := os.Chmod(name, fileMode); err != nil {
				return fmt.Errorf("narrow %s to mode 0600: %w", name, err)
			}
		}
	}
	return nil
}

// filePath is the file a database string names: the path without a
// "file:" prefix and "?..." parameters; "" for an in-memory database.
func filePath(dsnPath string) string {
	p, params, _ := strings.Cut(dsnPath, "?")
	p = strings.TrimPrefix(p, "file:")
	if p == "" || p == ":memory:" || strings.Contains(params, "mode=memory") {
		return ""
	}
	return p
}
