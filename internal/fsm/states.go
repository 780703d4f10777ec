package fsm

import "slices"

// Provision states, spelled as Ironic spells them (ironic/common/states.py).
const (
	Enroll         = "enroll"
	Verifying      = "verifying"
	Manageable     = "manageable"
	Available      = "available"
	Active         = "active"
	Deploying      = "deploying"
	DeployWait     = "wait call-back"
	DeployFailed   = "deploy failed"
	DeployHold     = "deploy hold"
	Cleaning       = "cleaning"
	CleanWait      = "clean wait"
	CleanFailed    = "clean failed"
	CleanHold      = "clean hold"
	Deleting       = "deleting"
	Inspecting     = "inspecting"
	InspectWait    = "inspect wait"
	InspectFailed  = "inspect failed"
	Adopting       = "adopting"
	AdoptFailed    = "adopt failed"
	Rescuing       = "rescuing"
	RescueWait     = "rescue wait"
	RescueFailed   = "rescue failed"
	Rescue         = "rescue"
	Unrescuing     = "unrescuing"
	UnrescueFailed = "unrescue failed"
	Servicing      = "servicing"
	ServiceWait    = "service wait"
	ServiceFailed  = "service failed"
	ServiceHold    = "service hold"
	Error          = "error"
)

// Events of the provision state machine. The user-facing ones are reached
// through the API verbs (see [LookupVerb]); done, fail, wait, resume and hold
// are raised by the conductor as work progresses.
const (
	EvManage   = "manage"
	EvProvide  = "provide"
	EvClean    = "clean"
	EvInspect  = "inspect"
	EvAdopt    = "adopt"
	EvDeploy   = "deploy"
	EvRebuild  = "rebuild"
	EvDelete   = "delete"
	EvRescue   = "rescue"
	EvUnrescue = "unrescue"
	EvService  = "service"
	EvDone     = "done"
	EvFail     = "fail"
	EvWait     = "wait"
	EvResume   = "resume"
	EvHold     = "hold"
	EvUnhold   = "unhold"
	EvAbort    = "abort"
)

// AllEvents returns every event of the machine, in declaration order. The
// slice is the caller's.
func AllEvents() []string {
	return []string{
		EvManage, EvProvide, EvClean, EvInspect, EvAdopt, EvDeploy,
		EvRebuild, EvDelete, EvRescue, EvUnrescue, EvService,
		EvDone, EvFail, EvWait, EvResume, EvHold, EvUnhold, EvAbort,
	}
}

// StateInfo describes one provision state.
type StateInfo struct {
	Name   string
	Stable bool   // stays put until a request arrives
	Target string // default target_provision_state; "" = none
}

// stateTable is Ironic's state list in the order the machine declares it:
// the stable states first, then each family of unstable states.
func stateTable() []StateInfo {
	return []StateInfo{
		{Enroll, true, ""},
		{Manageable, true, ""},
		{Available, true, ""},
		{Active, true, ""},
		{Error, true, ""},
		{Rescue, true, ""},
		{Verifying, false, Manageable},
		{Deploying, false, Active},
		{DeployWait, false, Active},
		{DeployFailed, false, Active},
		{DeployHold, false, Active},
		{Cleaning, false, Available},
		{CleanWait, false, Available},
		{CleanFailed, false, Available},
		{CleanHold, false, Available},
		{Deleting, false, Available},
		{Inspecting, false, Manageable},
		{InspectFailed, false, Manageable},
		{InspectWait, false, Manageable},
		{Adopting, false, Active},
		{AdoptFailed, false, Active},
		{Rescuing, false, Rescue},
		{RescueWait, false, Rescue},
		{RescueFailed, false, Rescue},
		{Unrescuing, false, Active},
		{UnrescueFailed, false, Active},
		{Servicing, false, Active},
		{ServiceWait, false, Active},
		{ServiceFailed, false, Active},
		{ServiceHold, false, Active},
	}
}

// stateIndex is built once from stateTable and never written afterwards.
var stateIndex = indexStates(stateTable())

func indexStates(table []StateInfo) map[string]StateInfo {
	m := make(map[string]StateInfo, len(table))
	for _, s := range table {
		m[s.Name] = s
	}
	return m
}

// States returns every provision state in Ironic's order. The slice is the
// caller's.
func States() []StateInfo { return stateTable() }

