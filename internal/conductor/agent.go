package conductor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// errLookupNotFound is the plain 404 a lookup answers for any miss, so that
// it reveals nothing about nodes that do not expect an agent.
func errLookupNotFound() error { return fault.ResourceNotFound() }

// Lookup finds the node an agent runs on, by node UUID or by one of its MAC
// addresses, if the node expects an agent. The first lookup after a token
// was cleared issues a new one and returns it in plain text; later lookups
// return ipa.MaskedToken. The token is kept in driver_internal_info as
// Ironic keeps it (agent_secret_token, masked by the API): the conductor
// sends it to the agent's command API, which IPA checks against its own.
// Errors: fault NotFound (no such node, or not expecting an agent),
// Conflict (node locked).
func (svc *Agents) Lookup(ctx context.Context, macs []string, nodeUUID string) (*model.Node, string, error) {
	c := svc.c
	n, err := svc.lookupNode(ctx, macs, nodeUUID)
	if fault.KindOf(err) == fault.NotFound {
		svc.recordLookupFailure(macs, nodeUUID, fmt.Errorf("no node has a port with address(es) %s", strings.Join(macs, ", ")))
	}
	if err != nil {
		return nil, "", err
	}
	if !fsm.LookupAllowed(n.ProvisionState) {
		c.log.Info("lookup refused: node does not expect an agent", "node", n.UUID, "state", n.ProvisionState)
		return nil, "", errLookupNotFound()
	}
	if tokenIssued(n) {
		return n, ipa.MaskedToken, nil
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
	if tokenIssued(n) {
		return n, ipa.MaskedToken, nil
	}
	token := ipa.NewToken()
	setInfo(&n.DriverInternalInfo, ipa.KeyToken, token)
	delete(n.DriverInternalInfo, "agent_command_token") // an older Anvil's derived key
	setInfo(&n.DriverInternalInfo, ipa.KeyTokenRequired, true)
	if err := t.save(ctx); err != nil {
		return nil, "", err
	}
	c.log.Info("agent token issued", "node", n.UUID, "state", n.ProvisionState)
	return n, token, nil
}

// tokenIssued says a token was handed out for the node's current agent. A
// hash an older Anvil stored ("sha256:...") counts as none: that agent
// cannot be commanded with it, so a new lookup issues a usable token.
func tokenIssued(n *model.Node) bool {
	s, _ := n.DriverInternalInfo[ipa.KeyToken].(string)
	return s != "" && !strings.HasPrefix(s, "sha256:")
}

// AgentNode finds the node an agent's request is about, by node UUID or by
// one of its MAC addresses, as Lookup and ContinueInspection do (an API
// process resolves it so to hand the request to the node's owner).
// Errors: fault NotFound.
func (svc *Agents) AgentNode(ctx context.Context, macs []string, nodeUUID string) (*model.Node, error) {
	return svc.lookupNode(ctx, macs, nodeUUID)
}

func (svc *Agents) lookupNode(ctx context.Context, macs []string, nodeUUID string) (*model.Node, error) {
	c := svc.c
	if nodeUUID != "" {
		n, err := c.store.Nodes().GetNode(ctx, nodeUUID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errLookupNotFound()
		}
		return n, err
	}
	norm := make([]string, 0, len(macs))
	for _, mac := range macs {
		norm = append(norm, strings.ToLower(strings.TrimSpace(mac)))
	}
	n, err := c.store.Ports().GetNodeByPortAddress(ctx, norm)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errLookupNotFound()
	}
	return n, err
}

// ErrBadAgentToken is the answer to a heartbeat without the node's token,
// and to one for a node that does not exist (Heartbeat says why).
func ErrBadAgentToken() error {
	// Ironic answers 400 here; the agent issue asks for 401, which is also
	// what an agent's retry logic expects of an authentication failure.
	return fault.New(fault.Unauthorized, "Invalid or missing agent token received.")
}

// checkToken is the one token rule of the agent endpoints (heartbeat and
// continue_inspection): once a token was issued or is required, the one
// issued must be presented.
func checkToken(n *model.Node, token string) error {
	stored, _ := n.DriverInternalInfo[ipa.KeyToken].(string)
	required, _ := n.DriverInternalInfo[ipa.KeyTokenRequired].(bool)
	if (stored != "" || required) && !ipa.TokenMatches(stored, token) {
		return ErrBadAgentToken()
	}
	return nil
}

// checkAgent refuses a heartbeat whose token does not match the one issued
// to the node (checkToken), or whose callback_url differs from the one
// recorded.
func checkAgent(n *model.Node, hb ipa.Heartbeat) error {
	if err := checkToken(n, hb.AgentToken); err != nil {
		return err
	}
	if url, _ := n.DriverInternalInfo[ipa.KeyURL].(string); url != "" && hb.CallbackURL != "" && url != hb.CallbackURL {
		return fault.New(fault.Invalid, "Detected change in ramdisk provided \"callback_url\"")
	}
	return nil
}

// recordAgent keeps the agent's callback URL, version and, for an https
// callback URL, the certificate to verify it with.
func recordAgent(n *model.Node, hb ipa.Heartbeat) {
	if hb.CallbackURL != "" {
		setInfo(&n.DriverInternalInfo, ipa.KeyURL, hb.CallbackURL)
	}
	if hb.AgentVersion != "" {
		setInfo(&n.DriverInternalInfo, ipa.KeyVersion, hb.AgentVersion)
	}
	if hb.AgentVerifyCA != "" {
		setInfo(&n.DriverInternalInfo, ipa.KeyVerifyCA, hb.AgentVerifyCA)
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
// The token rule is the heartbeat's (checkToken): once the node's token is
// required (its agent was booted) or issued, token must be the issued one,
// so a request without it changes nothing.
// The inventory is applied on a worker and the node returns to manageable.
// Errors: fault NotFound (no such node, or not inspecting), Unauthorized
// (bad token), Conflict (node locked).
func (svc *Agents) ContinueInspection(ctx context.Context, macs []string, nodeUUID, token string, inventory, pluginData map[string]any) (*model.Node, error) {
	c := svc.c
	n, err := svc.lookupNode(ctx, macs, nodeUUID)
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
	// IPA posts its inventory before its lookup (Ironic accepts that, with
	// no token): accepted while no token was issued for this boot. Once one
	// was, it is required, as for a heartbeat. Refusing the earlier post
	// would protect nothing: the lookup, by MAC, hands the token out then.
	if tokenIssued(n) || token != "" {
		if err := checkToken(n, token); err != nil {
			t.release()
			c.log.Warn("inspection data refused", "node", n.UUID, "reason", "invalid agent token")
			return nil, err
		}
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
		c.NodeRecords().createInspectedPorts(ctx, t, dt.Ports)
		if err != nil {
			c.failAgentOp(ctx, t, opInspect, fmt.Sprintf("Failed to inspect node %s: %v", t.node.UUID, err))
			return
		}
		if err := t.applyInspectionRules(ctx); err != nil {
			c.failAgentOp(ctx, t, opInspect, "Failed to finish inspection: "+t.c.errorText(err))
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
