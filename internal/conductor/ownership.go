package conductor

import (
	"context"
	"fmt"
	"slices"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/ring"
)

// liveRing is the hash ring of the conductors alive now (ring.Live: online,
// heartbeated within ConductorDeadAfter, running drivers), this conductor
// always included (it is running this code). Every conductor builds it from the same rows,
// so they agree on each node's owner up to one heartbeat of skew.
func (c *Conductor) liveRing(ctx context.Context) (*ring.Ring, error) {
	conds, err := c.store.Conductors().ListConductors(ctx)
	if err != nil {
		return nil, fmt.Errorf("conductors for the hash ring: %w", err)
	}
	members := ring.Live(conds, c.now(), c.cfg.ConductorDeadAfter)
	if !slices.ContainsFunc(members, func(m ring.Member) bool { return m.Host == c.cfg.Host }) {
		members = append(members, ring.Member{Host: c.cfg.Host, Group: c.cfg.Group})
	}
	return ring.New(members, c.cfg.HashPartitions, 1), nil
}

// owned keeps the nodes this conductor owns on r: only their owner runs
// their periodic work (power sync, timeouts, take-over).
func (c *Conductor) owned(r *ring.Ring, nodes []*model.Node) []*model.Node {
	out := nodes[:0]
	for _, n := range nodes {
		if r.Owns(c.cfg.Host, n.UUID, n.ConductorGroup) {
			out = append(out, n)
		}
	}
	return out
}

// NoConductor is Ironic's answer for a node no live conductor serves.
func NoConductor(driver, group string) error { return noDriver(driver, group) }
