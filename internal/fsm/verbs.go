package fsm

// Verb maps a target accepted by PUT /v1/nodes/{node}/states/provision to the
// machine event it raises.
type Verb struct {
	Target   string // the "target" string of the request body
	Event    string // the event raised on the machine
	MinMinor int    // oldest API microversion accepting it: 1.MinMinor
}

// AllowedAt reports whether the verb is accepted at API version 1.minor.
// Ironic answers 406 "Request not acceptable." below the minimum.
func (v Verb) AllowedAt(minor int) bool { return minor >= v.MinMinor }

// verbTable is Ironic's VERBS dict (ironic/common/states.py), in its order,
// with the gate Ironic's API applies to each target, then the API-only
// rebuild target. Ironic looks its MIN_VERB_VERSIONS up with the raw
// target, so the old words active and deleted are never gated, while the
// words deploy and undeploy need 1.73.
func verbTable() []Verb {
	return []Verb{
		{"active", EvDeploy, 1},      // the original deploy word, never gated
		{"deploy", EvDeploy, 73},     // the new word for active
		{"deleted", EvDelete, 1},     // the original tear-down word, never gated
		{"undeploy", EvDelete, 73},   // the new word for deleted
		{"manage", EvManage, 4},      // manageable state introduced
		{"provide", EvProvide, 4},    // manageable state introduced
		{"inspect", EvInspect, 6},    // inspection introduced
		{"abort", EvAbort, 13},       // abort introduced
		{"clean", EvClean, 15},       // manual cleaning introduced
		{"adopt", EvAdopt, 17},       // adoption introduced
		{"rescue", EvRescue, 38},     // rescue interface introduced
		{"unrescue", EvUnrescue, 38}, // rescue interface introduced
		{"unhold", EvUnhold, 85},     // release a deploy, clean or service hold
		{"service", EvService, 87},   // service steps on an active node
		{"rebuild", EvRebuild, 1},    // not in VERBS; the API accepts it as is
	}
}

// rebuildTarget is the one API target that Ironic's VERBS dict lacks.
const rebuildTarget = "rebuild"

// Verbs returns every provision target the API accepts: Ironic's VERBS
// table in its order, then rebuild. The slice is the caller's.
func Verbs() []Verb { return verbTable() }

// LookupVerb returns the verb for an API target; ok is false for a target
// the API does not accept.
func LookupVerb(target string) (Verb, bool) {
	for _, v := range verbTable() {
		if v.Target == target {
			return v, true
		}
	}
	return Verb{}, false
}

// ironicVerbs is Ironic's VERBS dict: the verb table without rebuild.
func ironicVerbs() []Verb {
	var out []Verb
	for _, v := range verbTable() {
		if v.Target != rebuildTarget {
			out = append(out, v)
		}
	}
	return out
}
