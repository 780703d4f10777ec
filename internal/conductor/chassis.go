package conductor

import (
	"context"
	"errors"
	"maps"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Chassis (Ironic's chassis) change without a node lock: a node names its
// chassis (checked when the node is written, by the API); a chassis that
// nodes name cannot be deleted.

// CreateChassis stores a chassis. Errors: fault Conflict (uuid taken).
func (c *Conductor) CreateChassis(ctx context.Context, ch *model.Chassis) error {
	if ch.CreatedAt.IsZero() {
		ch.CreatedAt = c.now().UTC()
	}
	err := c.store.CreateChassis(ctx, ch)
	if errors.Is(err, store.ErrDuplicate) {
		return fault.New(fault.Conflict, "A chassis with UUID %s already exists.", ch.UUID)
	}
	return err
}

// UpdateChassis applies apply to a copy of the chassis and saves it,
// retrying a lost race a few times. Errors: fault NotFound, apply's own.
func (c *Conductor) UpdateChassis(ctx context.Context, id string, apply func(ch *model.Chassis) error) (*model.Chassis, error) {
	for attempt := 1; ; attempt++ {
		ch, err := c.store.GetChassis(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.Missing("Chassis", id)
		} else if err != nil {
			return nil, err
		}
		cp := *ch
		cp.Extra = maps.Clone(ch.Extra)
		if err := apply(&cp); err != nil {
			return nil, err
		}
		err = c.store.UpdateChassis(ctx, &cp)
		switch {
		case err == nil:
			return &cp, nil
		case errors.Is(err, store.ErrNotFound):
			return nil, fault.Missing("Chassis", id)
		case !errors.Is(err, store.ErrStale):
			return nil, err
		case attempt == 5:
			return nil, fault.New(fault.Conflict, "Chassis %s was changed by another request; try again.", id)
		}
	}
}

// DeleteChassis removes a chassis no node names. Errors: fault NotFound,
// Invalid (Ironic's ChassisNotEmpty, 400).
func (c *Conductor) DeleteChassis(ctx context.Context, id string) error {
	err := c.store.DeleteChassis(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fault.Missing("Chassis", id)
	case errors.Is(err, store.ErrChassisNotEmpty):
		return fault.New(fault.Invalid, "Cannot complete the requested action because chassis %s contains nodes.", id)
	}
	return err
}
