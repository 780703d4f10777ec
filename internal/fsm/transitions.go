package fsm

import "slices"

// Transition is one edge of the provision state machine: event moves a node
// from state From to state To.
type Transition struct {
	From, Event, To string
}

// transitionTable is Ironic master's machine (ironic/common/state_machine.py),
// grouped by source state. Read it as the spec: one line per transition.
func transitionTable() []Transition {
	return []Transition{
		{Enroll, EvManage, Verifying},            // start verifying the power credentials
		{Manageable, EvProvide, Cleaning},        // automated clean on the way to available
		{Manageable, EvClean, Cleaning},          // manual clean, back to manageable afterwards
		{Manageable, EvInspect, Inspecting},      // start inspection
		{Manageable, EvAdopt, Adopting},          // adopt a node deployed by other means
		{Available, EvDeploy, Deploying},         // start a deployment
		{Available, EvManage, Manageable},        // take an available node out of the pool
		{Active, EvRebuild, Deploying},           // re-deploy the instance
		{Active, EvDelete, Deleting},             // tear the instance down
		{Active, EvRescue, Rescuing},             // boot the rescue ramdisk
		{Active, EvService, Servicing},           // run service steps on a deployed node
		{Error, EvRebuild, Deploying},            // rebuild an errored instance
		{Error, EvDelete, Deleting},              // or tear it down
		{Rescue, EvRescue, Rescuing},             // rescue a rescued node again
		{Rescue, EvDelete, Deleting},             // tear down a rescued node
		{Rescue, EvUnrescue, Unrescuing},         // return from rescue to active
		{Verifying, EvDone, Manageable},          // credentials verified
		{Verifying, EvFail, Enroll},              // verification failed: back to enroll with last_error
		{Deploying, EvFail, DeployFailed},        // deployment failed
		{Deploying, EvWait, DeployWait},          // wait for the agent's call-back
		{Deploying, EvHold, DeployHold},          // a deploy step asked to hold
		{Deploying, EvDone, Active},              // deployment complete
		{DeployWait, EvHold, DeployHold},         // hold while waiting
		{DeployWait, EvResume, Deploying},        // call-back arrived, continue deploying
		{DeployWait, EvFail, DeployFailed},       // call-back timed out or failed
		{DeployWait, EvAbort, DeployFailed},      // operator aborted the deployment
		{DeployWait, EvDelete, Deleting},         // tear down while waiting
		{DeployFailed, EvRebuild, Deploying},     // retry the deployment
		{DeployFailed, EvDeploy, Deploying},      // retry via the old "active" target
		{DeployFailed, EvDelete, Deleting},       // tear down the failed deployment
		{DeployHold, EvUnhold, DeployWait},       // release the hold
		{DeployHold, EvAbort, DeployFailed},      // abort a held deployment
		{Cleaning, EvDone, Available},            // cleaning complete
		{Cleaning, EvFail, CleanFailed},          // cleaning failed: operator must intervene
		{Cleaning, EvWait, CleanWait},            // wait for a clean step to finish
		{Cleaning, EvHold, CleanHold},            // a clean step asked to hold
		{Cleaning, EvManage, Manageable},         // manual clean complete
		{CleanWait, EvFail, CleanFailed},         // clean step failed or timed out
		{CleanWait, EvAbort, CleanFailed},        // operator aborted cleaning
		{CleanWait, EvHold, CleanHold},           // hold while waiting
		{CleanWait, EvResume, Cleaning},          // clean step finished, continue
		{CleanFailed, EvManage, Manageable},      // recover a failed clean to manageable
		{CleanHold, EvAbort, CleanFailed},        // abort held cleaning
		{CleanHold, EvUnhold, CleanWait},         // release the hold
		{Deleting, EvFail, Error},                // tear-down failed
		{Deleting, EvClean, Cleaning},            // tear-down done, clean the node
		{Inspecting, EvDone, Manageable},         // inspection complete
		{Inspecting, EvFail, InspectFailed},      // inspection failed
		{Inspecting, EvWait, InspectWait},        // asynchronous inspection under way
		{InspectFailed, EvManage, Manageable},    // recover a failed inspection to manageable
		{InspectFailed, EvInspect, Inspecting},   // retry the inspection
		{InspectWait, EvDone, Manageable},        // asynchronous inspection complete
		{InspectWait, EvFail, InspectFailed},     // asynchronous inspection failed or timed out
		{InspectWait, EvAbort, InspectFailed},    // operator aborted the inspection
		{InspectWait, EvResume, Inspecting},      // continue inspecting
		{Adopting, EvDone, Active},               // adoption complete
		{Adopting, EvFail, AdoptFailed},          // adoption failed
		{AdoptFailed, EvAdopt, Adopting},         // retry the adoption
		{AdoptFailed, EvManage, Manageable},      // give up on adoption, back to manageable
		{Rescuing, EvDone, Rescue},               // rescue ramdisk is up
		{Rescuing, EvWait, RescueWait},           // wait for the rescue agent's call-back
		{Rescuing, EvFail, RescueFailed},         // rescue failed
		{RescueWait, EvResume, Rescuing},         // call-back arrived, continue rescuing
		{RescueWait, EvFail, RescueFailed},       // rescue failed or timed out
		{RescueWait, EvAbort, RescueFailed},      // operator aborted the rescue
		{RescueWait, EvDelete, Deleting},         // tear down while waiting
		{RescueFailed, EvRescue, Rescuing},       // retry the rescue
		{RescueFailed, EvUnrescue, Unrescuing},   // give up rescue, back towards active
		{RescueFailed, EvDelete, Deleting},       // tear down after a failed rescue
		{Unrescuing, EvDone, Active},             // back in the instance
		{Unrescuing, EvFail, UnrescueFailed},     // unrescue failed
		{UnrescueFailed, EvRescue, Rescuing},     // rescue again
		{UnrescueFailed, EvUnrescue, Unrescuing}, // retry the unrescue
		{UnrescueFailed, EvDelete, Deleting},     // tear down after a failed unrescue
		{Servicing, EvDone, Active},              // service steps complete
		{Servicing, EvFail, ServiceFailed},       // a service step failed
		{Servicing, EvWait, ServiceWait},         // wait for a service step to finish
		{Servicing, EvHold, ServiceHold},         // a service step asked to hold
		{ServiceWait, EvHold, ServiceHold},       // hold while waiting
		{ServiceWait, EvResume, Servicing},       // service step finished, continue
		{ServiceWait, EvFail, ServiceFailed},     // service step failed or timed out
		{ServiceWait, EvAbort, ServiceFailed},    // operator aborted servicing
		{ServiceWait, EvDelete, Deleting},        // tear down while waiting
		{ServiceFailed, EvService, Servicing},    // retry servicing
		{ServiceFailed, EvRescue, Rescuing},      // rescue a node that failed servicing
		{ServiceFailed, EvWait, ServiceWait},     // resume waiting on a step
		{ServiceFailed, EvHold, ServiceHold},     // hold a failed service
		{ServiceFailed, EvDelete, Deleting},      // tear down after failed servicing
		{ServiceFailed, EvAbort, Active},         // abandon servicing, back to active
		{ServiceHold, EvService, Servicing},      // start over with new service steps
		{ServiceHold, EvUnhold, ServiceWait},     // release the hold
		{ServiceHold, EvFail, ServiceFailed},     // a held service failed
		{ServiceHold, EvAbort, ServiceFailed},    // operator aborted held servicing
	}
}

