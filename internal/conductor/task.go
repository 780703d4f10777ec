package conductor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/pkg/events"
)

// task is a node held under its lock: Ironic's TaskManager. The conductor is
// the only code that moves a node through the state machine, and it does so
// through task.fire (or task.advance inside a flow), then task.save.
type task struct {
	c       *Conductor
	node    *model.Node
	drv     *driver.Driver
	user    string
	history []*model.HistoryEvent // written after the node is saved
	failed  *failure              // a failure fired since the last save: diagnosed on save
}

// getNode loads a node by UUID or name, answering Ironic's 404.
func (c *Conductor) getNode(ctx context.Context, ident string) (*model.Node, error) {
	n, err := c.store.GetNode(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NodeNotFound(ident)
	}
	return n, err
}

// acquire takes the node's lock. A held lock is retried for as long as
// Ironic's task manager would (LockRetries × LockRetryInterval), but polled
// with a short backoff so that a lock released a millisecond later is taken
// a millisecond later.
func (c *Conductor) acquire(ctx context.Context, ident, user string) (*task, error) {
	return c.acquireNode(ctx, ident, user, true)
}

// acquireNode is acquire; without loadDriver the task has no driver (a node
// update, which must work even when a stored interface is no longer enabled).
func (c *Conductor) acquireNode(ctx context.Context, ident, user string, loadDriver bool) (*task, error) {
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := start.Add(time.Duration(c.cfg.LockRetries) * c.cfg.LockRetryInterval)
	record := func(acquired bool) {
		if c.cfg.Recorder != nil {
			c.cfg.Recorder.LockWait(time.Since(start), acquired)
		}
	}
	pause := 2 * time.Millisecond
	for {
		locked, err := c.store.ReserveNode(ctx, n.UUID, c.cfg.Host)
		if err == nil {
			n = locked
			record(true)
			break
		}
		var le *store.LockedError
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, fault.NodeNotFound(ident)
		case errors.As(err, &le) && time.Now().Before(deadline):
			if serr := clock.Sleep(ctx, min(pause, time.Until(deadline))); serr != nil {
				record(false)
				return nil, fault.NodeLocked(n.UUID, le.Holder)
			}
			pause = min(2*pause, 100*time.Millisecond)
		case errors.As(err, &le):
			record(false)
			return nil, fault.NodeLocked(n.UUID, le.Holder)
		default:
			return nil, err
		}
	}
	t := &task{c: c, node: n, user: user}
	if !loadDriver {
		return t, nil
	}
	drv, err := c.reg.For(n)
	if err != nil {
		t.release()
		var ie *driver.InterfaceError
		if errors.As(err, &ie) { // Ironic's text alone, as build_driver_for_task raises it
			return nil, fault.Wrap(fault.Invalid, err, err.Error())
		}
		return nil, fault.Wrap(fault.Invalid, err, fmt.Sprintf("Cannot load the driver of node %s: %v", n.UUID, err))
	}
	t.drv = drv
	return t, nil
}

// release frees the lock. It uses its own context so that a cancelled request
// or a shutdown can never leave a lock behind.
func (t *task) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.c.store.ReleaseNode(ctx, t.node.UUID, t.c.cfg.Host); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.c.log.Error("releasing node lock failed", "node", t.node.UUID, "err", err)
	}
}

// fire moves the node through the state machine on event: the new state and
// the target come from fsm.Next, given the node's current target. It answers
// Ironic's InvalidState when the machine forbids the event; callers on the
// request path return that error to the client.
func (t *task) fire(event string) error {
	n := t.node
	from := n.ProvisionState
	to, target, ok := fsm.Next(from, event, n.TargetProvisionState)
	if !ok {
		return fault.InvalidState(event, n.UUID, from)
	}
	now := t.c.now().UTC()
	var inState time.Duration
	secs := historyDuration(n, now) // before provision_updated_at moves
	if !n.ProvisionUpdatedAt.IsZero() {
		inState = now.Sub(n.ProvisionUpdatedAt)
	} else if !n.CreatedAt.IsZero() {
		inState = now.Sub(n.CreatedAt)
	}
	n.ProvisionState, n.TargetProvisionState, n.ProvisionUpdatedAt = to, target, now
	t.noteFailure(event, from, to)
	sev := model.SeverityInfo
	if fsm.IsFailure(to) {
		sev = model.SeverityError
	}
	t.record(&model.HistoryEvent{
		Severity: sev, EventType: "provisioning", FromState: from, ToState: to, Trigger: event,
		Duration: inState, CreatedAt: now, DurationSeconds: secs,
		Event: fmt.Sprintf("Node moved to provision state %q from state %q; target provision state is %q", to, from, target),
	})
	logf := t.c.log.Info
	if fsm.IsFailure(to) {
		logf = t.c.log.Error
	}
	logf("provision state changed", "node", n.UUID, "from", from, "to", to, "target", target, "event", event)
	return nil
}

