package api

import (
	"slices"
	"strconv"
	"time"

	"github.com/anvil-metal/anvil/internal/fleet"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// The fleet views (Anvil extensions, not part of Ironic's API) feed the
// dashboard (internal/dashboard) and any client that wants the fleet in one
// call. They read through the same Store, render nodes with the same field
// table and masking as GET /v1/nodes, and pass through the same handler
// chain, so whatever guards the API guards them.
//
//	GET /v1/fleet/nodes    a node list with the filters of GET /v1/nodes and
//	                       power_state and search, answering the number of
//	                       matching nodes (counted by the store: filters
//	                       applied while scanning, such as conductor,
//	                       project or the child-node rule, are not in it)
//	                       and the next page's marker
//	GET /v1/fleet/summary  counts per provision and power state, failed,
//	                       maintenance, power-error and stuck nodes (the
//	                       rules of internal/fleet, as `anvil fleet report`),
//	                       conductors with liveness and held locks; with
//	                       ?project=P, of P's nodes (owner or lessee) only,
//	                       and no conductors (a system resource)

// fleetNodeParams are GET /v1/fleet/nodes' parameters beyond the node list's.
var fleetNodeParams = []string{"fields", "power_state", "search"}

// summaryNodeFields are the fields of the nodes a summary lists.
var summaryNodeFields = []string{"uuid", "name", "provision_state", "target_provision_state",
	"provision_updated_at", "power_state", "maintenance", "maintenance_reason", "fault", "last_error"}

// Summary limits: the nodes listed per section by default and at most.
const (
	summaryListDefault = 50
	summaryListMax     = 1000
)

func (hs fleetAPI) fleetRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.fleetNodes, nodeList}}, "/v1/fleet/nodes")
	s.handle(endpoint{"GET": {hs.fleetSummary, nodeList}}, "/v1/fleet/summary")
}

// GET /v1/fleet/nodes
func (hs fleetAPI) fleetNodes(rc *call) error {
	s := hs.s
	p, sel, nodes, err := (nodeAPI{rc.s}).nodePage(rc, append(slices.Clone(nodeListParams), fleetNodeParams...), func(sel *nodeSelection) error { return hs.fleetFilters(rc, sel) }, nil)
	if err != nil {
		return err
	}
	matching, err := s.cfg.Nodes.Nodes().CountNodes(rc.ctx, sel.q)
	if err != nil {
		return err
	}
	fields := p.fields
	if fields == nil {
		fields = briefNodeFields
	}
	plan := rc.nodePlan(fields)
	w := s.listWriter(256 + len(nodes)*len(plan)*48)
	w.rootObj()
	w.key("nodes")
	w.arr()
	for _, n := range nodes {
		rc.writeNode(w, n, plan)
	}
	w.endArr()
	w.key("matching")
	w.integer(int64(matching))
	w.key("next_marker")
	if len(nodes) > 0 && len(nodes) == p.limit && !sel.noNext {
		w.str(nodes[len(nodes)-1].UUID)
	} else {
		w.null()
	}
	w.endObj()
	return rc.json(200, w)
}

// fleetFilters reads power_state (a power state, or None for unknown) and
// search (a UUID prefix, part of a name, or a port's MAC address).
func (hs fleetAPI) fleetFilters(rc *call, sel *nodeSelection) error {
	if v, ok := rc.param("power_state"); ok {
		if !slices.Contains([]string{fsm.PowerOn, fsm.PowerOff, fsm.PowerError, store.NoPowerState}, v) {
			return invalid("Invalid power_state %q: expected one of power on, power off, error, None", v)
		}
		sel.q.PowerState = v
	}
	if v, ok := rc.param("search"); ok {
		if len(v) > 255 {
			return invalid("search is longer than 255 characters")
		}
		sel.q.Search = v
	}
	return nil
}

// GET /v1/fleet/summary?stuck_after=<seconds>&limit=<nodes per section>&project=<project>
func (hs fleetAPI) fleetSummary(rc *call) error {
	s := hs.s
	if err := rc.checkQuery("stuck_after", "limit", "project"); err != nil {
		return err
	}
	project, _ := rc.param("project")
	stuckAfter, limit, err := hs.summaryParams(rc)
	if err != nil {
		return err
	}
	now := s.cfg.Now().UTC()
	groups, err := s.cfg.Nodes.Nodes().CountNodeGroups(rc.ctx, store.NodeQuery{Project: project})
	if err != nil {
		return err
	}
	var sections [3][]*model.Node
	for i, q := range []store.NodeQuery{
		{ProvisionStates: failureStates(), SortKey: "provision_updated_at", SortDir: "desc"},
		{Maintenance: ptrTo(true)},
		{PowerState: fsm.PowerError},
	} {
		q.Limit, q.Project = limit, project
		if sections[i], err = s.cfg.Nodes.Nodes().ListNodes(rc.ctx, q); err != nil {
			return err
		}
	}
	stuck, stuckCount, err := hs.stuckNodes(rc, now, stuckAfter, limit, project)
	if err != nil {
		return err
	}
	var conds []*model.Conductor
	if project == "" { // conductors are not a project's
		if conds, err = s.cfg.Catalog.Conductors().ListConductors(rc.ctx); err != nil {
			return err
		}
	}
	w := &jw{}
	w.rootObj()
	w.key("generated_at")
	w.timestamp(now)
	writeGroupCounts(w, groups)
	plan := rc.nodePlan(summaryNodeFields)
	for i, name := range []string{"failed_nodes", "maintenance_nodes", "power_error_nodes"} {
		hs.writeNodeArray(rc, w, name, sections[i], plan)
	}
	w.key("stuck_after_seconds")
	w.integer(int64(stuckAfter / time.Second))
	w.key("stuck")
	w.integer(int64(stuckCount))
	hs.writeNodeArray(rc, w, "stuck_nodes", stuck, plan)
	hs.writeConductorLoad(rc, w, conds, groups)
	w.endObj()
	return rc.json(200, w)
}

