package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/ring"
	"github.com/anvil-metal/anvil/internal/store"
)

// every runs fn each interval until ctx ends; a non-positive interval disables it.
func (c *Conductor) every(ctx context.Context, interval time.Duration, what string, fn func(context.Context) error) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("periodic task failed", "task", what, "err", err)
			}
		}
	}
}

// faultPowerFailure is Ironic's fault for a node whose BMC stopped answering.
const faultPowerFailure = "power failure"

// SyncPowerStates reads the power state of every unlocked node this
// conductor owns on the hash ring of live conductors through its driver,
// with bounded parallelism, and corrects differences Ironic's way: put the
// hardware back to the recorded state (ForcePowerStateDuringSync) or record
// the hardware's state. After PowerStateSyncMaxRetries failed reads the node
// goes into maintenance with fault "power failure"; a later good read lifts
// that maintenance (only the one the conductor set). Such a node is read
// once per PowerFailureRecoveryInterval, not on every sweep, and its
// failures are logged once: at the first failed read and when it goes into
// maintenance. Each sweep's duration, nodes and failed reads are counted
// (PowerSyncReport) and logged.
func (svc *PowerSync) SyncPowerStates(ctx context.Context) error {
	c := svc.c
	work := make(chan *model.Node)
	var wg sync.WaitGroup
	sw := &sweep{start: c.now()}
	for i := 0; i < c.cfg.SyncPowerStateWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				sw.nodes.Add(1)
				if !svc.syncPower(ctx, n) {
					sw.failed.Add(1)
				}
			}
		}()
	}
	err := svc.syncPages(ctx, work)
	close(work)
	wg.Wait()
	svc.endSweep(sw, err)
	if err != nil {
		return err
	}
	return ctx.Err()
}

// syncPage is how many unlocked nodes a power-sync pass reads at a time: a
// pass holds one page in memory, not the fleet (at 100,000 nodes the whole
// list took the process from 28 to 188 MiB).
const syncPage = 1000

