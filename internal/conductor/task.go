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
	n, err := c.store.Nodes().GetNode(ctx, ident)
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
		locked, err := c.store.Nodes().ReserveNode(ctx, n.UUID, c.cfg.Host)
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
			if !c.awaitFree(ctx, n.UUID, deadline, &pause) {
				record(false)
				return nil, fault.NodeLocked(n.UUID, le.Holder)
			}
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

// awaitFree waits for a held lock by reading the node, with acquire's
// back-off, until a read finds it free or the deadline passes (true: try
// the lock again) or ctx ends (false). A try is a write, and a node's lock
// is polled every few milliseconds while it is held: at fleet scale the
// writers waiting on busy nodes' locks queued ahead of everyone's saves.
func (c *Conductor) awaitFree(ctx context.Context, uuid string, deadline time.Time, pause *time.Duration) bool {
	for {
		if clock.Sleep(ctx, min(*pause, time.Until(deadline))) != nil {
			return false
		}
		*pause = min(2**pause, 100*time.Millisecond)
		n, err := c.store.Nodes().GetNode(ctx, uuid)
		if err != nil || n.Reservation == "" || !time.Now().Before(deadline) {
			return true
		}
	}
}

// release frees the lock. It uses contexts of its own so that a cancelled
// request or a shutdown can never leave a lock behind, and a release that
// fails (a database write that timed out under load) is tried again until
// it succeeds or the lock is no longer this conductor's: a lock left held
// by a live conductor is never broken, and its node would never move again.
func (t *task) release() {
	var locked *store.LockedError
	err := t.c.retryWrite("releasing node lock", t.node.UUID, 0, func(ctx context.Context) error {
		return t.c.store.Nodes().ReleaseNode(ctx, t.node.UUID, t.c.cfg.Host)
	}, func(err error) bool { return errors.Is(err, store.ErrNotFound) || errors.As(err, &locked) })
	if locked != nil {
		t.c.log.Warn("node lock was no longer ours to release", "node", t.node.UUID, "holder", locked.Holder)
	}
	_ = err // logged by retryWrite; after a shutdown, ReleaseHost frees what is left
}

// writeTimeout bounds one attempt of a write the conductor retries.
const writeTimeout = 10 * time.Second

// retryWrite runs write, each attempt with a context of its own
// (writeTimeout), until it succeeds, final says its error is final (an
// answer of the store, not a failure to reach it), attempts (0: no limit)
// have been made, or the conductor's work is interrupted at shutdown. It
// waits WriteRetryInterval after the first failure, doubling up to
// maxWriteRetryPause. A failure is logged at its first attempt and when the
// write is given up; it returns the last error (nil on success or a final
// one, which the caller judges).
func (c *Conductor) retryWrite(what, node string, attempts int, write func(ctx context.Context) error, final func(error) bool) error {
	pause := c.cfg.WriteRetryInterval
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err := write(ctx)
		cancel()
		switch {
		case err == nil:
			if attempt > 1 {
				c.log.Info(what+" succeeded after retries", "node", node, "attempts", attempt)
			}
			return nil
		case final != nil && final(err):
			return err
		case attempt == 1:
			c.log.Error(what+" failed; retrying", "node", node, "err", err)
		}
		if attempts > 0 && attempt >= attempts {
			c.log.Error(what+" failed; given up", "node", node, "attempts", attempt, "err", err)
			return err
		}
		if clock.Sleep(c.workers.ctx, pause) != nil {
			c.log.Error(what+" failed; given up at shutdown", "node", node, "attempts", attempt, "err", err)
			return err
		}
		pause = min(2*pause, maxWriteRetryPause)
	}
}

// maxWriteRetryPause is the longest wait between two attempts of a write.
const maxWriteRetryPause = 5 * time.Second

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
	if err := t.c.store.Nodes().UpdateNode(ctx, t.node); err != nil {
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

// finish saves the work's outcome and releases. A save that fails is
// retried (saveAttempts, each with a context that outlives cancellation):
// the node's stored state is still the one its work started in, which only
// a worker holding the lock may be in. One that still fails leaves the node
// so, unlocked, for CheckOrphans to fail with a clear last_error.
func (t *task) finish() {
	err := t.c.retryWrite("saving node", t.node.UUID, saveAttempts, t.save, func(err error) bool {
		return errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotFound)
	})
	if err != nil {
		t.c.log.Error("saving node failed", "node", t.node.UUID, "err", err)
	}
	t.release()
}

// saveAttempts bounds the tries of a worker's final save (about a minute
// at most, with the pauses between them).
const saveAttempts = 8

// historyAttempts bounds the tries of one history entry's write.
const historyAttempts = 5

// addHistory writes history entries, each retried (historyAttempts) when
// its write fails; an entry still not written is logged with its text, so
// that it is not lost silently.
func (c *Conductor) addHistory(_ context.Context, events []*model.HistoryEvent) {
	for _, e := range events {
		err := c.retryWrite("writing node history", e.NodeUUID, historyAttempts, func(ctx context.Context) error {
			return c.store.Nodes().AddHistory(ctx, e, c.cfg.HistoryLimit)
		}, func(err error) bool {
			// gone with its node, or written by an attempt that seemed to fail
			var dup *store.DuplicateError
			return errors.Is(err, store.ErrNotFound) || errors.As(err, &dup)
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.As(err, new(*store.DuplicateError)) {
			c.log.Error("node history entry lost", "node", e.NodeUUID, "severity", e.Severity, "event_type", e.EventType, "event", e.Event)
		}
	}
}

// driverTask is the view of the task a driver gets.
func (t *task) driverTask(ctx context.Context) *driver.Task {
	ports, err := t.c.store.Ports().ListPorts(ctx, store.PortQuery{NodeUUID: t.node.UUID})
	if err != nil {
		t.c.log.Warn("listing ports failed", "node", t.node.UUID, "err", err)
	}
	return &driver.Task{Node: t.node, Ports: ports, Driver: t.drv, Progress: func(msg string) { t.progress(ctx, msg) }}
}

// checkTask is the view of the task an interface's Validate gets: the node
// and its driver, without the ports (PortValidator gets driverTask's).
func (t *task) checkTask() *driver.Task { return &driver.Task{Node: t.node, Driver: t.drv} }

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