// Info describes state s; ok is false when s is not a provision state.
func Info(s string) (StateInfo, bool) {
	info, ok := stateIndex[s]
	return info, ok
}

// IsState reports whether s is a provision state.
func IsState(s string) bool {
	_, ok := stateIndex[s]
	return ok
}

// IsStable reports whether s is a stable state: enroll, manageable,
// available, active, error or rescue.
func IsStable(s string) bool { return stateIndex[s].Stable }

// IsFailure reports whether s is one of the "* failed" states or error,
// the states a node lands in when an operation goes wrong.
func IsFailure(s string) bool {
	switch s {
	case DeployFailed, CleanFailed, InspectFailed, AdoptFailed,
		RescueFailed, UnrescueFailed, ServiceFailed, Error:
		return true
	}
	return false
}

// IsWait reports whether s is a state waiting for an external call-back
// (heartbeat or asynchronous step), subject to a timeout.
func IsWait(s string) bool {
	switch s {
	case DeployWait, CleanWait, InspectWait, RescueWait, ServiceWait:
		return true
	}
	return false
}

// IsHold reports whether s is a state held by a step until an operator
// sends unhold or abort.
func IsHold(s string) bool {
	switch s {
	case DeployHold, CleanHold, ServiceHold:
		return true
	}
	return false
}

// DeleteAllowedStates lists the states in which a node not in maintenance
// may be deleted, in the order Ironic prints them in its 409 message
// ("Valid provision states to perform deletion are: ..."). It is
// DELETE_ALLOWED_STATES followed by available, which the conductor appends
// because [conductor]allow_deleting_available_nodes defaults to true. The
// slice is the caller's.
func DeleteAllowedStates() []string {
	return append(IronicDeleteAllowedStates(), Available)
}

// IronicDeleteAllowedStates is Ironic's DELETE_ALLOWED_STATES tuple itself
// (without available), which volume connector and target deletion check.
// The slice is the caller's.
func IronicDeleteAllowedStates() []string {
	return []string{Manageable, Enroll, AdoptFailed}
}

// DeleteAllowed reports whether a node in state s may be deleted without
// first being put into maintenance.
func DeleteAllowed(s string) bool { return slices.Contains(DeleteAllowedStates(), s) }

// UpdateAllowedStates lists the states in which a node may be updated
// (PATCHed) even while it has a target provision state, in Ironic's order
// (UPDATE_ALLOWED_STATES). Ironic refuses an update with 409 "can not be
// updated while a state transition is in progress" when the node has a
// target and its state is not listed. Ironic master's tuple also holds the
// string "service", a verb that is never a provision state; it is left
// out. The API-version nuance (inspecting is refused from 1.39) is the
// caller's. The slice is the caller's.
func UpdateAllowedStates() []string {
	return []string{
		DeployFailed, Inspecting, InspectFailed, InspectWait, CleanFailed,
		Error, Verifying, AdoptFailed, RescueFailed, UnrescueFailed,
		ServiceHold, ServiceFailed,
	}
}

// UpdateAllowed reports whether s is in [UpdateAllowedStates].
func UpdateAllowed(s string) bool { return slices.Contains(UpdateAllowedStates(), s) }

// InterfaceUpdateAllowedStates lists the states in which a node's driver,
// interfaces and resource_class may change outside maintenance, in the
// order Ironic's conductor prints them (update_node's allowed_update_states).
// The slice is the caller's.
func InterfaceUpdateAllowedStates() []string {
	return []string{Enroll, Inspecting, InspectWait, Manageable, Available}
}

// InterfaceUpdateAllowed reports whether s is in [InterfaceUpdateAllowedStates].
func InterfaceUpdateAllowed(s string) bool {
	return slices.Contains(InterfaceUpdateAllowedStates(), s)
}

// LookupAllowedStates lists the states in which a node expects its agent to
// look it up and heartbeat (Ironic's LOOKUP_ALLOWED_STATES). The slice is
// the caller's.
func LookupAllowedStates() []string {
	return []string{
		Deploying, DeployWait, Cleaning, CleanWait, Inspecting, InspectWait,
		Rescuing, RescueWait, Servicing, ServiceWait,
	}
}

// LookupAllowed reports whether s is in [LookupAllowedStates].
func LookupAllowed(s string) bool { return slices.Contains(LookupAllowedStates(), s) }
