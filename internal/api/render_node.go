package api

import (
	"context"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// nodeFieldIndex finds a node field by name.
var nodeFieldIndex = nodeFields.index

// briefNodeFields are the keys of a node in a plain (non-detail) list.
var briefNodeFields = []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}

// nodePlan returns the fields to write for a node at the request's
// version: everything when fields is nil, else the requested fields
// (those the version hides are dropped) and the links, in Ironic's order.
func (rc *call) nodePlan(fields []string) []*nodeField {
	if fields == nil {
		return nodeFields.plans[rc.minor]
	}
	var plan []*nodeField
	add := func(f *nodeField) {
		if f != nil && f.minor <= rc.minor && !containsField(plan, f) {
			plan = append(plan, f)
		}
	}
	if containsStr(fields, "uuid") {
		add(nodeFieldIndex["uuid"])
	}
	for _, name := range fields {
		if f := nodeFieldIndex[name]; f != nil && f.place == placeAttr {
			add(f)
		}
	}
	add(nodeFieldIndex["links"])
	for _, name := range fields {
		if f := nodeFieldIndex[name]; f != nil && f.place == placeAPI {
			add(f)
		}
	}
	return plan
}

func containsField(plan []*nodeField, f *nodeField) bool {
	for _, p := range plan {
		if p == f {
			return true
		}
	}
	return false
}

// writeNode writes one node object following plan.
func (rc *call) writeNode(w *jw, n *model.Node, plan []*nodeField) {
	w.obj()
	for _, f := range plan {
		w.rawKey(f.key)
		if shown, hidden := rc.hidden(n, f.name); hidden {
			w.any(shown)
			continue
		}
		f.write(w, rc, n)
	}
	w.endObj()
}

// shownProvisionState hides states older clients do not know: available
// is null before 1.2, inspect wait reads inspecting before 1.39.
func shownProvisionState(s string, minor int) string {
	switch {
	case minor < 2 && s == fsm.Available:
		return ""
	case minor < 39 && s == fsm.InspectWait:
		return fsm.Inspecting
	}
	return s
}

// nodeConductor caches, for one request, the conductor shown on nodes.
type nodeConductor struct {
	host  string
	group string
	alive bool
	// owner, when the Conductor hands work to others (NodeOwners), is
	// the hash ring's owner of a node, read once per request.
	owner func(n *model.Node) string
}

// NodeOwners is an optional Conductor capability, of an API process
// that runs no nodes itself (anvil serve --role api, internal/handoff):
// the conductor owning each node on the hash ring of the live conductors
// ("" when none serves the node's group), from one read of the ring.
type NodeOwners interface {
	NodeOwners(ctx context.Context) (func(n *model.Node) string, error)
}

// conductorFor is the node's "conductor", as Ironic shows the conductor
// its hash ring maps the node to: the ring owner when this API hands work
// to the owning conductors (NodeOwners); otherwise this process's own
// conductor when its heartbeat is recent and it serves the node's
// conductor group; else null.
func (rc *call) conductorFor(n *model.Node) string {
	if n.Conductor != "" {
		return n.Conductor
	}
	if rc.ncond == nil {
		rc.ncond = &nodeConductor{}
		if no, ok := rc.s.cfg.Lifecycle.(NodeOwners); ok {
			owner, err := no.NodeOwners(rc.ctx)
			if err != nil {
				rc.s.log.Warn("reading the hash ring for nodes' conductor", "err", err)
				owner = func(*model.Node) string { return "" }
			}
			rc.ncond.owner = owner
		} else if c := rc.s.ownConductor(rc.ctx); c != nil {
			rc.ncond.host, rc.ncond.group = c.Hostname, c.ConductorGroup
			rc.ncond.alive = (recordAPI{rc.s}).alive(c)
		}
	}
	if rc.ncond.owner != nil {
		return rc.ncond.owner(n)
	}
	if !rc.ncond.alive || !strings.EqualFold(rc.ncond.group, n.ConductorGroup) {
		return ""
	}
	return rc.ncond.host
}

// withoutInventory hides the stored inspection inventory, which has its own
// endpoint (GET /v1/nodes/{id}/inventory) and would bloat every node.
func withoutInventory(m map[string]any) map[string]any {
	if _, ok := m[inventoryKey]; !ok {
		return m
	}
	out := make(map[string]any, len(m)-1)
	for k, v := range m {
		if k != inventoryKey {
			out[k] = v
		}
	}
	return out
}

// ownRow is this API's conductor row as read at a time (nil: none).
type ownRow struct {
	c  *model.Conductor
	at time.Time
}

// ownRowTTL: how long the conductor row read for a node's "conductor" is
// reused. Its heartbeat moves every few seconds and liveness allows a
// minute; reading it for every created or shown node cost a tenth of a
// create's time.
const ownRowTTL = time.Second

// ownConductor returns this API's conductor row, read at most once per
// ownRowTTL (liveness is judged by the caller against the current clock).
func (s *Server) ownConductor(ctx context.Context) *model.Conductor {
	if r := s.own.Load(); r != nil && time.Since(r.at) < ownRowTTL {
		return r.c
	}
	c, err := s.cfg.Catalog.Conductors().GetConductor(ctx, s.cfg.Lifecycle.Host())
	if err != nil {
		c = nil
	}
	s.own.Store(&ownRow{c: c, at: time.Now()})
	return c
}
