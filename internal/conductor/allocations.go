package conductor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/records"
	"github.com/anvil-metal/anvil/internal/store"
)

// Allocations follow Ironic's conductor/allocations.py: an allocation is
// created "allocating" with this conductor's affinity, and a worker picks
// an available, unassociated, powered, non-maintenance node of the
// resource class that has every requested trait (among the candidates and
// the owner's nodes when given), preferring the node named like the
// allocation; the node then carries allocation_uuid and instance_uuid (the
// allocation's UUID) and the allocation turns "active". Nothing suitable,
// or every suitable node locked after the lock retries, turns it "error"
// with last_error. Backfilling (1.58) associates an active node at once.

func allocationDuplicate(err error) error {
	var d *store.DuplicateError
	if !errors.As(err, &d) {
		return err
	}
	if d.Field == "name" {
		return fault.New(fault.Conflict, "An allocation with name %s already exists.", d.Value)
	}
	return fault.New(fault.Conflict, "An allocation with UUID %s already exists.", d.Value)
}

// allocationFailed is Ironic's AllocationFailed text.
func allocationFailed(uuid, reason string) string {
	return fmt.Sprintf("Failed to process allocation %s: %s.", uuid, reason)
}

// CreateAllocation stores a new allocation. With backfill (a node UUID) it
// associates that node at once (1.58) and answers its verdict; otherwise
// a worker allocates a node and CreateAllocation returns while a is still
// "allocating". Errors: fault Conflict (duplicate), Unavailable (no free
// worker), and for a backfill Invalid/Conflict with Ironic's texts (the
// allocation is then stored in state "error").
func (svc *Allocations) CreateAllocation(ctx context.Context, a *model.Allocation, backfill string) error {
	c := svc.c
	a.State = model.AllocationAllocating
	a.ConductorAffinity = c.cfg.Host
	a.NodeUUID = ""
	if a.CreatedAt.IsZero() {
		a.CreatedAt = c.now().UTC()
	}
	if backfill == "" {
		if err := c.workers.reserve(); err != nil {
			return err
		}
	}
	if err := c.store.Allocations().CreateAllocation(ctx, a); err != nil {
		if backfill == "" {
			c.workers.free()
		}
		return allocationDuplicate(err)
	}
	if backfill != "" {
		return svc.backfill(ctx, a, backfill)
	}
	id := a.UUID
	c.workers.spawn(func(ctx context.Context) { svc.allocate(ctx, id) })
	return nil
}

// allocate runs the allocation id in a worker.
func (svc *Allocations) allocate(ctx context.Context, id string) {
	c := svc.c
	a, err := c.store.Allocations().GetAllocation(ctx, id)
	if err != nil {
		c.log.Warn("allocation vanished before processing", "allocation", id, "err", err)
		return
	}
	nodes, reason, err := svc.candidates(ctx, a)
	if err == nil && reason == "" {
		reason, err = svc.reserveOne(ctx, a, nodes)
	}
	if err != nil {
		c.log.Error("allocation failed", "allocation", a.UUID, "err", err)
		reason = "Unexpected exception during allocation: " + err.Error()
	}
	if reason != "" {
		svc.failAllocation(ctx, a, allocationFailed(a.UUID, reason))
	}
}

func (svc *Allocations) failAllocation(ctx context.Context, a *model.Allocation, msg string) {
	c := svc.c
	a.NodeUUID, a.State, a.LastError = "", model.AllocationError, msg
	if err := c.store.Allocations().UpdateAllocation(ctx, a); err != nil {
		c.log.Error("saving failed allocation", "allocation", a.UUID, "err", err)
	}
}