// advance fires an event a flow raises on its own node (done, wait, hold,
// manage after a manual clean). The flow runs in the state its verb moved
// the node to, so the machine always accepts the event; if it ever does
// not, that is a conductor bug: it is logged and recorded as the node's
// last_error, and the node is failed where the machine allows it rather
// than left in a transient state.
func (t *task) advance(event string) {
	if err := t.fire(event); err != nil {
		msg := fmt.Sprintf("Internal error: the conductor raised event %q on node %s in state %q, which the state machine forbids", event, t.node.UUID, t.node.ProvisionState)
		t.c.log.Error("conductor raised a forbidden event", "node", t.node.UUID, "state", t.node.ProvisionState, "event", event)
		t.failWith(msg)
	}
}

// failWith fires "fail" where the state machine has a fail event from the
// node's state, and records msg as last_error and as an error history entry.
// A state without one (a stable or failure state) stays as it is: the refused
// transition is expected there and last_error tells what happened.
func (t *task) failWith(msg string) {
	if err := t.fire(fsm.EvFail); err != nil {
		t.c.log.Debug("no fail event from this state; recording last_error only", "node", t.node.UUID, "state", t.node.ProvisionState)
	}
	t.node.LastError = msg
	t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: "error", Event: msg})
}

// record queues a history entry, written on the next save, with what
// Ironic master's node_history_record adds (API 1.115): the node's
// provision state and target now, and the seconds since its provision
// state last changed (a transition sets its own: the time in the state it
// left). The project stays null, as in Ironic master, whose callers pass
// none.
func (t *task) record(e *model.HistoryEvent) {
	e.NodeUUID = t.node.UUID
	e.Conductor = t.c.cfg.Host
	e.User = t.user
	if e.CreatedAt.IsZero() {
		e.CreatedAt = t.c.now().UTC()
	}
	e.State, e.TargetProvisionState = t.node.ProvisionState, t.node.TargetProvisionState
	if e.DurationSeconds == nil && e.FromState == "" {
		e.DurationSeconds = historyDuration(t.node, e.CreatedAt)
	}
	t.history = append(t.history, e)
}

// historyDuration is Ironic's duration_seconds of a history entry recorded
// at now: whole seconds since the node's provision_updated_at, nil when
// it has none.
func historyDuration(n *model.Node, now time.Time) *int64 {
	if n.ProvisionUpdatedAt.IsZero() {
		return nil
	}
	return new(int64(now.Sub(n.ProvisionUpdatedAt).Seconds()))
}

// save writes the node and its queued history.
func (t *task) save(ctx context.Context) error {
	if err := t.c.store.UpdateNode(ctx, t.node); err != nil {
		return fmt.Errorf("save node %s: %w", t.node.UUID, err)
	}
	t.c.addHistory(ctx, t.history)
	t.history = nil
	if f := t.failed; f != nil {
		t.failed = nil
		diagnoser{t.c}.diagnose(ctx, t.node, f)
	}
	return nil
}

// finish saves (with a context that outlives cancellation) and releases.
func (t *task) finish() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.save(ctx); err != nil {
		t.c.log.Error("saving node failed", "node", t.node.UUID, "err", err)
	}
	t.release()
}

func (c *Conductor) addHistory(ctx context.Context, events []*model.HistoryEvent) {
	for _, e := range events {
		if err := c.store.AddHistory(ctx, e, c.cfg.HistoryLimit); err != nil {
			c.log.Error("writing node history failed", "node", e.NodeUUID, "err", err)
		}
	}
}

// driverTask is the view of the task a driver gets.
func (t *task) driverTask(ctx context.Context) *driver.Task {
	ports, err := t.c.store.ListPorts(ctx, store.PortQuery{NodeUUID: t.node.UUID})
	if err != nil {
		t.c.log.Warn("listing ports failed", "node", t.node.UUID, "err", err)
	}
	return &driver.Task{Node: t.node, Ports: ports, Progress: func(msg string) { t.progress(ctx, msg) }}
}

// progress writes a driver's report on a call still running to the node's
// history at once (not with the task's next save), as an info entry of
// type "progress".
func (t *task) progress(ctx context.Context, msg string) {
	now := t.c.now().UTC()
	e := &model.HistoryEvent{NodeUUID: t.node.UUID, Conductor: t.c.cfg.Host, User: t.user, CreatedAt: now,
		Severity: model.SeverityInfo, EventType: events.HistoryProgress, Event: msg,
		State: t.node.ProvisionState, TargetProvisionState: t.node.TargetProvisionState,
		DurationSeconds: historyDuration(t.node, now)}
	t.c.log.Info("progress", "node", t.node.UUID, "msg", msg)
	t.c.addHistory(ctx, []*model.HistoryEvent{e})
}

// errorText is how an error reads in last_error and in the node's history:
// its text, except that work cut short by the conductor stopping (its
// context canceled, which Go spells "context canceled") says so in plain
// words.
func (c *Conductor) errorText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted: conductor " + c.cfg.Host + " stopped before the operation finished"
	}
	return err.Error()
}