// edge is the key of the transition index.
type edge struct{ from, event string }

// machine is the transition table indexed for lookups. It is built once from
// transitionTable and never written afterwards.
type machine struct {
	next   map[edge]string
	events map[string][]string // sorted events allowed from each state
}

var index = buildMachine(transitionTable())

func buildMachine(table []Transition) machine {
	m := machine{
		next:   make(map[edge]string, len(table)),
		events: make(map[string][]string),
	}
	for _, t := range table {
		m.next[edge{t.From, t.Event}] = t.To
		m.events[t.From] = append(m.events[t.From], t.Event)
	}
	for _, evs := range m.events {
		slices.Sort(evs)
	}
	return m
}

// Transitions returns every transition in table order. The slice is the
// caller's.
func Transitions() []Transition { return transitionTable() }

// Next returns the state that event leads to from state from, and the
// target provision state the node heads for once there. target is the
// node's target before the event; it is what tells a manual clean (heading
// for manageable) from an automated one. ok is false when the machine
// forbids the event there (or either string is unknown).
//
// The target follows Ironic's rules (fsm.py's _post_process_event and
// TaskManager.process_event):
//
//   - a stable state has no target: Ironic clears it when a stable state
//     is reached with no work to follow, and in this machine no work ever
//     follows an event that leads to a stable state;
//   - an unstable state heads for its default [StateInfo.Target];
//   - except the cleaning states of a manual clean, which head for
//     manageable: the clean verb from manageable starts one, and cleaning,
//     clean wait and clean hold whose target is manageable continue one
//     (Ironic passes target_state=manageable for each of these events).
func Next(from, event, target string) (to, toTarget string, ok bool) {
	to, ok = index.next[edge{from, event}]
	if !ok {
		return "", "", false
	}
	return to, targetOf(from, event, target, to), true
}

// Allowed reports whether the machine accepts event in state from.
func Allowed(from, event string) bool {
	_, ok := index.next[edge{from, event}]
	return ok
}

// Finish returns the event that completes the work under way in state from
// for a node heading for target: the event leading from from to target. It
// is done, except at the end of a manual clean, where it is manage. ok is
// false when no event leads there.
func Finish(from, target string) (event string, ok bool) {
	for _, ev := range index.events[from] {
		if index.next[edge{from, ev}] == target {
			return ev, true
		}
	}
	return "", false
}

// targetOf is the target rule of [Next] for the allowed transition
// from --event--> to.
func targetOf(from, event, target, to string) string {
	info := stateIndex[to]
	switch {
	case info.Stable:
		return ""
	case manualClean(from, event, target):
		return Manageable
	}
	return info.Target
}

// manualClean reports whether event, fired in state from on a node heading
// for target, belongs to a manual clean: Ironic's do_node_clean starts one
// from manageable, and every later cleaning event keeps target manageable.
func manualClean(from, event, target string) bool {
	switch from {
	case Manageable:
		return event == EvClean
	case Cleaning, CleanWait, CleanHold:
		return target == Manageable
	}
	return false
}

// Events returns the events allowed from state from, sorted; nil for an
// unknown state. The slice is the caller's.
func Events(from string) []string {
	return slices.Clone(index.events[from])
}
