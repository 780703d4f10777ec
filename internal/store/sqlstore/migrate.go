package sqlstore

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// migration is one numbered schema step and its inverse.
type migration struct {
	version  int
	up, down string
}

// loadMigrations reads NNNN_name.up.sql / NNNN_name.down.sql pairs; versions
// must run 1, 2, 3, ... without gaps, one pair each.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*migration{}
	for _, e := range entries {
		v, up, ok := parseMigrationName(e.Name())
		if !ok {
			continue
		}
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		m := byVersion[v]
		if m == nil {
			m = &migration{version: v}
			byVersion[v] = m
		}
		dst := &m.down
		if up {
			dst = &m.up
		}
		if *dst != "" { // two branches numbered their migrations alike
			return nil, fmt.Errorf("migration %04d: two files for one version (%s)", v, e.Name())
		}
		*dst = string(body)
	}
	ms := make([]migration, 0, len(byVersion))
	for v := 1; v <= len(byVersion); v++ {
		m := byVersion[v]
		if m == nil || m.up == "" || m.down == "" {
			return nil, fmt.Errorf("migration %04d: missing, or lacks its up or down file", v)
		}
		ms = append(ms, *m)
	}
	return ms, nil
}

func parseMigrationName(name string) (version int, up, ok bool) {
	base, up := strings.CutSuffix(name, ".up.sql")
	if !up {
		if base, ok = strings.CutSuffix(name, ".down.sql"); !ok {
			return 0, false, false
		}
	}
	num, _, _ := strings.Cut(base, "_")
	v, err := strconv.Atoi(num)
	if err != nil || v <= 0 {
		return 0, false, false
	}
	return v, up, true
}

const createSchemaMigrationsSQL = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version BIGINT PRIMARY KEY)`

// schemaVersion locks the schema against other migrators (when the dialect
// can), creates schema_migrations if needed and returns the current version.
func (s *Store) schemaVersion(ctx context.Context, c conn) (int, error) {
	if s.d.MigrationLock != "" {
		if _, err := c.exec(ctx, s.d.MigrationLock); err != nil {
			return 0, fmt.Errorf("lock schema: %w", err)
		}
	}
	if _, err := c.exec(ctx, createSchemaMigrationsSQL); err != nil {
		return 0, err
	}
	var v int
	err := c.queryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v)
	return v, err
}

// MigrateUp applies every migration the database lacks, in one transaction.
// A database newer than this binary is an error.
func (s *Store) MigrateUp(ctx context.Context) error {
	ms, err := loadMigrations(s.d.Migrations)
	if err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	err = s.write(ctx, func(c conn) error {
		cur, err := s.schemaVersion(ctx, c)
		if err != nil {
			return err
		}
		if cur > len(ms) {
			return fmt.Errorf("database schema version %d is newer than this binary's %d", cur, len(ms))
		}
		for _, m := range ms[cur:] {
			if _, err := c.exec(ctx, m.up); err != nil {
				return fmt.Errorf("%04d up: %w", m.version, err)
			}
			if _, err := c.exec(ctx, "INSERT INTO schema_migrations (version) VALUES (?)", m.version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate up %s: %w", s.d.Name, err)
	}
	return nil
}

// MigrateDown reverts every applied migration, newest first, in one
// transaction: all data is dropped.
func (s *Store) MigrateDown(ctx context.Context) error {
	ms, err := loadMigrations(s.d.Migrations)
	if err != nil {
		return fmt.Errorf("migrate down: %w", err)
	}
	err = s.write(ctx, func(c conn) error {
		cur, err := s.schemaVersion(ctx, c)
		if err != nil {
			return err
		}
		if cur > len(ms) {
			return fmt.Errorf("database schema version %d is newer than this binary's %d", cur, len(ms))
		}
		for _, m := range slices.Backward(ms[:cur]) {
			if _, err := c.exec(ctx, m.down); err != nil {
				return fmt.Errorf("%04d down: %w", m.version, err)
			}
			if _, err := c.exec(ctx, "DELETE FROM schema_migrations WHERE version = ?", m.version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate down %s: %w", s.d.Name, err)
	}
	return nil
}

// SchemaVersion returns the number of the newest applied migration (0: none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.write(ctx, func(c conn) error {
		var err error
		v, err = s.schemaVersion(ctx, c)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}
