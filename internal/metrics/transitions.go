package metrics

import (
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/pkg/events"
)

// Observe feeds the transition metrics from a published event: a node
// history entry with a from and a to state is one transition. It is quick
// and never blocks (a broker observer).
func (m *Metrics) Observe(e events.Event) {
	h := e.History
	if e.Type != events.TypeHistory || h == nil {
		return
	}
	if h.Severity == model.SeverityError {
		m.errors.WithLabelValues(h.EventType).Inc()
	}
	if h.FromState == "" || h.ToState == "" {
		return // not a transition (or a node's creation)
	}
	m.transitions.WithLabelValues(h.FromState, h.ToState).Inc()
	m.inState.WithLabelValues(h.FromState).Observe(max(h.Duration, 0))
	if fsm.IsFailure(h.ToState) {
		m.failures.WithLabelValues(h.FromState, h.ToState).Inc()
	}
}
