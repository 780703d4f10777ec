package model

import "time"

// Diagnosis is what Anvil gathered when a node entered a failure state or
// timed out in a wait state (GET /v1/nodes/{ident}/diagnosis, an Anvil
// extension): the evidence from every place that saw the machine and the
// failure's class with a plain-words hint. It is stored as this JSON
// document, one per node (the latest), and removed with the node. It never
// holds a secret: texts pass through internal/secret's masking.
type Diagnosis struct {
	NodeUUID  string    `json:"node_uuid"`
	CreatedAt time.Time `json:"created_at"`
	// The failure: the state the node entered, the state it came from and
	// its last_error (Ironic's text).
	ProvisionState string `json:"provision_state"`
	FromState      string `json:"from_state"`
	LastError      string `json:"last_error"`

	// Class names the failure (internal/diagnose's classes); Summary says
	// it in one line, Hint what to do, Evidence what it was concluded from.
	Class    string   `json:"class"`
	Summary  string   `json:"summary"`
	Hint     string   `json:"hint"`
	Evidence []string `json:"evidence"`

	History     []DiagnosisEvent `json:"history"`
	ConsoleTail string           `json:"console_tail"`
	// ConsoleNote says why the tail is empty when it is.
	ConsoleNote string            `json:"console_note,omitempty"`
	AgentLogs   *AgentLogs        `json:"agent_logs,omitempty"`
	Boot        []BootEvent       `json:"boot_events"`
	BMCCalls    []BMCCall         `json:"bmc_calls"`
	Lookups     []AgentLookup     `json:"agent_lookups"`
	Ports       []string          `json:"port_addresses"`
	Interfaces  map[string]string `json:"interfaces"`
}

// DiagnosisEvent is one history entry of the node, as the diagnosis keeps
// it.
type DiagnosisEvent struct {
	CreatedAt time.Time `json:"created_at"`
	Severity  string    `json:"severity"`
	EventType string    `json:"event_type"`
	Event     string    `json:"event"`
}

// AgentLogs is where the agent's system logs (log.collect_system_logs)
// of the failed operation are stored, as Ironic's deploy_logs_collect and
// deploy_logs_local_path.
type AgentLogs struct {
	Collect string    `json:"collect"` // always, on_failure or never
	Path    string    `json:"path,omitempty"`
	Bytes   int64     `json:"bytes,omitempty"`
	Saved   time.Time `json:"saved_at,omitzero"`
	Files   []string  `json:"files,omitempty"` // the tarball's members, bounded
	Note    string    `json:"note,omitempty"`
}

// BootEvent is one thing a network boot service saw from a machine: a
// proxyDHCP request and its answer, a TFTP or HTTP fetch with its status
// and size.
type BootEvent struct {
	Time    time.Time `json:"time"`
	Service string    `json:"service"` // proxydhcp, tftp, http
	MAC     string    `json:"mac,omitempty"`
	Node    string    `json:"node,omitempty"`
	Remote  string    `json:"remote,omitempty"`
	File    string    `json:"file,omitempty"` // the file asked for or offered
	Status  string    `json:"status"`         // offer, ack, ignored, 200, 404, sent, refused, ...
	Bytes   int64     `json:"bytes,omitempty"`
	Note    string    `json:"note,omitempty"`
}

// BMCCall is one operation a driver ran against a node's BMC.
type BMCCall struct {
	Time     time.Time `json:"time"`
	Protocol string    `json:"protocol"` // ipmi, redfish
	BMC      string    `json:"bmc"`      // host:port
	Op       string    `json:"op"`
	Attempts int       `json:"attempts,omitempty"`
	Millis   int64     `json:"duration_ms"`
	Error    string    `json:"error,omitempty"`
	// Kind classifies Error: "auth" (credentials refused), "unreachable"
	// (no answer), "" for others.
	Kind string `json:"kind,omitempty"`
	// Repeated counts the earlier calls with the same outcome this one
	// stands for (power sync reads the same BMC every minute).
	Repeated int `json:"repeated,omitempty"`
}

// MergeInto reports whether c repeats prev (the same operation on the
// same BMC with the same outcome: success, the same kind of failure, or
// the same text of an unclassified one) and, if so, c standing for both:
// what a bounded record of calls keeps in one slot.
func (c BMCCall) MergeInto(prev BMCCall) (BMCCall, bool) {
	same := c.Protocol == prev.Protocol && c.BMC == prev.BMC && c.Op == prev.Op &&
		(c.Error == "") == (prev.Error == "") && c.Kind == prev.Kind && (c.Kind != "" || c.Error == prev.Error)
	if !same {
		return c, false
	}
	c.Repeated = prev.Repeated + 1
	return c, true
}

// AgentLookup is an agent's lookup that matched no node (the MACs it tried).
type AgentLookup struct {
	Time  time.Time `json:"time"`
	MACs  []string  `json:"macs"`
	Node  string    `json:"node_uuid,omitempty"`
	Error string    `json:"error"`
}