// summaryParams reads stuck_after (seconds, default 30 minutes) and limit.
func (hs fleetAPI) summaryParams(rc *call) (time.Duration, int, error) {
	stuckAfter, limit := fleet.DefaultStuckAfter, summaryListDefault
	if raw, ok := rc.param("stuck_after"); ok {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 || n > 1<<31 {
			return 0, 0, invalid("Invalid stuck_after %q: expected a number of seconds", raw)
		}
		stuckAfter = time.Duration(n) * time.Second
	}
	if raw, ok := rc.param("limit"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			return 0, 0, invalid("Limit must be positive")
		}
		limit = min(n, summaryListMax)
	}
	return stuckAfter, limit, nil
}

// stuckNodes returns the first limit stuck nodes, longest stuck first, and
// how many there are: nodes in a state that can stick (fleet.StuckStates)
// since before now - after; of project's nodes only when it is set.
func (hs fleetAPI) stuckNodes(rc *call, now time.Time, after time.Duration, limit int, project string) ([]*model.Node, int, error) {
	q := store.NodeQuery{ProvisionStates: fleet.StuckStates(), ProvisionUpdatedBefore: now.Add(-after),
		SortKey: "provision_updated_at", Limit: limit, Project: project}
	count, err := rc.s.cfg.Nodes.Nodes().CountNodes(rc.ctx, q)
	if err != nil {
		return nil, 0, err
	}
	nodes, err := rc.s.cfg.Nodes.Nodes().ListNodes(rc.ctx, q)
	if err != nil {
		return nil, 0, err
	}
	out := nodes[:0]
	for _, n := range nodes { // the store's rule and fleet.Stuck agree; keep the one rule
		if fleet.Stuck(n.ProvisionState, n.ProvisionUpdatedAt, now, after) {
			out = append(out, n)
		}
	}
	return out, count, nil
}

func failureStates() []string {
	var out []string
	for _, s := range fsm.States() {
		if fleet.Failed(s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// writeGroupCounts writes total, provision_states (every state of the
// machine, in its order, zero included), power_states, maintenance and
// failed.
func writeGroupCounts(w *jw, groups []store.NodeGroup) {
	prov, power := map[string]int{}, map[string]int{}
	total, maint, failed := 0, 0, 0
	for _, g := range groups {
		total += g.Count
		prov[g.ProvisionState] += g.Count
		ps := g.PowerState
		if ps == "" {
			ps = store.NoPowerState
		}
		power[ps] += g.Count
		if g.Maintenance {
			maint += g.Count
		}
		if fleet.Failed(g.ProvisionState) {
			failed += g.Count
		}
	}
	w.key("total")
	w.integer(int64(total))
	w.key("provision_states")
	w.obj()
	for _, s := range fsm.States() {
		w.key(s.Name)
		w.integer(int64(prov[s.Name]))
	}
	w.endObj()
	w.key("power_states")
	w.obj()
	for _, ps := range []string{fsm.PowerOn, fsm.PowerOff, fsm.PowerError, store.NoPowerState} {
		w.key(ps)
		w.integer(int64(power[ps]))
	}
	w.endObj()
	w.key("maintenance")
	w.integer(int64(maint))
	w.key("failed")
	w.integer(int64(failed))
}

func (hs fleetAPI) writeNodeArray(rc *call, w *jw, key string, nodes []*model.Node, plan []*nodeField) {
	w.key(key)
	w.arr()
	for _, n := range nodes {
		rc.writeNode(w, n, plan)
	}
	w.endArr()
}

// writeConductorLoad writes the conductors with their liveness (as GET
// /v1/conductors says it) and the node locks each holds.
func (hs fleetAPI) writeConductorLoad(rc *call, w *jw, conds []*model.Conductor, groups []store.NodeGroup) {
	locks := map[string]int{}
	for _, g := range groups {
		if g.Reservation != "" {
			locks[g.Reservation] += g.Count
		}
	}
	w.key("conductors")
	w.arr()
	for _, c := range conds {
		w.obj()
		w.key("hostname")
		w.str(c.Hostname)
		w.key("conductor_group")
		w.str(c.ConductorGroup)
		w.key("alive")
		w.boolean((recordAPI{rc.s}).alive(c))
		w.key("updated_at")
		w.timestamp(c.UpdatedAt)
		w.key("locked_nodes")
		w.integer(int64(locks[c.Hostname]))
		w.endObj()
	}
	w.endArr()
}
