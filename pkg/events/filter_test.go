package events

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestFilterMatch(t *testing.T) {
	upd := func(node, name string, changed ...string) *Event {
		return &Event{Type: TypeUpdated, Node: node, Name: name, Changed: changed}
	}
	tests := []struct {
		name   string
		filter Filter
		event  *Event
		want   bool
	}{
		{"empty filter takes updates", Filter{}, upd("u1", "", FieldPowerState), true},
		{"empty filter takes creations", Filter{}, &Event{Type: TypeCreated, Node: "u1"}, true},
		{"empty filter skips history", Filter{}, &Event{Type: TypeHistory, Node: "u1"}, false},
		{"history on request", Filter{Types: []string{TypeHistory}}, &Event{Type: TypeHistory, Node: "u1"}, true},
		{"types exclude the others", Filter{Types: []string{TypeHistory}}, upd("u1", ""), false},
		{"node by UUID", Filter{Nodes: []string{"u1"}}, upd("u1", "web1", FieldFault), true},
		{"node by name", Filter{Nodes: []string{"web1"}}, upd("u1", "web1", FieldFault), true},
		{"other node", Filter{Nodes: []string{"u2", "web2"}}, upd("u1", "web1", FieldFault), false},
		{"field changed", Filter{Fields: []string{FieldProvisionState}}, upd("u1", "", FieldTargetProvisionState, FieldProvisionState), true},
		{"field not changed", Filter{Fields: []string{FieldProvisionState}}, upd("u1", "", FieldReservation), false},
		{"fields do not filter deletions", Filter{Fields: []string{FieldProvisionState}}, &Event{Type: TypeDeleted, Node: "u1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filter.Match(tt.event); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseFilter(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		want    Filter
		wantErr string
	}{
		{name: "nothing", query: "", want: Filter{}},
		{name: "lists and repeats", query: "node=a,b&node=c&fields=provision_state,%20power_state&types=node.history",
			want: Filter{Nodes: []string{"a", "b", "c"}, Fields: []string{FieldProvisionState, FieldPowerState}, Types: []string{TypeHistory}}},
		{name: "duplicates dropped", query: "node=a,a", want: Filter{Nodes: []string{"a"}}},
		{name: "snapshot", query: "snapshot=true", want: Filter{Snapshot: true}},
		{name: "unknown field", query: "fields=driver_info", wantErr: `unknown field "driver_info"`},
		{name: "unknown type", query: "types=node.exploded", wantErr: `unknown event type "node.exploded"`},
		{name: "bad snapshot", query: "snapshot=maybe", wantErr: "snapshot must be a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			got, err := ParseFilter(q)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Nodes, tt.want.Nodes) || !slices.Equal(got.Fields, tt.want.Fields) ||
				!slices.Equal(got.Types, tt.want.Types) || got.Snapshot != tt.want.Snapshot {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			// Values round-trips.
			back, err := ParseFilter(got.Values())
			if err != nil || !slices.Equal(back.Nodes, got.Nodes) || !slices.Equal(back.Fields, got.Fields) ||
				!slices.Equal(back.Types, got.Types) || back.Snapshot != got.Snapshot {
				t.Fatalf("round trip: %+v %v", back, err)
			}
		})
	}
}

func TestResting(t *testing.T) {
	tests := []struct {
		name  string
		state NodeState
		want  bool
	}{
		{"stable", NodeState{ProvisionState: "active"}, true},
		{"stable but locked", NodeState{ProvisionState: "active", Reservation: "c1"}, false},
		{"moving", NodeState{ProvisionState: "deploying", TargetProvisionState: "active"}, false},
		{"waiting for a call-back", NodeState{ProvisionState: "wait call-back", TargetProvisionState: "active"}, false},
		{"failed keeps its target", NodeState{ProvisionState: "deploy failed", TargetProvisionState: "active"}, true},
		{"held for an operator", NodeState{ProvisionState: "clean hold", TargetProvisionState: "available"}, true},
		{"back in enroll after a failed manage", NodeState{ProvisionState: "enroll", LastError: "no BMC"}, true},
	}
	for _, tt := range tests {
		if got := Resting(tt.state); got != tt.want {
			t.Errorf("%s: Resting = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestMatchProject: a project's filter passes the events of nodes it owns
// or leases (before or after the change) and the history of nodes it owns.
func TestMatchProject(t *testing.T) {
	m := Filter{Project: "p1", Types: []string{TypeUpdated, TypeHistory}}.Compile()
	for _, c := range []struct {
		name string
		e    Event
		want bool
	}{
		{"owned", Event{Type: TypeUpdated, State: &NodeState{Owner: "p1"}}, true},
		{"leased", Event{Type: TypeUpdated, State: &NodeState{Owner: "p2", Lessee: "p1"}}, true},
		{"another's", Event{Type: TypeUpdated, State: &NodeState{Owner: "p2"}}, false},
		{"moved away", Event{Type: TypeUpdated, State: &NodeState{Owner: "p2"}, Previous: &NodeState{Owner: "p1"}}, true},
		{"no state", Event{Type: TypeUpdated}, false},
		{"owned history", Event{Type: TypeHistory, History: &History{Owner: "p1"}}, true},
		{"leased history", Event{Type: TypeHistory, History: &History{Owner: "p2"}}, false},
	} {
		if got := m.Match(&c.e); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	c := Event{Type: TypeUpdated, State: &NodeState{Owner: "p1", Lessee: "p1"}}
	c.Encode()
	if strings.Contains(string(c.data), "p1") {
		t.Errorf("owner and lessee are sent: %s", c.data)
	}
}
