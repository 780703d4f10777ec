package events

import (
	"encoding/json"
	"time"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// Event types. The node types are published by the store decorator; reset,
// overflow and snapshot are sent to one reader by the stream itself.
const (
	TypeCreated = "node.created"
	TypeUpdated = "node.updated" // a watched field changed (see Fields)
	TypeDeleted = "node.deleted"
	TypeHistory = "node.history" // a node history entry (opt-in: types=node.history)

	// TypeSnapshot is a node's current state, sent when a stream starts with
	// snapshot=true and no valid resume point (its ID is the stream's start).
	TypeSnapshot = "node.snapshot"
	// TypeReset says the events after the reader's Last-Event-ID are no
	// longer kept (or the ID is from another run): re-read the nodes.
	TypeReset = "reset"
	// TypeOverflow is the last event of a reader that fell too far behind;
	// reconnecting with its ID resumes without loss while the ring holds it.
	TypeOverflow = "overflow"
	// TypeError is delivered by the client only: the stream ended for good
	// (the server refused to resume it); Error says why.
	TypeError = "error"
)

// defaultTypes are the event types a filter without types receives.
var defaultTypes = []string{TypeCreated, TypeUpdated, TypeDeleted}

// eventTypes are the types a filter may name.
var eventTypes = []string{TypeCreated, TypeUpdated, TypeDeleted, TypeHistory}

// Watched node fields: a change to any of them publishes node.updated with
// the field named in Changed.
const (
	FieldName                 = "name"
	FieldProvisionState       = "provision_state"
	FieldTargetProvisionState = "target_provision_state"
	FieldPowerState           = "power_state"
	FieldTargetPowerState     = "target_power_state"
	FieldMaintenance          = "maintenance"
	FieldMaintenanceReason    = "maintenance_reason"
	FieldFault                = "fault"
	FieldLastError            = "last_error"
	FieldReservation          = "reservation"
)

// Fields lists the watched fields in the order Changed names them.
func Fields() []string {
	return []string{FieldName, FieldProvisionState, FieldTargetProvisionState, FieldPowerState,
		FieldTargetPowerState, FieldMaintenance, FieldMaintenanceReason, FieldFault,
		FieldLastError, FieldReservation}
}

// Event is one entry of the stream. Node events carry the node's new values
// in State; updates also carry the values before the change in Previous.
type Event struct {
	ID   uint64    `json:"id"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Node string    `json:"node,omitempty"` // UUID
	Name string    `json:"name,omitempty"`
	// Changed names the watched fields an update changed (node.updated only).
	Changed  []string   `json:"changed,omitempty"`
	State    *NodeState `json:"node_state,omitempty"`
	Previous *NodeState `json:"previous,omitempty"`
	History  *History   `json:"history,omitempty"`
	Error    string     `json:"error,omitempty"` // TypeError only

	data []byte // JSON encoding, filled by Encode
}

// Encode stores e's JSON encoding in e, so that AppendSSE writes it without
// encoding again: a broker encodes an event once for all its readers. Call
// it after the last change to e.
func (e *Event) Encode() {
	e.data = nil
	e.data, _ = json.Marshal(e) // an Event always encodes
}

// NodeState is the part of a node the stream carries. Empty strings and zero
// times are rendered as null, as Ironic renders a node.
type NodeState struct {
	ProvisionState       string
	TargetProvisionState string
	ProvisionUpdatedAt   time.Time
	PowerState           string
	TargetPowerState     string
	Maintenance          bool
	MaintenanceReason    string
	Fault                string
	LastError            string
	Reservation          string
	UpdatedAt            time.Time
	// Owner and Lessee are the node's projects, for a server to give a
	// project-scoped reader only its nodes' events. They are not sent.
	Owner, Lessee string
}

type wireState struct {
	ProvisionState       *string    `json:"provision_state"`
	TargetProvisionState *string    `json:"target_provision_state"`
	ProvisionUpdatedAt   *time.Time `json:"provision_updated_at"`
	PowerState           *string    `json:"power_state"`
	TargetPowerState     *string    `json:"target_power_state"`
	Maintenance          bool       `json:"maintenance"`
	MaintenanceReason    *string    `json:"maintenance_reason"`
	Fault                *string    `json:"fault"`
	LastError            *string    `json:"last_error"`
	Reservation          *string    `json:"reservation"`
	UpdatedAt            *time.Time `json:"updated_at"`
}

// MarshalJSON renders empty values as null.
func (s NodeState) MarshalJSON() ([]byte, error) {
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	tm := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	return json.Marshal(wireState{
		ProvisionState: str(s.ProvisionState), TargetProvisionState: str(s.TargetProvisionState),
		ProvisionUpdatedAt: tm(s.ProvisionUpdatedAt), PowerState: str(s.PowerState),
		TargetPowerState: str(s.TargetPowerState), Maintenance: s.Maintenance,
		MaintenanceReason: str(s.MaintenanceReason), Fault: str(s.Fault), LastError: str(s.LastError),
		Reservation: str(s.Reservation), UpdatedAt: tm(s.UpdatedAt),
	})
}

// UnmarshalJSON reads what MarshalJSON writes (null as empty).
func (s *NodeState) UnmarshalJSON(b []byte) error {
	var w wireState
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	tm := func(p *time.Time) time.Time {
		if p == nil {
			return time.Time{}
		}
		return *p
	}
	*s = NodeState{
		ProvisionState: str(w.ProvisionState), TargetProvisionState: str(w.TargetProvisionState),
		ProvisionUpdatedAt: tm(w.ProvisionUpdatedAt), PowerState: str(w.PowerState),
		TargetPowerState: str(w.TargetPowerState), Maintenance: w.Maintenance,
		MaintenanceReason: str(w.MaintenanceReason), Fault: str(w.Fault), LastError: str(w.LastError),
		Reservation: str(w.Reservation), UpdatedAt: tm(w.UpdatedAt),
	}
	return nil
}

// History is a node history entry (Ironic's node_history), with the
// transition details Anvil records.
type History struct {
	UUID      string    `json:"uuid"`
	CreatedAt time.Time `json:"created_at"`
	Severity  string    `json:"severity"`
	EventType string    `json:"event_type"`
	Event     string    `json:"event"`
	Conductor string    `json:"conductor,omitempty"`
	User      string    `json:"user,omitempty"`
	FromState string    `json:"from_state,omitempty"`
	ToState   string    `json:"to_state,omitempty"`
	Trigger   string    `json:"trigger,omitempty"`
	// Duration is the time spent in FromState, in seconds.
	Duration float64 `json:"duration,omitempty"`
	// Owner is the node's owner project when the entry was recorded, for a
	// server to give a project-scoped reader only its nodes' history (a
	// lessee does not see it, as in Ironic). It is not sent.
	Owner string `json:"-"`
}

// HistoryProgress is the EventType of a history entry that reports how a
// long call is going while it runs (a BMC that does not answer and is
// retried): waiters show it to the operator.
const HistoryProgress = "progress"

// Resting reports whether a node in state s has stopped moving: it holds no
// lock and has no target, or sits in a failure state (which keeps its
// target) or a hold state (which waits for an operator). A waiter compares
// s.ProvisionState with the state it wants once Resting holds: anything else
// is a failure, explained by s.LastError. Follow the reservation field too
// (or no fields at all), or the lock's release is never seen.
func Resting(s NodeState) bool {
	if s.Reservation != "" {
		return false
	}
	return s.TargetProvisionState == "" || fsm.IsFailure(s.ProvisionState) || fsm.IsHold(s.ProvisionState)
}
