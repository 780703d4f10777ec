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
	return &countingStore{Store: inner, nodes: &lockCounter{NodeStore: inner.Nodes(), m: m}}
}

// countingStore is inner with its node store counting lock attempts.
type countingStore struct {
	store.Store
	nodes *lockCounter
}

// Nodes implements store.Store.
func (s *countingStore) Nodes() store.NodeStore { return s.nodes }

type lockCounter struct {
	store.NodeStore
	m *Metrics
}

// ReserveNode implements store.NodeStore.
func (s *lockCounter) ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error) {
	n, err := s.NodeStore.ReserveNode(ctx, uuid, host)
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
