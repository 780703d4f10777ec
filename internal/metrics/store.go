package metrics

import (
	"context"
	"errors"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Store returns inner with every node lock attempt counted by result
// (anvil_node_lock_attempts_total): acquired, locked (held by another
// holder) or error. Everything else passes through.
func (m *Metrics) Store(inner store.Store) store.Store {
	return &lockCounter{Store: inner, m: m}
}

type lockCounter struct {
	store.Store
	m *Metrics
}

// ReserveNode implements store.Store.
func (s *lockCounter) ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error) {
	n, err := s.Store.ReserveNode(ctx, uuid, host)
	result := "acquired"
	switch {
	case errors.Is(err, store.ErrLocked):
		result = "locked"
	case err != nil:
		result = "error"
	}
	s.m.lockAttempts.WithLabelValues(result).Inc()
	return n, err
}
