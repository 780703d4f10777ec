package api

import (
	"cmp"
	"errors"
	"slices"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// Versions of node history: /v1/nodes/{node}/history (1.78), its project
// (1.113, Ironic's MINOR_113_NODE_HISTORY_PROJECT), its state,
// target_provision_state and duration_seconds (1.115,
// MINOR_115_NODE_HISTORY_FIELDS).
const (
	minorHistory        = 78
	minorHistoryProject = 113
	minorHistoryState   = 115
)

// historySortKeys are the columns history can be sorted on.
var historySortKeys = map[string]func(a, b *model.HistoryEvent) int{
	"id":         func(a, b *model.HistoryEvent) int { return cmp.Compare(a.ID, b.ID) },
	"created_at": func(a, b *model.HistoryEvent) int { return a.CreatedAt.Compare(b.CreatedAt) },
	"uuid":       func(a, b *model.HistoryEvent) int { return cmp.Compare(a.UUID, b.UUID) },
	"severity":   func(a, b *model.HistoryEvent) int { return cmp.Compare(a.Severity, b.Severity) },
	"event_type": func(a, b *model.HistoryEvent) int { return cmp.Compare(a.EventType, b.EventType) },
	"event":      func(a, b *model.HistoryEvent) int { return cmp.Compare(a.Event, b.Event) },
	"conductor":  func(a, b *model.HistoryEvent) int { return cmp.Compare(a.Conductor, b.Conductor) },
	"user":       func(a, b *model.HistoryEvent) int { return cmp.Compare(a.User, b.User) },
	// node_history's newer columns (Ironic sorts on any column).
	"project":                func(a, b *model.HistoryEvent) int { return cmp.Compare(a.Project, b.Project) },
	"state":                  func(a, b *model.HistoryEvent) int { return cmp.Compare(a.State, b.State) },
	"target_provision_state": func(a, b *model.HistoryEvent) int { return cmp.Compare(a.TargetProvisionState, b.TargetProvisionState) },
	"duration_seconds": func(a, b *model.HistoryEvent) int {
		return cmp.Compare(durationKey(a.DurationSeconds), durationKey(b.DurationSeconds))
	},
}

// durationKey sorts a null duration first, as SQL's NULLs.
func durationKey(d *int64) int64 {
	if d == nil {
		return -1
	}
	return *d
}

func (hs nodeAPI) historyRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listHistory, nodeRule("baremetal:node:history:get")}}, "/v1/nodes/{ident}/history")
	s.handle(endpoint{"GET": {hs.getHistory, nodeRule("baremetal:node:history:get")}}, "/v1/nodes/{ident}/history/{event}")
}

// GET /v1/nodes/{ident}/history
func (hs nodeAPI) listHistory(rc *call) error {
	s := hs.s
	if rc.minor < minorHistory {
		return errNotFound()
	}
	if err := rc.checkQuery("detail", "marker", "limit", "sort_key", "sort_dir"); err != nil {
		return err
	}
	p, err := rc.pageParams("created_at")
	if err != nil {
		return err
	}
	if err := rc.markerParam(&p); err != nil {
		return err
	}
	n, raw, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	if err := p.check(rc); err != nil {
		return err
	}
	less, ok := historySortKeys[p.sortKey]
	if !ok {
		return badSortKey(p.sortKey, true)
	}
	events, err := s.cfg.Details.Nodes().ListHistory(rc.ctx, n.UUID)
	if err != nil {
		return err
	}
	events, err = historyPage(events, p, less)
	if err != nil {
		return err
	}
	detail := p.detail != nil && *p.detail
	w := &jw{}
	w.rootObj()
	w.key("history")
	w.arr()
	for _, e := range events {
		hs.writeHistory(rc, w, n.UUID, e, detail)
	}
	w.endArr()
	if len(events) > 0 && len(events) == p.limit {
		params := [][2]string{{"sort_key", p.sortKey}, {"sort_dir", p.sortDir}}
		if p.detail != nil {
			params = append(params, [2]string{"detail", pyrepr.Bool(*p.detail)})
		}
		w.key("next")
		w.str(rc.nextLink("nodes/"+pathEscape(raw)+"/history", params, p.limit, events[len(events)-1].UUID))
	}
	w.endObj()
	return rc.json(200, w)
}

