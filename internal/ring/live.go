package ring

import (
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// Live returns the ring members among conds: conductors alive at now
// (model.Conductor.Alive with window) that run at least one driver. An API
// process registers without drivers (so that its locks are broken if it
// dies) and is never a member, as in Ironic, where the ring is built from
// the conductors that run a hardware type.
func Live(conds []*model.Conductor, now time.Time, window time.Duration) []Member {
	var out []Member
	for _, c := range conds {
		if len(c.Drivers) > 0 && c.Alive(now, window) {
			out = append(out, Member{Host: c.Hostname, Group: c.ConductorGroup})
		}
	}
	return out
}