// syncPages lists the unlocked nodes a page at a time, in id order, and
// sends those this conductor owns and may sync to work.
func (svc *PowerSync) syncPages(ctx context.Context, work chan<- *model.Node) error {
	c := svc.c
	free := false
	q := store.NodeQuery{Reserved: &free, Limit: syncPage}
	owned, total := 0, 0
	for {
		nodes, err := c.store.Nodes().ListNodes(ctx, q)
		if errors.Is(err, store.ErrNotFound) && q.Marker != "" {
			return nil // the page's last node was deleted meanwhile: the next pass goes on
		}
		if err != nil {
			return err
		}
		// The ring is built after each page's list, so a node created after
		// a conductor joined is never synced on a ring without that
		// conductor.
		r, err := c.liveRing(ctx)
		if err != nil {
			return err
		}
		total += len(nodes)
		last := ""
		if len(nodes) > 0 {
			last = nodes[len(nodes)-1].UUID
		}
		full := len(nodes) == syncPage
		nodes = c.owned(r, nodes)
		owned += len(nodes)
		for _, n := range nodes {
			if n.Maintenance && n.Fault != faultPowerFailure {
				continue
			}
			if n.Maintenance && !c.recovery.due(n.UUID, c.now(), c.cfg.PowerFailureRecoveryInterval) {
				continue // a BMC that stopped answering: tried again later
			}
			if n.TargetPowerState != "" || !fsm.IsStable(n.ProvisionState) && !fsm.IsFailure(n.ProvisionState) && !fsm.IsWait(n.ProvisionState) {
				continue
			}
			select {
			case work <- n:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !full {
			c.log.Debug("power sync pass", "owned", owned, "unlocked", total)
			return nil
		}
		q.Marker = last
	}
}

// syncPower reads and reconciles one node's power state; it reports false
// when the read failed.
func (svc *PowerSync) syncPower(ctx context.Context, n *model.Node) bool {
	c := svc.c
	drv, err := c.reg.For(n)
	if err != nil || drv.Power == nil {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.SyncPowerStateTimeout)
	state, health, hasHealth, err := readPower(rctx, drv.Power, n)
	cancel()
	if err != nil {
		svc.powerReadFailed(ctx, n, err)
		return false
	}
	c.log.Debug("power state read", "node", n.UUID, "power_state", state)
	c.powerFailures.Delete(n.UUID)
	c.recovery.forget(n.UUID)
	svc.reconcilePower(ctx, n, state, health, hasHealth)
	return true
}

// reconcilePower corrects the differences between the node's record and
// what its BMC reported.
func (svc *PowerSync) reconcilePower(ctx context.Context, n *model.Node, state, health string, hasHealth bool) {
	c := svc.c
	recovered := n.Maintenance && n.Fault == faultPowerFailure
	if !recovered && (!hasHealth || health == n.Health) && (state == n.PowerState || state == "") {
		return
	}
	t, err := c.acquire(ctx, n.UUID, "")
	if err != nil {
		return // busy: next round
	}
	defer t.finish()
	n = t.node
	if hasHealth && health != n.Health {
		t.record(&model.HistoryEvent{Severity: model.SeverityInfo, EventType: "monitoring",
			Event: fmt.Sprintf("Node health status changed: health='%s' (previously '%s')", powerName(health), powerName(n.Health))})
		n.Health = health
	}
	if n.Maintenance && n.Fault == faultPowerFailure {
		n.Maintenance, n.Fault, n.MaintenanceReason = false, "", ""
		t.record(&model.HistoryEvent{Severity: model.SeverityInfo, EventType: "maintenance",
			Event: "Power state read succeeded again; maintenance set by power sync is lifted"})
	}
	if state == n.PowerState || state == "" {
		return
	}
	// As Ironic, a node with disable_power_off is never forced: the
	// database follows the hardware.
	if n.PowerState == "" || !c.cfg.ForcePowerStateDuringSync || n.DisablePowerOff || (state != fsm.PowerOn && state != fsm.PowerOff) {
		t.record(&model.HistoryEvent{Severity: model.SeverityInfo, EventType: "power",
			Event: fmt.Sprintf("Power state of the node was %s in the database and %s on the hardware; updated the database", powerName(n.PowerState), state)})
		n.PowerState = state
		return
	}
	err = t.drv.Power.SetPowerState(ctx, t.driverTask(ctx), n.PowerState)
	msg := fmt.Sprintf("Power state of the node was %s on the hardware but %s in the database; forced the hardware back to %s", state, n.PowerState, n.PowerState)
	sev := model.SeverityWarning
	if err != nil {
		msg = fmt.Sprintf("Failed to force the power state of the node back to %s (hardware: %s): %v", n.PowerState, state, err)
		sev = model.SeverityError
		n.PowerState = state
	}
	t.record(&model.HistoryEvent{Severity: sev, EventType: "power", Event: msg})
}

// readPower reads the power state and, from a power interface that reports
// it (driver.HealthReader, as Ironic's redfish get_node_health), the
// hardware's health in the same call; hasHealth is false for the others,
// which leave the node's health alone.
func readPower(ctx context.Context, p driver.Power, n *model.Node) (state, health string, hasHealth bool, err error) {
	if hr, ok := p.(driver.HealthReader); ok {
		state, health, err = hr.PowerStateHealth(ctx, &driver.Task{Node: n})
		return state, health, err == nil, err
	}
	state, err = p.PowerState(ctx, &driver.Task{Node: n})
	return state, "", false, err
}

func (svc *PowerSync) powerReadFailed(ctx context.Context, n *model.Node, readErr error) {
	c := svc.c
	v, _ := c.powerFailures.LoadOrStore(n.UUID, 0)
	count := v.(int) + 1
	c.powerFailures.Store(n.UUID, count)
	// Reported once: at the first failure (then at maintenance, below);
	// the reads in between, and a recovery try's, are debug lines.
	if count == 1 && !n.Maintenance {
		c.log.Warn("power state read failed", "node", n.UUID, "max_retries", c.cfg.PowerStateSyncMaxRetries, "err", readErr)
	} else {
		c.log.Debug("power state read failed", "node", n.UUID, "attempt", count, "err", readErr)
	}
	if count < c.cfg.PowerStateSyncMaxRetries || n.Maintenance {
		return
	}
	t, err := c.acquire(ctx, n.UUID, "")
	if err != nil {
		return
	}
	defer t.finish()
	msg := fmt.Sprintf("During sync_power_state, max retries exceeded for node %s, node state %s does not match expected state. Switching node to maintenance mode. Error: %v",
		n.UUID, powerName(t.node.PowerState), readErr)
	t.node.Maintenance, t.node.Fault, t.node.MaintenanceReason = true, faultPowerFailure, msg
	t.node.LastError = msg
	t.record(&model.HistoryEvent{Severity: model.SeverityError, EventType: "maintenance", Event: msg})
	c.log.Error("power sync put the node into maintenance: its BMC stopped answering", "node", n.UUID, "err", readErr)
	c.powerFailures.Delete(n.UUID)
	c.recovery.due(n.UUID, c.now(), 0) // the first recovery try waits an interval
}

// endSweep records a finished power-sync sweep.
func (svc *PowerSync) endSweep(sw *sweep, err error) {
	c := svc.c
	d := c.now().Sub(sw.start)
	s := &c.syncStats
	s.sweeps.Add(1)
	s.reads.Add(sw.nodes.Load())
	s.failed.Add(sw.failed.Load())
	s.lastNanos.Store(int64(d))
	s.lastNodes.Store(sw.nodes.Load())
	s.lastFailed.Store(sw.failed.Load())
	lvl := slog.LevelInfo
	if sw.nodes.Load() == 0 && err == nil {
		lvl = slog.LevelDebug
	}
	c.log.Log(context.Background(), lvl, "power sync sweep", "nodes", sw.nodes.Load(), "failed_reads", sw.failed.Load(),
		"duration", d.Round(time.Millisecond).String(), "err", err)
}

// BreakDeadLocks takes over from conductors that stopped heartbeating: of
// the nodes a dead conductor locked, each survivor takes those it owns on
// the ring of live conductors, fails their transient work and frees their
// locks (wait states keep their timeouts, now checked by the new owner).
// Locks of live conductors are never touched. The dead conductor is marked
// offline once none of its locks remain.
func (c *Conductor) BreakDeadLocks(ctx context.Context) error {
	conds, err := c.store.Conductors().ListConductors(ctx)
	if err != nil {
		return err
	}
	now := c.now()
	var r *ring.Ring
	for _, cd := range conds {
		if cd.Hostname == c.cfg.Host || c.alive(cd, now) {
			continue
		}
		if r == nil {
			if r, err = c.liveRing(ctx); err != nil {
				return err
			}
		}
		left, err := c.takeOver(ctx, r, cd.Hostname)
		if err != nil {
			return err
		}
		if err := c.Allocations().resumeAllocations(ctx, cd.Hostname); err != nil {
			return err
		}
		if cd.Online && left == 0 {
			if err := c.store.Conductors().UnregisterConductor(ctx, cd.Hostname); err != nil {
				return err
			}
		}
	}
	return nil
}

// alive reports whether cd heartbeated within ConductorDeadAfter of now.
func (c *Conductor) alive(cd *model.Conductor, now time.Time) bool {
	return cd.Alive(now, c.cfg.ConductorDeadAfter)
}

// takeOver fails the transient nodes a dead host held that this conductor
// owns on r, and frees their locks; it returns how many of the dead host's
// locks other survivors have yet to take.
func (c *Conductor) takeOver(ctx context.Context, r *ring.Ring, host string) (int, error) {
	held, err := c.store.Nodes().ListNodes(ctx, store.NodeQuery{ReservedBy: host})
	if err != nil || len(held) == 0 {
		return 0, err
	}
	total := len(held)
	held = c.owned(r, held)
	for _, n := range held {
		t := &task{c: c, node: n}
		if workerOnly(n.ProvisionState) {
			t.failWith(fmt.Sprintf("Operation was aborted due to conductor take over: conductor %s stopped heartbeating while the node was in state %q", host, n.ProvisionState))
		}
		n.TargetPowerState = ""
		t.record(&model.HistoryEvent{Severity: model.SeverityWarning, EventType: "lock",
			Event: fmt.Sprintf("Lock held by dead conductor %s broken by %s", host, c.cfg.Host)})
		c.saveQuietTask(ctx, t)
		// Gone, or freed and locked again meanwhile (a survivor whose ring
		// briefly differed took it first): nothing of the dead host's left.
		var locked *store.LockedError
		if err := c.store.Nodes().ReleaseNode(ctx, n.UUID, host); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.As(err, &locked) {
			return 0, fmt.Errorf("release %s from dead conductor %s: %w", n.UUID, host, err)
		}
	}
	if len(held) > 0 {
		c.log.Warn("took over nodes of a dead conductor", "dead", host, "nodes", len(held))
	}
	return total - len(held), nil
}

// workerOnly says a node is in state s only while a worker holds its lock:
// not stable, waiting, held or failed. Such a node with no lock was lost by
// its conductor (it stopped, or could not save the work's outcome).
func workerOnly(s string) bool {
	return !fsm.IsStable(s) && !fsm.IsWait(s) && !fsm.IsHold(s) && !fsm.IsFailure(s)
}

// workerOnlyStates lists the states of workerOnly.
func workerOnlyStates() []string {
	var out []string
	for _, s := range fsm.States() {
		if workerOnly(s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// CheckOrphans fails the unlocked nodes this conductor owns that are in a
// state only a worker holding the lock may be in (workerOnly): a worker
// whose final save failed left the node there, and nothing else would
// ever move it. As Ironic's _check_deploying_status does for a node whose
// conductor went away (_fail_if_in_state), the operation fails with a
// last_error that says so; a deploy failed this way can be deployed again.
func (c *Conductor) CheckOrphans(ctx context.Context) error {
	free := false
	nodes, err := c.store.Nodes().ListNodes(ctx, store.NodeQuery{Reserved: &free, ProvisionStates: workerOnlyStates()})
	if err != nil || len(nodes) == 0 {
		return err
	}
	r, err := c.liveRing(ctx)
	if err != nil {
		return err
	}
	for _, n := range c.owned(r, nodes) {
		t, err := c.acquireNode(ctx, n.UUID, "", false)
		if err != nil {
			continue // taken meanwhile: its holder moves it
		}
		if state := t.node.ProvisionState; workerOnly(state) {
			t.failWith(fmt.Sprintf("Operation was aborted: the node was left in state %q with no conductor working on it "+
				"(its conductor could not save the operation's outcome)", state))
			t.node.TargetPowerState = ""
			c.log.Error("failed a node no conductor was working on", "node", n.UUID, "state", state)
		}
		t.finish()
	}
	return nil
}