// historyPage sorts events and cuts the page after the marker.
func historyPage(events []*model.HistoryEvent, p page, less func(a, b *model.HistoryEvent) int) ([]*model.HistoryEvent, error) {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b *model.HistoryEvent) int {
		c := cmp.Or(less(a, b), cmp.Compare(a.ID, b.ID))
		if p.sortDir == "desc" {
			return -c
		}
		return c
	})
	if p.marker != "" {
		i := slices.IndexFunc(events, func(e *model.HistoryEvent) bool { return e.UUID == p.marker })
		if i < 0 {
			return nil, fault.Missing("Node history record", p.marker)
		}
		events = events[i+1:]
	}
	if len(events) > p.limit {
		events = events[:p.limit]
	}
	return events, nil
}

// GET /v1/nodes/{ident}/history/{event}
func (hs nodeAPI) getHistory(rc *call) error {
	s := hs.s
	if rc.minor < minorHistory {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	event := rc.r.PathValue("event")
	if !isUUIDLike(event) && !isValidLogicalName(event) {
		return invalid("Expected UUID or name for event: %s", event)
	}
	if isUUIDLike(event) {
		event = canonicalUUID(event)
	}
	n, _, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	e, err := s.cfg.Details.Nodes().GetHistory(rc.ctx, n.UUID, event)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Node history record", event)
	} else if err != nil {
		return err
	}
	w := &jw{}
	hs.writeHistory(rc, w, n.UUID, e, true)
	return rc.json(200, w)
}

// writeHistory writes one history entry. The short form truncates the
// event text to 255 characters as Ironic does; the detailed form adds who
// and where: conductor and user, project from 1.113, the node's state,
// target_provision_state and duration_seconds when the event was
// recorded from 1.115 (Ironic's NodeHistoryController.detail_fields),
// then Anvil's record of a transition (from_state, to_state, trigger),
// null when the event is not one. Below 1.115 Anvil's duration_seconds is
// the time the transition's from_state lasted (null when not a
// transition), as before Ironic had the key.
func (hs nodeAPI) writeHistory(rc *call, w *jw, nodeUUID string, e *model.HistoryEvent, detail bool) {
	w.obj()
	w.key("uuid")
	w.str(e.UUID)
	w.key("created_at")
	w.timestamp(e.CreatedAt)
	w.key("severity")
	w.strOrNull(e.Severity)
	if detail {
		w.key("event_type")
		w.strOrNull(e.EventType)
	}
	w.key("event")
	w.str(historyText(e.Event, detail))
	if detail {
		fields := [][2]string{{"conductor", e.Conductor}, {"user", e.User}}
		if rc.minor >= minorHistoryProject {
			fields = append(fields, [2]string{"project", e.Project})
		}
		if rc.minor >= minorHistoryState {
			fields = append(fields, [2]string{"state", e.State}, [2]string{"target_provision_state", e.TargetProvisionState})
		}
		for _, kv := range fields {
			w.key(kv[0])
			w.strOrNull(kv[1])
		}
		anvil := [][2]string{{"from_state", e.FromState}, {"to_state", e.ToState}, {"trigger", e.Trigger}}
		if rc.minor >= minorHistoryState {
			w.key("duration_seconds")
			intPtr(w, e.DurationSeconds)
		}
		for _, kv := range anvil {
			w.key(kv[0])
			w.strOrNull(kv[1])
		}
		if rc.minor < minorHistoryState {
			w.key("duration_seconds")
			if e.FromState == "" && e.Duration == 0 {
				w.null()
			} else {
				w.integer(int64(e.Duration.Seconds()))
			}
		}
	}
	w.key("links")
	w.arr()
	w.obj()
	w.key("href")
	w.str(rc.link(false, "nodes", nodeUUID, "history", e.UUID))
	w.key("rel")
	w.str("self")
	w.endObj()
	w.endArr()
	w.endObj()
}

// historyText truncates long events in the short listing.
func historyText(s string, detail bool) string {
	if detail {
		return s
	}
	r := []rune(s)
	if len(r) > 255 {
		return string(r[:251]) + "..."
	}
	return s
}
