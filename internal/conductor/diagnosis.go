package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/diagnose"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/internal/store"
)

// DiagnosisSources gather a failed node's evidence from outside the
// conductor (wired by internal/server); a nil field leaves its part out.
type DiagnosisSources struct {
	// ConsoleTail is the last n bytes of the node's console recording.
	ConsoleTail func(node string, n int) ([]byte, bool)
	// Boot is what the boot services in this process saw of the node and
	// its MACs (nil: no boot service here, nothing can be said about DHCP).
	Boot func(node string, macs []string) []model.BootEvent
	// BMCCalls are the node's recent BMC operations.
	BMCCalls func(node string) []model.BMCCall
	// AgentLogs is where the agent's logs of an operation begun at since
	// were stored.
	AgentLogs func(node string, since time.Time) *model.AgentLogs
}

// Bounds of a diagnosis: the console tail, the history entries kept, and
// the whole document (what exceeds it is dropped, the console tail first).
const (
	DiagnosisConsoleBytes = 16 << 10
	diagnosisHistory      = 40
	DiagnosisMaxBytes     = 256 << 10
	lookupsKept           = 32
)

// lookupsKey is the one key failed lookups are kept under: they match no
// node by definition.
const lookupsKey = "unmatched"

// diagnoser makes the diagnosis of a node's failure when it is saved.
type diagnoser struct{ c *Conductor }

// failure is what a task remembers of the failure transition it fired,
// for the diagnosis made when it saves.
type failure struct{ from string }

// noteFailure marks t for a diagnosis when event fails the node or moves
// it to a failure state.
func (t *task) noteFailure(event, from, to string) {
	if event == fsm.EvFail || fsm.IsFailure(to) {
		t.failed = &failure{from: from}
	}
}

// saveQuietTask is saveQuiet for a task that may have failed its node
// without holding its lock as a task does (a restart's recovery, a dead
// conductor's take-over): a saved failure is diagnosed as task.save does.
func (c *Conductor) saveQuietTask(ctx context.Context, t *task) {
	if c.saveQuiet(ctx, t.node, t.history) && t.failed != nil {
		f := t.failed
		t.failed = nil
		diagnoser{c}.diagnose(ctx, t.node, f)
	}
}

// recordLookupFailure keeps an agent's lookup that matched no node.
func (svc *Agents) recordLookupFailure(macs []string, nodeUUID string, err error) {
	c := svc.c
	c.lookups.Add(model.AgentLookup{Time: c.now().UTC(), MACs: slices.Clone(macs), Node: nodeUUID, Error: err.Error()}, lookupsKey)
}

func newLookupLog() *recent.Log[model.AgentLookup] {
	return recent.New[model.AgentLookup](lookupsKept, 1)
}

// diagnose builds, stores and announces the diagnosis of n, which has
// just failed from state from. It never fails the caller: what it cannot
// gather is left out and logged.
func (dg diagnoser) diagnose(ctx context.Context, n *model.Node, f *failure) {
	c := dg.c
	d, err := dg.buildDiagnosis(ctx, n, f)
	if err != nil {
		c.log.Error("building the failure diagnosis failed", "node", n.UUID, "err", err)
		return
	}
	b, err := encodeDiagnosis(d, n)
	if err != nil {
		c.log.Error("encoding the failure diagnosis failed", "node", n.UUID, "err", err)
		return
	}
	if err := c.store.Diagnoses().PutDiagnosis(ctx, n.UUID, b); err != nil {
		c.log.Error("storing the failure diagnosis failed", "node", n.UUID, "err", err)
		return
	}
	c.log.Warn("node failure diagnosed", "node", n.UUID, "state", n.ProvisionState, "class", d.Class, "hint", d.Hint)
	c.addHistory(ctx, []*model.HistoryEvent{{NodeUUID: n.UUID, Conductor: c.cfg.Host, CreatedAt: c.now().UTC(),
		Severity: model.SeverityInfo, EventType: "diagnosis", Event: secret.String(diagnose.Summary(d)),
		State: n.ProvisionState, TargetProvisionState: n.TargetProvisionState}})
}

