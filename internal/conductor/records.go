package conductor

import (
	"errors"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/store"
)

// Records not tied to a node (deploy templates, runbooks) change without a
// node lock: a write is version-checked by the store and retried here.

// duplicateFault is Ironic's <Kind>DuplicateName / <Kind>AlreadyExists
// (409) for a *store.DuplicateError on a record of kind ("deploy
// template", "runbook"); any other error is returned as is.
func duplicateFault(err error, kind string) error {
	var d *store.DuplicateError
	if !errors.As(err, &d) {
		return err
	}
	if d.Field == "name" {
		return fault.New(fault.Conflict, "A %s with name %s already exists.", kind, d.Value)
	}
	return fault.New(fault.Conflict, "A %s with UUID %s already exists.", kind, d.Value)
}

// updateRecord loads a copy of a record, applies apply to it and saves it,
// retrying a lost race (store.ErrStale) a few times before answering 409
// with what(record) "was changed by another request". Errors: load's,
// apply's and save's own.
func updateRecord[T any](load func() (*T, error), apply func(*T) error, save func(*T) error, what func(*T) string) (*T, error) {
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
