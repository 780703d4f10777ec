package eventbus

import (
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/pkg/events"
)

// StateOf extracts the streamed state of n.
func StateOf(n *model.Node) events.NodeState {
	return events.NodeState{
		ProvisionState: n.ProvisionState, TargetProvisionState: n.TargetProvisionState,
		ProvisionUpdatedAt: n.ProvisionUpdatedAt, PowerState: n.PowerState,
		TargetPowerState: n.TargetPowerState, Maintenance: n.Maintenance,
		MaintenanceReason: n.MaintenanceReason, Fault: n.Fault, LastError: secret.String(n.LastError),
		Reservation: n.Reservation, UpdatedAt: n.UpdatedAt, Owner: n.Owner, Lessee: n.Lessee,
	}
}

// historyOf converts a stored history entry.
func historyOf(e *model.HistoryEvent) *events.History {
	return &events.History{UUID: e.UUID, CreatedAt: e.CreatedAt.UTC(), Severity: e.Severity,
		EventType: e.EventType, Event: e.Event, Conductor: e.Conductor, User: e.User,
		FromState: e.FromState, ToState: e.ToState, Trigger: e.Trigger, Duration: e.Duration.Seconds()}
}

// changed lists the watched fields that differ between two versions of a node.
func changed(oldName string, old events.NodeState, newName string, cur events.NodeState) []string {
	var out []string
	add := func(differ bool, field string) {
		if differ {
			out = append(out, field)
		}
	}
	add(oldName != newName, events.FieldName)
	add(old.ProvisionState != cur.ProvisionState, events.FieldProvisionState)
	add(old.TargetProvisionState != cur.TargetProvisionState, events.FieldTargetProvisionState)
	add(old.PowerState != cur.PowerState, events.FieldPowerState)
	add(old.TargetPowerState != cur.TargetPowerState, events.FieldTargetPowerState)
	add(old.Maintenance != cur.Maintenance, events.FieldMaintenance)
	add(old.MaintenanceReason != cur.MaintenanceReason, events.FieldMaintenanceReason)
	add(old.Fault != cur.Fault, events.FieldFault)
	add(old.LastError != cur.LastError, events.FieldLastError)
	add(old.Reservation != cur.Reservation, events.FieldReservation)
	return out
}