func (dg diagnoser) buildDiagnosis(ctx context.Context, n *model.Node, f *failure) (*model.Diagnosis, error) {
	c := dg.c
	d := &model.Diagnosis{NodeUUID: n.UUID, CreatedAt: c.now().UTC(), ProvisionState: n.ProvisionState, FromState: f.from,
		LastError: n.LastError, Interfaces: map[string]string{}, Boot: []model.BootEvent{}, BMCCalls: []model.BMCCall{},
		Lookups: []model.AgentLookup{}, History: []model.DiagnosisEvent{}, Ports: []string{}}
	d.Interfaces["driver"] = n.Driver
	for _, kind := range []string{"boot", "console", "deploy", "inspect", "management", "power", "rescue"} {
		if v := n.Interfaces.Get(kind); v != "" {
			d.Interfaces[kind+"_interface"] = v
		}
	}
	ports, err := c.store.Ports().ListPorts(ctx, store.PortQuery{NodeUUID: n.UUID})
	if err != nil {
		return nil, err
	}
	for _, p := range ports {
		d.Ports = append(d.Ports, p.Address)
	}
	hist, err := c.store.Nodes().ListHistory(ctx, n.UUID)
	if err != nil {
		return nil, err
	}
	since := operationStart(hist, n)
	for _, e := range hist[max(0, len(hist)-diagnosisHistory):] {
		d.History = append(d.History, model.DiagnosisEvent{CreatedAt: e.CreatedAt, Severity: e.Severity, EventType: e.EventType, Event: e.Event})
	}
	src := c.cfg.Diagnosis
	switch tail, ok := consoleTail(src, n.UUID); {
	case ok:
		d.ConsoleTail = tail
	case src.ConsoleTail == nil:
		d.ConsoleNote = "no console service runs in this process"
	case c.Consoles().consoleOf(n) == nil:
		d.ConsoleNote = "the node's console interface (" + n.Interfaces.Get("console") + ") records nothing: a real one (ipmi-sol, ipmitool-socat) records the boot output of the next failure"
	default:
		d.ConsoleNote = "nothing was recorded from the node's console"
	}
	if src.Boot != nil {
		for _, b := range src.Boot(n.UUID, d.Ports) {
			if !b.Time.Before(since) {
				d.Boot = append(d.Boot, b)
			}
		}
	}
	if src.BMCCalls != nil {
		for _, b := range src.BMCCalls(n.UUID) {
			if !b.Time.Before(since) {
				d.BMCCalls = append(d.BMCCalls, b)
			}
		}
	}
	if src.AgentLogs != nil {
		d.AgentLogs = src.AgentLogs(n.UUID, since)
	}
	for _, l := range c.lookups.Get(lookupsKey) {
		if !l.Time.Before(since) {
			d.Lookups = append(d.Lookups, l)
		}
	}
	// A failed lookup is this node's only if no other node's machine ran
	// a ramdisk meanwhile (the states whose console is recorded).
	others := 0
	if len(d.Lookups) > 0 {
		if others, err = c.store.Nodes().CountNodes(ctx, store.NodeQuery{ProvisionStates: RecordedStates}); err != nil {
			return nil, err
		}
	}
	kernel, ramdisk := "deploy_kernel", "deploy_ramdisk"
	if f.from == fsm.Rescuing || f.from == fsm.RescueWait {
		kernel, ramdisk = "rescue_kernel", "rescue_ramdisk"
	}
	ku, _ := n.DriverInfo[kernel].(string)
	ru, _ := n.DriverInfo[ramdisk].(string)
	diagnose.Classify(d, diagnose.Context{
		NetworkBoot: n.Interfaces.Get("boot") == "ipxe" || n.Interfaces.Get("boot") == "pxe", BootRecorded: src.Boot != nil,
		KernelURL: ku, RamdiskURL: ru, OthersWaiting: others,
	})
	return d, nil
}

// consoleTail is the console recording's tail as valid UTF-8.
func consoleTail(src DiagnosisSources, node string) (string, bool) {
	if src.ConsoleTail == nil {
		return "", false
	}
	b, ok := src.ConsoleTail(node, DiagnosisConsoleBytes)
	if !ok || len(b) == 0 {
		return "", false
	}
	b = b[max(0, len(b)-DiagnosisConsoleBytes):]
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}

// operationStart is when the failed operation began: the newest
// transition out of a stable or failure state (the verb that started
// it), else the node's creation.
func operationStart(hist []*model.HistoryEvent, n *model.Node) time.Time {
	for i := len(hist) - 1; i >= 0; i-- {
		e := hist[i]
		if e.FromState != "" && (fsm.IsStable(e.FromState) || fsm.IsFailure(e.FromState)) {
			return e.CreatedAt
		}
	}
	return n.CreatedAt
}

// encodeDiagnosis is d's JSON with every secret masked: what
// internal/secret masks in any text, and the node's own secret values
// (its BMC password, agent token) wherever they appear, console tail
// included. A document over DiagnosisMaxBytes loses its oldest boot
// events, then its oldest console output.
func encodeDiagnosis(d *model.Diagnosis, n *model.Node) ([]byte, error) {
	var secrets []string
	for _, m := range []model.JSON{n.DriverInfo, n.DriverInternalInfo, n.InstanceInfo} {
		for k, v := range m {
			if s, ok := v.(string); ok && len(s) >= 3 && secret.IsKey(k) {
				secrets = append(secrets, s)
			}
		}
	}
	for {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		b = secret.JSON(b)
		for _, s := range secrets {
			q, _ := json.Marshal(s)
			b = []byte(strings.ReplaceAll(string(b), string(q[1:len(q)-1]), secret.Mask))
		}
		if len(b) <= DiagnosisMaxBytes {
			return b, nil
		}
		switch {
		case len(d.Boot) > 0:
			d.Boot = d.Boot[len(d.Boot)/2:]
			if len(d.Boot) == 1 {
				d.Boot = d.Boot[:0]
			}
		case len(d.ConsoleTail) > 0:
			d.ConsoleTail = d.ConsoleTail[min(len(d.ConsoleTail), len(b)-DiagnosisMaxBytes+1024):]
			d.ConsoleTail = strings.ToValidUTF8(d.ConsoleTail, "")
		default:
			return nil, fmt.Errorf("diagnosis of %d bytes exceeds %d", len(b), DiagnosisMaxBytes)
		}
	}
}
