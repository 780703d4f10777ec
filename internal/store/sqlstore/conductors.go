package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

const (
	registerConductorSQL = `INSERT INTO conductors
		(hostname, conductor_group, drivers, online, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (hostname) DO UPDATE SET conductor_group = excluded.conductor_group,
		drivers = excluded.drivers, online = excluded.online, updated_at = excluded.updated_at
		RETURNING created_at`
	selectConductorSQL = `SELECT hostname, conductor_group, drivers, online, created_at,
		updated_at FROM conductors`
)

// RegisterConductor implements store.ConductorStore: it upserts c as online with a
// heartbeat now, keeping created_at of an existing row, and sets c's Online,
// CreatedAt and UpdatedAt to what is stored.
func (rs conductorStore) RegisterConductor(ctx context.Context, c *model.Conductor) error {
	s := rs.s
	if c.Hostname == "" {
		return errors.New("register conductor: empty hostname")
	}
	drivers, err := json.Marshal(c.Drivers)
	if err != nil {
		return fmt.Errorf("register conductor %s: %w", c.Hostname, err)
	}
	now := s.clock()
	var created time.Time
	err = s.writer().queryRow(ctx, registerConductorSQL, c.Hostname, c.ConductorGroup,
		string(drivers), true, s.d.EncodeTime(now), s.d.EncodeTime(now)).Scan(timeDest{&created})
	if err != nil {
		return fmt.Errorf("register conductor %s: %w", c.Hostname, err)
	}
	c.Online, c.CreatedAt, c.UpdatedAt = true, created, now
	return nil
}

// HeartbeatConductor implements store.ConductorStore. Like Ironic's touch_conductor it
// also marks the conductor online.
func (rs conductorStore) HeartbeatConductor(ctx context.Context, hostname string, now time.Time) error {
	s := rs.s
	err := s.setConductor(ctx, hostname, "updated_at = ?, online = ?", s.d.EncodeTime(norm(now)), true)
	if err != nil {
		return fmt.Errorf("heartbeat conductor %s: %w", hostname, err)
	}
	return nil
}

// UnregisterConductor implements store.ConductorStore. Errors: ErrNotFound.
func (rs conductorStore) UnregisterConductor(ctx context.Context, hostname string) error {
	s := rs.s
	if err := s.setConductor(ctx, hostname, "online = ?", false); err != nil {
		return fmt.Errorf("unregister conductor %s: %w", hostname, err)
	}
	return nil
}

func (s *Store) setConductor(ctx context.Context, hostname, set string, args ...any) error {
	res, err := s.writer().exec(ctx, "UPDATE conductors SET "+set+" WHERE hostname = ?",
		append(args, hostname)...)
	if err != nil {
		return err
	}
	rows, err := res.RowsAffected()
	if err == nil && rows == 0 {
		return notFound("conductor", hostname)
	}
	return err
}

// GetConductor implements store.ConductorStore. Errors: ErrNotFound.
func (rs conductorStore) GetConductor(ctx context.Context, hostname string) (*model.Conductor, error) {
	s := rs.s
	c, err := scanConductor(s.reader().queryRow(ctx, selectConductorSQL+" WHERE hostname = ?", hostname))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("conductor", hostname)
	}
	if err != nil {
		return nil, fmt.Errorf("get conductor %s: %w", hostname, err)
	}
	return c, nil
}

// ListConductors implements store.ConductorStore, ordered by hostname.
func (rs conductorStore) ListConductors(ctx context.Context) ([]*model.Conductor, error) {
	s := rs.s
	rows, err := s.reader().query(ctx, selectConductorSQL+" ORDER BY hostname")
	if err != nil {
		return nil, fmt.Errorf("list conductors: %w", err)
	}
	defer rows.Close()
	var cs []*model.Conductor
	for rows.Next() {
		c, err := scanConductor(rows)
		if err != nil {
			return nil, fmt.Errorf("list conductors: %w", err)
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conductors: %w", err)
	}
	return cs, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanConductor(sc scanner) (*model.Conductor, error) {
	var (
		c       model.Conductor
		drivers []byte
	)
	err := sc.Scan(&c.Hostname, &c.ConductorGroup, &drivers, &c.Online,
		timeDest{&c.CreatedAt}, timeDest{&c.UpdatedAt})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(drivers, &c.Drivers); err != nil {
		return nil, fmt.Errorf("decode drivers of %s: %w", c.Hostname, err)
	}
	return &c, nil
}
