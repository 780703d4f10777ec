package events

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Filter selects events. Zero values mean "everything" (for Types: node
// created, updated and deleted, without history).
type Filter struct {
	// Nodes are UUIDs or names; an event matches if its node's UUID or
	// name is one of them.
	Nodes []string
	// Fields are watched field names: an update matches only if it changed
	// one of them. Created and deleted events always match.
	Fields []string
	// Types are event types (node.created, node.updated, node.deleted,
	// node.history).
	Types []string
	// Snapshot asks a stream to start with a node.snapshot event per
	// matching node when it does not resume (or cannot: after a reset).
	// The broker ignores it.
	Snapshot bool
	// Project, when set, selects the events of nodes whose owner or lessee
	// it is (before or after an update), and the history of nodes it owns.
	Project string
}

// Query parameters of GET /v1/events/stream.
const (
	ParamNode     = "node"
	ParamFields   = "fields"
	ParamTypes    = "types"
	ParamSnapshot = "snapshot"
	ParamProject  = "project"
	// ParamLastEventID is the query form of the Last-Event-ID header, for
	// clients that cannot set headers on their first request.
	ParamLastEventID = "last_event_id"
)

// Values encodes f as the stream's query parameters.
func (f Filter) Values() url.Values {
	v := url.Values{}
	if len(f.Nodes) > 0 {
		v.Set(ParamNode, strings.Join(f.Nodes, ","))
	}
	if len(f.Fields) > 0 {
		v.Set(ParamFields, strings.Join(f.Fields, ","))
	}
	if len(f.Types) > 0 {
		v.Set(ParamTypes, strings.Join(f.Types, ","))
	}
	if f.Snapshot {
		v.Set(ParamSnapshot, "true")
	}
	if f.Project != "" {
		v.Set(ParamProject, f.Project)
	}
	return v
}

// ParseFilter reads a filter from the stream's query parameters; each may be
// repeated or comma-separated. Unknown fields and types are errors.
func ParseFilter(q url.Values) (Filter, error) {
	f := Filter{Nodes: list(q[ParamNode]), Fields: list(q[ParamFields]), Types: list(q[ParamTypes]),
		Project: q.Get(ParamProject)}
	for _, fl := range f.Fields {
		if !slices.Contains(Fields(), fl) {
			return Filter{}, fmt.Errorf("unknown field %q in %s; watched fields are %s", fl, ParamFields, strings.Join(Fields(), ", "))
		}
	}
	for _, t := range f.Types {
		if !slices.Contains(eventTypes, t) {
			return Filter{}, fmt.Errorf("unknown event type %q in %s; types are %s", t, ParamTypes, strings.Join(eventTypes, ", "))
		}
	}
	if raw := q.Get(ParamSnapshot); raw != "" {
		switch strings.ToLower(raw) {
		case "1", "true", "yes", "on":
			f.Snapshot = true
		case "0", "false", "no", "off":
		default:
			return Filter{}, fmt.Errorf("%s must be a boolean, not %q", ParamSnapshot, raw)
		}
	}
	return f, nil
}

func list(raw []string) []string {
	var out []string
	for _, r := range raw {
		for _, s := range strings.Split(r, ",") {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// Matcher is a compiled Filter, for matching many events.
type Matcher struct {
	project string
	nodes   map[string]bool // nil: any node
	fields  map[string]bool // nil: any field
	types   map[string]bool
}

// Compile returns f ready to match events.
func (f Filter) Compile() *Matcher {
	set := func(items []string) map[string]bool {
		if len(items) == 0 {
			return nil
		}
		m := make(map[string]bool, len(items))
		for _, s := range items {
			m[s] = true
		}
		return m
	}
	m := &Matcher{project: f.Project, nodes: set(f.Nodes), fields: set(f.Fields), types: set(f.Types)}
	if m.types == nil {
		m.types = set(defaultTypes)
	}
	return m
}

// Match reports whether e passes f.
func (f Filter) Match(e *Event) bool { return f.Compile().Match(e) }

// Match reports whether e passes the filter.
func (m *Matcher) Match(e *Event) bool {
	if !m.types[e.Type] {
		return false
	}
	if m.nodes != nil && !m.nodes[e.Node] && (e.Name == "" || !m.nodes[e.Name]) {
		return false
	}
	if m.project != "" && !m.projects(e) {
		return false
	}
	if m.fields == nil || e.Type != TypeUpdated {
		return true
	}
	for _, c := range e.Changed {
		if m.fields[c] {
			return true
		}
	}
	return false
}

// projects reports whether e is of a node of the matcher's project.
func (m *Matcher) projects(e *Event) bool {
	if e.Type == TypeHistory {
		return e.History != nil && e.History.Owner == m.project
	}
	of := func(s *NodeState) bool { return s != nil && (s.Owner == m.project || s.Lessee == m.project) }
	return of(e.State) || of(e.Previous)
}
