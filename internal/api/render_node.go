package api

import (
	"context"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
)

// Node field placement: plain attributes come first, then the links, then
// the attributes Ironic's API fills itself, then the sub-resource links.
const (
	placeAttr = iota
	placeLinks
	placeAPI
	placeSubLinks
)

// nodeField is one key of the node document: the version that introduced
// it (Ironic's VERSIONED_FIELDS) and how to write its value.
type nodeField struct {
	name  string
	minor int
	place int
	write func(w *jw, rc *call, n *model.Node)
	key   []byte // `"name": `, filled once
}

func fld(name string, minor, place int, write func(w *jw, rc *call, n *model.Node)) nodeField {
	return nodeField{name: name, minor: minor, place: place, write: write}
}

func strField(name string, minor int, get func(n *model.Node) string) nodeField {
	return fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.strOrNull(get(n)) })
}

func mapField(name string, minor int, get func(n *model.Node) map[string]any) nodeField {
	return fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.object(get(n)) })
}

func boolField(name string, minor int, get func(n *model.Node) bool) nodeField {
	return fld(name, minor, placeAttr, func(w *jw, _ *call, n *model.Node) { w.boolean(get(n)) })
}

func ifaceField(kind string, minor int) nodeField {
	return strField(kind+"_interface", minor, func(n *model.Node) string { return n.Interfaces.Get(kind) })
}

func subLinks(name string, minor int) nodeField {
	return fld(name, minor, placeSubLinks, func(w *jw, rc *call, n *model.Node) {
		rc.links(w, "nodes", n.UUID, name)
	})
}

// nodeFieldTable lists every node key in the order Ironic writes them
// (object_to_dict over _get_fields_for_node_query), with its minimum minor.
func nodeFieldTable() []nodeField {
	return []nodeField{
		strField("uuid", 1, func(n *model.Node) string { return n.UUID }),
		fld("created_at", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.CreatedAt) }),
		fld("updated_at", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.UpdatedAt) }),
		fld("automated_clean", 47, placeAttr, func(w *jw, _ *call, n *model.Node) { w.boolPtr(n.AutomatedClean) }),
		ifaceField("bios", 40),
		ifaceField("boot", 31),
		strField("boot_mode", 75, func(n *model.Node) string { return n.BootMode }),
		mapField("clean_step", 7, func(n *model.Node) map[string]any { return n.CleanStep }),
		fld("conductor_group", 46, placeAttr, func(w *jw, _ *call, n *model.Node) { w.str(n.ConductorGroup) }),
		boolField("console_enabled", 1, func(n *model.Node) bool { return n.ConsoleEnabled }),
		ifaceField("console", 31),
		boolField("disable_power_off", 95, func(n *model.Node) bool { return n.DisablePowerOff }),
		ifaceField("deploy", 31),
		mapField("deploy_step", 44, func(n *model.Node) map[string]any { return n.DeployStep }),
		strField("description", 51, func(n *model.Node) string { return n.Description }),
		strField("driver", 1, func(n *model.Node) string { return n.Driver }),
		fld("driver_info", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.masked(n.DriverInfo, driverInfoSecrets...) }),
		fld("driver_internal_info", 3, placeAttr, func(w *jw, _ *call, n *model.Node) { w.masked(withoutInventory(n.DriverInternalInfo)) }),
		mapField("extra", 1, func(n *model.Node) map[string]any { return n.Extra }),
		strField("fault", 42, func(n *model.Node) string { return n.Fault }),
		ifaceField("firmware", 86),
		strField("health", 109, func(n *model.Node) string { return n.Health }),
		fld("inspection_finished_at", 6, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.InspectionFinishedAt) }),
		fld("inspection_started_at", 6, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.InspectionStartedAt) }),
		ifaceField("inspect", 31),
		fld("instance_info", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.masked(n.InstanceInfo, instanceInfoSecrets...) }),
		strField("instance_name", 104, func(n *model.Node) string { return n.InstanceName }),
		strField("instance_uuid", 1, func(n *model.Node) string { return n.InstanceUUID }),
		strField("last_error", 1, func(n *model.Node) string { return secret.String(n.LastError) }),
		strField("lessee", 65, func(n *model.Node) string { return n.Lessee }),
		boolField("maintenance", 1, func(n *model.Node) bool { return n.Maintenance }),
		strField("maintenance_reason", 1, func(n *model.Node) string { return n.MaintenanceReason }),
		ifaceField("management", 31),
		strField("name", 5, func(n *model.Node) string { return n.Name }),
		mapField("network_data", 66, func(n *model.Node) map[string]any { return n.NetworkData }),
		ifaceField("network", 20),
		strField("owner", 50, func(n *model.Node) string { return n.Owner }),
		strField("parent_node", 83, func(n *model.Node) string { return n.ParentNode }),
		ifaceField("power", 31),
		strField("power_state", 1, func(n *model.Node) string { return n.PowerState }),
		fld("properties", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.masked(n.Properties) }),
		boolField("protected", 48, func(n *model.Node) bool { return n.Protected }),
		strField("protected_reason", 48, func(n *model.Node) string { return n.ProtectedReason }),
		fld("provision_state", 1, placeAttr, func(w *jw, rc *call, n *model.Node) {
			w.strOrNull(shownProvisionState(n.ProvisionState, rc.minor))
		}),
		fld("provision_updated_at", 1, placeAttr, func(w *jw, _ *call, n *model.Node) { w.timestamp(n.ProvisionUpdatedAt) }),
		mapField("raid_config", 12, func(n *model.Node) map[string]any { return n.RaidConfig }),
		ifaceField("raid", 31),
		ifaceField("rescue", 38),
		strField("reservation", 1, func(n *model.Node) string { return n.Reservation }),
		strField("resource_class", 21, func(n *model.Node) string { return n.ResourceClass }),
		boolField("retired", 61, func(n *model.Node) bool { return n.Retired }),
		strField("retired_reason", 61, func(n *model.Node) string { return n.RetiredReason }),
		fld("secure_boot", 75, placeAttr, func(w *jw, _ *call, n *model.Node) { w.boolPtr(n.SecureBoot) }),
		mapField("service_step", 87, func(n *model.Node) map[string]any { return n.ServiceStep }),
		strField("shard", 82, func(n *model.Node) string { return n.Shard }),
		ifaceField("storage", 33),
		strField("target_power_state", 1, func(n *model.Node) string { return n.TargetPowerState }),
		strField("target_provision_state", 1, func(n *model.Node) string { return n.TargetProvisionState }),
		mapField("target_raid_config", 12, func(n *model.Node) map[string]any { return n.TargetRaidConfig }),
		fld("traits", 37, placeAttr, func(w *jw, _ *call, n *model.Node) { w.strings(n.Traits) }),
		ifaceField("vendor", 31),
		fld("links", 1, placeLinks, func(w *jw, rc *call, n *model.Node) { rc.links(w, "nodes", n.UUID) }),
		fld("conductor", 49, placeAPI, func(w *jw, rc *call, n *model.Node) { w.strOrNull(rc.conductorFor(n)) }),
		fld("allocation_uuid", 52, placeAPI, func(w *jw, _ *call, n *model.Node) { w.strOrNull(n.AllocationUUID) }),
		fld("chassis_uuid", 1, placeAPI, func(w *jw, _ *call, n *model.Node) { w.strOrNull(n.ChassisUUID) }),
		subLinks("ports", 1),
		subLinks("states", 14),
		subLinks("portgroups", 24),
		subLinks("volume", 32),
	}
}

