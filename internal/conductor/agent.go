package conductor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/agent/agentapi"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// errLookupNotFound is the plain 404 a lookup answers for any miss, so that
// it reveals nothing about nodes that do not expect an agent.
func errLookupNotFound() error { return fault.New(fault.NotFound, "Resource could not be found.") }

// Lookup finds the node an agent runs on, by node UUID or by one of its MAC
// addresses, if the node expects an agent. The first lookup after a token
// was cleared issues a new one and returns it in plain text; later lookups
// return agentapi.MaskedToken. Only hashes of the token are stored.
// Errors: fault NotFound (no such node, or not expecting an agent),
// Conflict (node locked).
func (c *Conductor) Lookup(ctx context.Context, macs []string, nodeUUID string) (*model.Node, string, error) {
	n, err := c.lookupNode(ctx, macs, nodeUUID)
	if err != nil {
		return nil, "", err
	}
	if !fsm.LookupAllowed(n.ProvisionState) {
		c.log.Info("lookup refused: node does not expect an agent", "node", n.UUID, "state", n.ProvisionState)
		return nil, "", errLookupNotFound()
	}
	if s, _ := n.DriverInternalInfo[agentapi.KeyTokenHash].(string); s != "" {
		return n, agentapi.MaskedToken, nil
	}
	t, err := c.acquire(ctx, n.UUID, "agent")
	if err != nil {
		return nil, "", err
	}
	defer t.release()
	n = t.node
	if !fsm.LookupAllowed(n.ProvisionState) {
		return nil, "", errLookupNotFound()
	}
	if s, _ := n.DriverInternalInfo[agentapi.KeyTokenHash].(string); s != "" {
		return n, agentapi.MaskedToken, nil
	}
	token := agentapi.NewToken()
	setInfo(&n.DriverInternalInfo, agentapi.KeyTokenHash, agentapi.HeartbeatHash(token))
	setInfo(&n.DriverInternalInfo, agentapi.KeyCommandKey, agentapi.CommandKey(token))
	setInfo(&n.DriverInternalInfo, agentapi.KeyTokenRequired, true)
	if err := t.save(ctx); err != nil {
		return nil, "", err
	}
	c.log.Info("agent token issued", "node", n.UUID, "state", n.ProvisionState)
	return n, token, nil
}

func (c *Conductor) lookupNode(ctx context.Context, macs []string, nodeUUID string) (*model.Node, error) {
	if nodeUUID != "" {
		n, err := c.store.GetNode(ctx, nodeUUID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errLookupNotFound()
		}
		return n, err
	}
	for _, mac := range macs {
		p, err := c.store.GetPortByAddress(ctx, strings.ToLower(strings.TrimSpace(mac)))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := c.store.GetNode(ctx, p.NodeUUID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		return n, err
	}
	return nil, errLookupNotFound()
}

// errBadToken is Ironic's answer to a heartbeat without the node's token.
func errBadToken() error {
	// Ironic answers 400 here; the agent issue asks for 401, which is also
	// what an agent's retry logic expects of an authentication failure.
	return fault.New(fault.Unauthorized, "Invalid or missing agent token received.")
}

// checkAgent refuses a heartbeat whose token does not match the one issued
// to the node (when one was issued or is required), or whose callback_url
// differs from the one recorded.
func checkAgent(n *model.Node, hb HeartbeatRequest) error {
	stored, _ := n.DriverInternalInfo[agentapi.KeyTokenHash].(string)
	required, _ := n.DriverInternalInfo[agentapi.KeyTokenRequired].(bool)
	if (stored != "" || required) && !agentapi.CheckHeartbeat(stored, hb.AgentToken) {
		return errBadToken()
	}
	if url, _ := n.DriverInternalInfo[agentapi.KeyURL].(string); url != "" && hb.CallbackURL != "" && url != hb.CallbackURL {
		return fault.New(fault.Invalid, "Detected change in ramdisk provided \"callback_url\"")
	}
	return nil
}

// recordAgent keeps the agent's callback URL and version (first heartbeat).
func recordAgent(n *model.Node, hb HeartbeatRequest) {
	if hb.CallbackURL != "" {
		setInfo(&n.DriverInternalInfo, agentapi.KeyURL, hb.CallbackURL)
	}
	if hb.AgentVersion != "" {
		setInfo(&n.DriverInternalInfo, agentapi.KeyVersion, hb.AgentVersion)
	}
}

// InventoryReceiver is an optional Inspect capability: accept an inventory
// pushed by a ramdisk (POST /v1/continue_inspection) for a node in inspect
// wait. It may append new ports (empty UUID) to the task.
type InventoryReceiver interface {
	ReceiveInventory(ctx context.Context, t *driver.Task, inventory, pluginData map[string]any) error
}

// ContinueInspection is POST /v1/continue_inspection: it finds the node by
// node UUID or by the MACs of the inventory's interfaces; the node must be
// in inspect wait with an inspect interface able to receive an inventory.
// If an agent token was already issued for the node, token must match it.
// The inventory is applied on a worker and the node returns to manageable.
// Errors: fault NotFound (no such node, or not inspecting), Unauthorized
// (bad token), Conflict (node locked).
func (c *Conductor) ContinueInspection(ctx context.Context, macs []string, nodeUUID, token string, inventory, pluginData map[string]any) (*model.Node, error) {
	n, err := c.lookupNode(ctx, macs, nodeUUID)
	if err != nil {
		return nil, err
	}
	if n.ProvisionState != fsm.InspectWait {
		c.log.Info("inspection data refused: node is not waiting for inspection", "node", n.UUID, "state", n.ProvisionState)
		return nil, errLookupNotFound()
	}
	t, err := c.acquire(ctx, n.UUID, "agent")
	if err != nil {
		return nil, err
	}
	n = t.node
	if n.ProvisionState != fsm.InspectWait {
		t.release()
		return nil, errLookupNotFound()
	}
	if stored, _ := n.DriverInternalInfo[agentapi.KeyTokenHash].(string); stored != "" && !agentapi.CheckHeartbeat(stored, token) {
		t.release()
		c.log.Warn("inspection data refused", "node", n.UUID, "reason", "invalid agent token")
		return nil, errBadToken()
	}
	recv, ok := t.drv.Inspect.(InventoryReceiver)
	if !ok {
		t.release()
		return nil, fault.New(fault.Invalid, "The inspect interface of node %s does not accept inspection data.", n.UUID)
	}
	out := *n
	err = c.startWork(ctx, t, fsm.EvResume, func(ctx context.Context, t *task) {
		dt := t.driverTask(ctx)
		err := recv.ReceiveInventory(ctx, dt, inventory, pluginData)
		c.createInspectedPorts(ctx, t, dt.Ports)
		if err != nil {
			t.failWith(fmt.Sprintf("Failed to inspect node %s: %v", t.node.UUID, err))
			return
		}
		t.node.InspectionFinishedAt = c.now().UTC()
		t.advance(fsm.EvDone)
	})
	if err != nil {
		t.release()
		return nil, err
	}
	return &out, nil
}
