package records

import (
	"context"
	"errors"
	"time"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/store"
)

// Kind is one record type on the generic helper: its names in Ironic's
// texts, its store calls and how to stamp and copy one.
type Kind[T any] struct {
	// Name starts Ironic's texts ("Deploy template %s could not be
	// found."); Noun is the lower-case form of its duplicate texts ("A
	// deploy template with name %s already exists.").
	Name, Noun string
	Now        func() time.Time

	Get    func(ctx context.Context, ident string) (*T, error)
	Insert func(ctx context.Context, r *T) error
	Save   func(ctx context.Context, r *T) error
	Remove func(ctx context.Context, uuid string) error

	UUID  func(*T) string
	Stamp func(r *T, now time.Time) // sets created_at when it is zero
	Copy  func(*T) *T               // a copy apply may change freely
	// RemoveError, when set, maps the store's other errors of Remove
	// (a chassis nodes still name).
	RemoveError func(err error, ident string) error
}

// Create stamps and stores r. Errors: fault Conflict (uuid or name taken).
func (k Kind[T]) Create(ctx context.Context, r *T) error {
	k.Stamp(r, k.Now().UTC())
	return k.duplicate(k.Insert(ctx, r), k.UUID(r))
}

// Update applies apply to a copy of the record ident names and saves it,
// retrying a lost race. Errors: fault NotFound, Conflict (name taken, or
// still racing after retries), and apply's own.
func (k Kind[T]) Update(ctx context.Context, ident string, apply func(*T) error) (*T, error) {
	load := func() (*T, error) {
		r, err := k.get(ctx, ident)
		if err != nil {
			return nil, err
		}
		return k.Copy(r), nil
	}
	save := func(r *T) error {
		err := k.Save(ctx, r)
		if errors.Is(err, store.ErrNotFound) {
			return fault.Missing(k.Name, ident)
		}
		return k.duplicate(err, k.UUID(r))
	}
	return UpdateWithRetry(load, apply, save, func(r *T) string { return k.Name + " " + k.UUID(r) })
}

// Delete removes the record ident names. Errors: fault NotFound, and
// RemoveError's.
func (k Kind[T]) Delete(ctx context.Context, ident string) error {
	r, err := k.get(ctx, ident)
	if err != nil {
		return err
	}
	err = k.Remove(ctx, k.UUID(r))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fault.Missing(k.Name, ident)
	case err != nil && k.RemoveError != nil:
		return k.RemoveError(err, ident)
	}
	return err
}

func (k Kind[T]) get(ctx context.Context, ident string) (*T, error) {
	r, err := k.Get(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Missing(k.Name, ident)
	}
	return r, err
}

// duplicate is Ironic's <Kind>DuplicateName / <Kind>AlreadyExists (409)
// for a duplicate the store refused; any other error is returned as is.
func (k Kind[T]) duplicate(err error, uuid string) error {
	var d *store.DuplicateError
	switch {
	case errors.As(err, &d) && d.Field == "name":
		return fault.New(fault.Conflict, "A %s with name %s already exists.", k.Noun, d.Value)
	case errors.As(err, &d):
		return fault.New(fault.Conflict, "A %s with UUID %s already exists.", k.Noun, d.Value)
	case errors.Is(err, store.ErrDuplicate):
		return fault.New(fault.Conflict, "A %s with UUID %s already exists.", k.Noun, uuid)
	}
	return err
}

// UpdateWithRetry loads a copy of a record, applies apply to it and saves
// it, retrying a lost race (store.ErrStale) a few times before answering
// 409 with what(record) "was changed by another request". Errors: load's,
// apply's and save's own. Records under a node's lock use it too.
func UpdateWithRetry[T any](load func() (*T, error), apply func(*T) error, save func(*T) error, what func(*T) string) (*T, error) {
	for attempt := 1; ; attempt++ {
		cp, err := load()
		if err != nil {
			return nil, err
		}
		if err := apply(cp); err != nil {
			return nil, err
		}
		err = save(cp)
		switch {
		case err == nil:
			return cp, nil
		case !errors.Is(err, store.ErrStale):
			return nil, err
		case attempt == 5:
			return nil, fault.New(fault.Conflict, "%s was changed by another request; try again.", what(cp))
		}
	}
}