// candidates lists the nodes that may satisfy a, shuffled, the one named
// like the allocation first; reason says why there are none.
func (svc *Allocations) candidates(ctx context.Context, a *model.Allocation) ([]*model.Node, string, error) {
	c := svc.c
	no := false
	nodes, err := c.store.Nodes().ListNodes(ctx, store.NodeQuery{ResourceClass: a.ResourceClass,
		ProvisionState: fsm.Available, Associated: &no, Maintenance: &no})
	if err != nil {
		return nil, "", err
	}
	nodes = slices.DeleteFunc(nodes, func(n *model.Node) bool {
		return n.PowerState == "" || n.ResourceClass != a.ResourceClass ||
			(len(a.CandidateNodes) > 0 && !slices.Contains(a.CandidateNodes, n.UUID)) ||
			(a.Owner != "" && n.Owner != a.Owner && n.Lessee != a.Owner)
	})
	if len(nodes) == 0 {
		if len(a.CandidateNodes) > 0 {
			return nil, "none of the requested nodes are available and match the resource class " + a.ResourceClass, nil
		}
		return nil, "no available nodes match the resource class " + a.ResourceClass, nil
	}
	if len(a.Traits) > 0 {
		nodes = slices.DeleteFunc(nodes, func(n *model.Node) bool { return !hasTraits(n, a.Traits) })
		if len(nodes) == 0 {
			return nil, "no suitable nodes have the requested traits " + strings.Join(a.Traits, ", "), nil
		}
	}
	rand.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	if a.Name != "" {
		if i := slices.IndexFunc(nodes, func(n *model.Node) bool { return n.Name == a.Name }); i > 0 {
			nodes[0], nodes[i] = nodes[i], nodes[0]
		}
	}
	return nodes, "", nil
}

func hasTraits(n *model.Node, want []string) bool {
	for _, t := range want {
		if !slices.Contains(n.Traits, t) {
			return false
		}
	}
	return true
}

// reserveOne tries the nodes in order, each once without waiting for its
// lock; locked nodes are tried again after the lock retry interval, as
// many times as a lock is retried. reason is empty on success.
func (svc *Allocations) reserveOne(ctx context.Context, a *model.Allocation, nodes []*model.Node) (string, error) {
	c := svc.c
	for attempt := 0; ; attempt++ {
		var locked []*model.Node
		for _, n := range nodes {
			done, busy, err := svc.tryNode(ctx, a, n.UUID)
			switch {
			case err != nil:
				return "", err
			case done:
				return "", nil
			case busy:
				locked = append(locked, n)
			}
		}
		if len(locked) == 0 {
			return "all nodes were filtered out during reservation", nil
		}
		if attempt >= c.cfg.LockRetries {
			return fmt.Sprintf("could not reserve any of %d suitable nodes", len(locked)), nil
		}
		if err := clock.Sleep(ctx, c.cfg.LockRetryInterval); err != nil {
			return "", err
		}
		nodes = locked
	}
}

// tryNode locks one node (no waiting), checks it still suits a and
// associates it. busy: its lock was held.
func (svc *Allocations) tryNode(ctx context.Context, a *model.Allocation, node string) (done, busy bool, err error) {
	c := svc.c
	n, err := c.store.Nodes().ReserveNode(ctx, node, c.cfg.Host)
	var le *store.LockedError
	switch {
	case errors.As(err, &le):
		return false, true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, false, nil
	case err != nil:
		return false, false, err
	}
	t := &task{c: c, node: n}
	defer t.release()
	if n.Maintenance || n.InstanceUUID != "" || n.ProvisionState != fsm.Available ||
		n.ResourceClass != a.ResourceClass || !hasTraits(n, a.Traits) {
		return false, false, nil
	}
	if err := svc.associate(ctx, a, n); err != nil {
		return false, false, err
	}
	return true, false, nil
}

// associate gives the locked node n to a: the node carries the
// allocation and its UUID as instance_uuid (and the allocation's traits in
// instance_info), the allocation turns active.
func (svc *Allocations) associate(ctx context.Context, a *model.Allocation, n *model.Node) error {
	c := svc.c
	if n.InstanceUUID != "" && n.InstanceUUID != a.UUID {
		return fault.New(fault.Conflict, "Node %s is associated with instance %s.", n.UUID, n.InstanceUUID)
	}
	cp, err := clone(n)
	if err != nil {
		return err
	}
	cp.AllocationUUID, cp.InstanceUUID = a.UUID, a.UUID
	cp.InstanceInfo = withKey(cp.InstanceInfo, "traits", stringsAny(a.Traits))
	if err := c.store.Nodes().UpdateNode(ctx, cp); err != nil {
		var d *store.DuplicateError
		if errors.As(err, &d) && d.Field == "instance_uuid" {
			return fault.New(fault.Conflict, "Instance %s is already associated with a node, it cannot be associated with this other node %s",
				a.UUID, n.UUID)
		}
		return err
	}
	a.NodeUUID, a.State, a.LastError = n.UUID, model.AllocationActive, ""
	if err := c.store.Allocations().UpdateAllocation(ctx, a); err != nil {
		// The allocation is gone (deleted meanwhile): free the node again.
		cp.AllocationUUID, cp.InstanceUUID = "", ""
		if rerr := c.store.Nodes().UpdateNode(ctx, cp); rerr != nil {
			c.log.Error("undoing a node association failed", "node", n.UUID, "err", rerr)
		}
		return fmt.Errorf("saving allocation %s: %w", a.UUID, err)
	}
	return nil
}

func stringsAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// backfill associates an already deployed node with a new allocation
// (Ironic's backfill_allocation): the node must be active and match the
// allocation's resource class, traits and candidates.
func (svc *Allocations) backfill(ctx context.Context, a *model.Allocation, node string) error {
	err := svc.doBackfill(ctx, a, node)
	if err != nil {
		svc.failAllocation(ctx, a, err.Error())
	}
	return err
}

func (svc *Allocations) doBackfill(ctx context.Context, a *model.Allocation, node string) error {
	c := svc.c
	t, err := c.acquireNode(ctx, node, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	n := t.node
	var errs []string
	if n.ProvisionState != fsm.Active {
		errs = append(errs, fmt.Sprintf("Node must be in the \"active\" state, but the current state is \"%s\"", n.ProvisionState))
	}
	if a.ResourceClass != "" && n.ResourceClass != a.ResourceClass {
		errs = append(errs, fmt.Sprintf("Resource class %s does not match the requested resource class %s", n.ResourceClass, a.ResourceClass))
	}
	if len(a.Traits) > 0 && !hasTraits(n, a.Traits) {
		errs = append(errs, fmt.Sprintf("List of traits %s does not match the requested traits %s", pyrepr.Strings(n.Traits), pyrepr.Strings(a.Traits)))
	}
	if len(a.CandidateNodes) > 0 && !slices.Contains(a.CandidateNodes, n.UUID) {
		errs = append(errs, fmt.Sprintf("Candidate nodes must be empty or contain the target node, but got %s", pyrepr.Strings(a.CandidateNodes)))
	}
	if len(errs) > 0 {
		return fault.New(fault.Invalid, "%s", allocationFailed(a.UUID,
			fmt.Sprintf("Cannot backfill an allocation for node %s: %s", n.UUID, strings.Join(errs, "; "))))
	}
	return svc.associate(ctx, a, n)
}

// DeleteAllocation removes an allocation and frees its node (allocation_uuid
// and instance_uuid cleared) under the node's lock, unless the node is
// active or in a transition (maintenance allows both). Errors: fault
// NotFound, Conflict.
func (svc *Allocations) DeleteAllocation(ctx context.Context, ident string) error {
	c := svc.c
	a, err := c.store.Allocations().GetAllocation(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Allocation", ident)
	} else if err != nil {
		return err
	}
	if a.NodeUUID == "" {
		return svc.dropAllocation(ctx, a.UUID, ident)
	}
	t, err := c.acquireNode(ctx, a.NodeUUID, "", false)
	if err != nil {
		return err
	}
	defer t.release()
	n := t.node
	if !n.Maintenance {
		if n.TargetProvisionState != "" && !fsm.UpdateAllowed(n.ProvisionState) {
			return fault.New(fault.Conflict, "Cannot remove allocation %s for node %s, because the node is in state %s where updates are not allowed (and maintenance mode is off)",
				a.UUID, n.UUID, n.ProvisionState)
		}
		if n.ProvisionState == fsm.Active {
			return fault.New(fault.Conflict, "Cannot remove allocation %s for node %s, because the node is active (and maintenance mode is off)",
				a.UUID, n.UUID)
		}
	}
	if n.AllocationUUID == a.UUID {
		cp, err := clone(n)
		if err != nil {
			return err
		}
		cp.AllocationUUID, cp.InstanceUUID = "", ""
		if err := c.store.Nodes().UpdateNode(ctx, cp); err != nil {
			return err
		}
	}
	return svc.dropAllocation(ctx, a.UUID, ident)
}

func (svc *Allocations) dropAllocation(ctx context.Context, id, ident string) error {
	c := svc.c
	if err := c.store.Allocations().DeleteAllocation(ctx, id); errors.Is(err, store.ErrNotFound) {
		return fault.Missing("Allocation", ident)
	} else if err != nil {
		return err
	}
	return nil
}

// UpdateAllocation changes an allocation's name and extra (1.57); the
// API validates them. The allocating worker may save the same allocation
// meanwhile (its state, node): apply only touches name and extra, so it
// is applied again to the fresh record, a few times, before the caller
// is told to retry.
func (svc *Allocations) UpdateAllocation(ctx context.Context, ident string, apply func(a *model.Allocation) error) (*model.Allocation, error) {
	c := svc.c
	load := func() (*model.Allocation, error) {
		a, err := c.store.Allocations().GetAllocation(ctx, ident)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.Missing("Allocation", ident)
		} else if err != nil {
			return nil, err
		}
		cp := *a
		return &cp, nil
	}
	save := func(a *model.Allocation) error {
		return allocationDuplicate(c.store.Allocations().UpdateAllocation(ctx, a))
	}
	return records.UpdateWithRetry(load, apply, save, func(a *model.Allocation) string { return "Allocation " + a.UUID })
}