// nodeFields is the table with its encoded keys, built once and
// read-only afterwards.
var nodeFields = func() []nodeField {
	t := nodeFieldTable()
	for i := range t {
		t[i].key = append(pyrepr.AppendJSONString(nil, t[i].name), ':', ' ')
	}
	return t
}()

// nodeFieldIndex finds a field by name.
var nodeFieldIndex = func() map[string]*nodeField {
	m := make(map[string]*nodeField, len(nodeFields))
	for i := range nodeFields {
		m[nodeFields[i].name] = &nodeFields[i]
	}
	return m
}()

// fullNodePlans holds, per minor version, the fields of a full node; built
// once, read-only afterwards.
var fullNodePlans = func() [][]*nodeField {
	plans := make([][]*nodeField, MaxMinor+1)
	for minor := MinMinor; minor <= MaxMinor; minor++ {
		for i := range nodeFields {
			if nodeFields[i].minor <= minor {
				plans[minor] = append(plans[minor], &nodeFields[i])
			}
		}
	}
	return plans
}()

// briefNodeFields are the keys of a node in a plain (non-detail) list.
var briefNodeFields = []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}

// nodePlan returns the fields to write for a node at the request's
// version: everything when fields is nil, else the requested fields
// (those the version hides are dropped) and the links, in Ironic's order.
func (rc *call) nodePlan(fields []string) []*nodeField {
	if fields == nil {
		return fullNodePlans[rc.minor]
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
	c, err := s.cfg.Catalog.GetConductor(ctx, s.cfg.Lifecycle.Host())
	if err != nil {
		c = nil
	}
	s.own.Store(&ownRow{c: c, at: time.Now()})
	return c
}