// resumeAllocations restarts the allocations left "allocating" with
// host's affinity: this conductor's own after a restart (Ironic's
// _resume_allocations), or a dead conductor's, taken over first by moving
// the affinity here with a version-checked write so that one survivor wins
// (Ironic's _check_orphan_allocations).
func (svc *Allocations) resumeAllocations(ctx context.Context, host string) error {
	c := svc.c
	list, err := c.store.Allocations().ListAllocations(ctx, store.AllocationQuery{State: model.AllocationAllocating})
	if err != nil {
		return fmt.Errorf("allocations to resume: %w", err)
	}
	for _, a := range list {
		if a.ConductorAffinity != host {
			continue
		}
		if host != c.cfg.Host {
			a.ConductorAffinity = c.cfg.Host
			if err := c.store.Allocations().UpdateAllocation(ctx, a); err != nil {
				continue // taken by another conductor, or gone
			}
			c.log.Warn("took over an allocation of a dead conductor", "allocation", a.UUID, "dead", host)
		}
		if err := c.workers.reserve(); err != nil {
			return err
		}
		id := a.UUID
		c.workers.spawn(func(ctx context.Context) { svc.allocate(ctx, id) })
	}
	return nil
}

// releaseAllocation deletes the allocation of a node being torn down and
// clears it from the node (saved by the caller), as Ironic's tear down does.
func (svc *Allocations) releaseAllocation(ctx context.Context, n *model.Node) {
	c := svc.c
	if n.AllocationUUID == "" {
		return
	}
	if err := c.store.Allocations().DeleteAllocation(ctx, n.AllocationUUID); err != nil && !errors.Is(err, store.ErrNotFound) {
		c.log.Error("deleting the allocation of a torn down node", "node", n.UUID, "allocation", n.AllocationUUID, "err", err)
	}
	n.AllocationUUID, n.InstanceUUID = "", ""
}

// dropAllocationOfUnassociated deletes the allocation of a node whose
// instance_uuid an update removes (Ironic's update_node): allowed in the
// states where interfaces may change, or in maintenance.
func (svc *Allocations) dropAllocationOfUnassociated(ctx context.Context, old, n *model.Node) error {
	c := svc.c
	if old.AllocationUUID == "" || n.InstanceUUID != "" || old.InstanceUUID == "" {
		return nil
	}
	if !old.Maintenance && !fsm.InterfaceUpdateAllowed(old.ProvisionState) {
		return fault.New(fault.Conflict, "Node %s with an allocation can not have instance_uuid removed unless it is in one of allowed (%s) states or in maintenance mode. Current state is '%s'.",
			old.UUID, strings.Join(fsm.InterfaceUpdateAllowedStates(), ", "), old.ProvisionState)
	}
	if err := c.store.Allocations().DeleteAllocation(ctx, old.AllocationUUID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete allocation %s: %w", old.AllocationUUID, err)
	}
	n.AllocationUUID = ""
	return nil
}
