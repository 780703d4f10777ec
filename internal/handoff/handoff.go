package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/ring"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/workq"
)

// The kinds of handed-over calls.
const (
	kindProvision = "provision"
	kindPower     = "power"
	kindHeartbeat = "heartbeat"
	kindInspect   = "inspection"
	kindAllocate  = "allocation"
	kindConsole   = "console"
	kindLog       = "console_log"
)

// ConsoleAccess is how an API process reaches a console held by the
// node's owner: a one-time ticket for the owner's relay endpoint (a
// WebSocket at URL, internal/api's ConsoleRelay).
type ConsoleAccess struct {
	URL    string `json:"url"`
	Ticket string `json:"ticket"`
}

// Consoles is the owner's side of consoles asked for by API processes.
type Consoles interface {
	// Access mints a ConsoleAccess for node (an error when its console is
	// not held here).
	Access(ctx context.Context, node string) (ConsoleAccess, error)
	// Log is the last tail bytes (all when 0) of node's recorded output,
	// and whether there is a recording.
	Log(node string, tail int) ([]byte, bool)
}

// logCall and logReply are a handed-over console log request and its
// answer (JSON: the bytes in base64).
type logCall struct {
	Tail int `json:"tail"`
}

type logReply struct {
	Found bool   `json:"found"`
	Log   []byte `json:"log"`
}

// allocationCall is the body of a handed-over allocation.
type allocationCall struct {
	Allocation model.Allocation `json:"allocation"`
	Backfill   string           `json:"backfill,omitempty"`
}

// inspectionCall is the body of a handed-over continue_inspection: the
// node is already resolved (its UUID is the call's node).
type inspectionCall struct {
	Token      string         `json:"token,omitempty"`
	Inventory  map[string]any `json:"inventory"`
	PluginData map[string]any `json:"plugin_data,omitempty"`
}

// Handler runs handed-over calls on c; consoles answers requests for a
// console relay or log (nil: none are).
func Handler(c *conductor.Conductor, consoles Consoles) workq.Handler {
	return func(ctx context.Context, kind, node string, body []byte) ([]byte, error) {
		switch kind {
		case kindConsole, kindLog:
			if consoles == nil {
				return nil, fault.New(fault.Unavailable, "Conductor does not serve consoles.")
			}
		}
		switch kind {
		case kindConsole:
			a, err := consoles.Access(ctx, node)
			if err != nil {
				return nil, err
			}
			return json.Marshal(a)
		case kindLog:
			var req logCall
			if err := json.Unmarshal(body, &req); err != nil {
				return nil, fmt.Errorf("decode %s call: %w", kind, err)
			}
			b, ok := consoles.Log(node, req.Tail)
			return json.Marshal(logReply{Found: ok, Log: b})
		}
		return nil, run(ctx, c, kind, node, body)
	}
}

// run runs one handed-over call that answers nothing but its error.
func run(ctx context.Context, c *conductor.Conductor, kind, node string, body []byte) error {
	switch kind {
	case kindProvision:
		var req conductor.ProvisionRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("decode %s call: %w", kind, err)
		}
		return c.Provision(ctx, node, req)
	case kindPower:
		var req conductor.PowerRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("decode %s call: %w", kind, err)
		}
		return c.SetPower(ctx, node, req)
	case kindHeartbeat:
		var req ipa.Heartbeat
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("decode %s call: %w", kind, err)
		}
		return c.Agents().Heartbeat(ctx, node, req)
	case kindInspect:
		var req inspectionCall
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("decode %s call: %w", kind, err)
		}
		_, err := c.Agents().ContinueInspection(ctx, nil, node, req.Token, req.Inventory, req.PluginData)
		return err
	case kindAllocate:
		var req allocationCall
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("decode %s call: %w", kind, err)
		}
		return c.Allocations().CreateAllocation(ctx, &req.Allocation, req.Backfill)
	}
	return fmt.Errorf("unknown call kind %q", kind)
}

// ConsoleAccess asks the owner of node for a relay to its console.
func (h *Conductor) ConsoleAccess(ctx context.Context, n *model.Node) (ConsoleAccess, error) {
	b, owner, err := h.ask(ctx, n, kindConsole, struct{}{})
	if err != nil {
		return ConsoleAccess{}, err
	}
	var a ConsoleAccess
	if err := json.Unmarshal(b, &a); err != nil || a.URL == "" || a.Ticket == "" {
		return ConsoleAccess{}, fmt.Errorf("conductor %s answered no console relay: %q", owner, b)
	}
	return a, nil
}

// ConsoleLog asks the owner of node for the last tail bytes of its
// recorded console output (all when 0), and whether there is a recording.
func (h *Conductor) ConsoleLog(ctx context.Context, n *model.Node, tail int) ([]byte, bool, error) {
	b, owner, err := h.ask(ctx, n, kindLog, logCall{Tail: tail})
	if err != nil {
		return nil, false, err
	}
	var r logReply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, false, fmt.Errorf("conductor %s answered no console log: %w", owner, err)
	}
	return r.Log, r.Found, nil
}

// ask hands kind to n's owner and returns its reply and the owner.
func (h *Conductor) ask(ctx context.Context, n *model.Node, kind string, body any) ([]byte, string, error) {
	r, err := h.liveRing(ctx)
	if err != nil {
		return nil, "", err
	}
	owner := r.Owner(n.UUID, n.ConductorGroup)
	if owner == "" {
		return nil, "", conductor.NoConductor(n.Driver, n.ConductorGroup)
	}
	b, err := h.cfg.Queue.CallReply(ctx, owner, kind, n.UUID, body, h.cfg.Timeout)
	return b, owner, err
}

// Config configures an API process's Conductor.
type Config struct {
	Local      *conductor.Conductor // runs everything not handed over
	Queue      *workq.Queue
	Store      store.Store
	DeadAfter  time.Duration // the conductors' heartbeat timeout
	Partitions int           // hash ring points per conductor
	Timeout    time.Duration // how long a call may wait for its owner (30 s)
	Now        func() time.Time
}

// Conductor is the conductor an API process's API talks to: the API's
// Lifecycle and Agents, each method written here, handing the call to the
// node's owner or running it on the local conductor (Local), so that a
// verb the API gains does not compile here until it is routed one way or
// the other.
type Conductor struct {
	cfg Config
}

// New returns the API process's conductor.
func New(cfg Config) *Conductor {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Conductor{cfg: cfg}
}

// What runs in the API process, under the node's lock as in a single
// process: node changes, maintenance, validation, traits, the target RAID
// configuration, allocation updates and deletions, and agent lookups (the
// token is issued under the node lock and answered to the agent at once,
// which a hand-off could not return).

// Host is the API process's conductor name.
func (h *Conductor) Host() string { return h.cfg.Local.Host() }

// CreateNode stores a node here.
func (h *Conductor) CreateNode(ctx context.Context, n *model.Node, initialAvailable bool) error {
	return h.cfg.Local.Nodes().CreateNode(ctx, n, initialAvailable)
}

// UpdateNode changes a node here, under its lock.
func (h *Conductor) UpdateNode(ctx context.Context, ident string, apply func(n *model.Node) error) (*model.Node, error) {
	return h.cfg.Local.Nodes().UpdateNode(ctx, ident, apply)
}

// DeleteNode deletes a node here, under its lock.
func (h *Conductor) DeleteNode(ctx context.Context, ident string) error {
	return h.cfg.Local.Nodes().DeleteNode(ctx, ident)
}

// SetMaintenance sets or clears maintenance here, under the node's lock.
func (h *Conductor) SetMaintenance(ctx context.Context, ident string, on bool, reason string) error {
	return h.cfg.Local.Nodes().SetMaintenance(ctx, ident, on, reason)
}

// Validate validates a node's interfaces here (no hardware is touched).
func (h *Conductor) Validate(ctx context.Context, ident string) (map[string]conductor.ValidateResult, error) {
	return h.cfg.Local.Nodes().Validate(ctx, ident)
}

// SetTraits changes a node's traits here, under its lock.
func (h *Conductor) SetTraits(ctx context.Context, ident string, change func(cur []string) ([]string, error)) (*model.Node, error) {
	return h.cfg.Local.Nodes().SetTraits(ctx, ident, change)
}

// SetTargetRAIDConfig stores a node's target RAID configuration here.
func (h *Conductor) SetTargetRAIDConfig(ctx context.Context, ident string, cfg model.JSON) error {
	return h.cfg.Local.Nodes().SetTargetRAIDConfig(ctx, ident, cfg)
}

// UpdateAllocation changes an allocation's name and extra here.
func (h *Conductor) UpdateAllocation(ctx context.Context, ident string, apply func(a *model.Allocation) error) (*model.Allocation, error) {
	return h.cfg.Local.Allocations().UpdateAllocation(ctx, ident, apply)
}

// DeleteAllocation deletes an allocation here, under its node's lock.
func (h *Conductor) DeleteAllocation(ctx context.Context, ident string) error {
	return h.cfg.Local.Allocations().DeleteAllocation(ctx, ident)
}

// Lookup finds an agent's node and issues its token here.
func (h *Conductor) Lookup(ctx context.Context, macs []string, nodeUUID string) (*model.Node, string, error) {
	return h.cfg.Local.Agents().Lookup(ctx, macs, nodeUUID)
}

// What is handed to the node's owner: the verbs that start work on a node
// or resume it.

// Provision hands a provision verb to the node's owner.
func (h *Conductor) Provision(ctx context.Context, ident string, req conductor.ProvisionRequest) error {
	return h.call(ctx, ident, kindProvision, req)
}

// SetPower hands a power change to the node's owner.
func (h *Conductor) SetPower(ctx context.Context, ident string, req conductor.PowerRequest) error {
	return h.call(ctx, ident, kindPower, req)
}

// Heartbeat hands an agent's heartbeat to the node's owner.
func (h *Conductor) Heartbeat(ctx context.Context, ident string, hb ipa.Heartbeat) error {
	return h.call(ctx, ident, kindHeartbeat, hb)
}

// ContinueInspection hands an agent's inventory to the owner of the node
// it is about (found here by UUID or MACs, as the owner would): the
// inspection's work and transitions run there, like the heartbeat's.
func (h *Conductor) ContinueInspection(ctx context.Context, macs []string, nodeUUID, token string, inventory, pluginData map[string]any) (*model.Node, error) {
	n, err := h.cfg.Local.Agents().AgentNode(ctx, macs, nodeUUID)
	if err != nil {
		return nil, err
	}
	if err := h.callNode(ctx, n, kindInspect, inspectionCall{Token: token, Inventory: inventory, PluginData: pluginData}); err != nil {
		return nil, err
	}
	return n, nil
}

// CreateAllocation hands a new allocation to a conductor, so that its
// worker runs there and the allocation's conductor_affinity names it: for
// a backfill the node's owner, otherwise the owner of the allocation's
// UUID on the ring of the default group (or of the first group served, if
// no conductor serves the default one). The answer is the stored
// allocation.
func (h *Conductor) CreateAllocation(ctx context.Context, a *model.Allocation, backfill string) error {
	body := allocationCall{Allocation: *a, Backfill: backfill}
	var err error
	if backfill != "" {
		err = h.call(ctx, backfill, kindAllocate, body)
	} else {
		var owner string
		if owner, err = h.allocationOwner(ctx, a.UUID); err == nil {
			err = h.cfg.Queue.Call(ctx, owner, kindAllocate, a.UUID, body, h.cfg.Timeout)
		}
	}
	// A refused backfill is stored too (state "error"): show what was.
	if got, gerr := h.cfg.Store.Allocations().GetAllocation(ctx, a.UUID); gerr == nil {
		*a = *got
	}
	return err
}

// allocationOwner picks the conductor that processes a new allocation.
func (h *Conductor) allocationOwner(ctx context.Context, uuid string) (string, error) {
	conds, err := h.cfg.Store.Conductors().ListConductors(ctx)
	if err != nil {
		return "", err
	}
	live := ring.Live(conds, h.cfg.Now(), h.cfg.DeadAfter)
	if len(live) == 0 {
		return "", fault.New(fault.Unavailable, "No conductor is alive to process allocation %s.", uuid)
	}
	group := live[0].Group
	for _, m := range live {
		if m.Group == "" {
			group = ""
		}
	}
	return ring.New(live, h.cfg.Partitions, 1).Owner(uuid, group), nil
}

func (h *Conductor) call(ctx context.Context, ident, kind string, body any) error {
	n, err := h.cfg.Store.Nodes().GetNode(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return fault.NodeNotFound(ident)
	}
	if err != nil {
		return err
	}
	return h.callNode(ctx, n, kind, body)
}

// liveRing is the hash ring of the live conductors (ring.Live: this API
// process, which runs no driver, is never a member): the one ring by which
// calls are handed over and nodes' "conductor" is shown.
func (h *Conductor) liveRing(ctx context.Context) (*ring.Ring, error) {
	conds, err := h.cfg.Store.Conductors().ListConductors(ctx)
	if err != nil {
		return nil, err
	}
	return ring.New(ring.Live(conds, h.cfg.Now(), h.cfg.DeadAfter), h.cfg.Partitions, 1), nil
}

// NodeOwners returns, from one read of the ring, the conductor that owns
// a node ("" when no live conductor serves its group): the node's
// "conductor" as the API shows it (api.NodeOwners), the one its verbs
// are handed to.
func (h *Conductor) NodeOwners(ctx context.Context) (func(n *model.Node) string, error) {
	r, err := h.liveRing(ctx)
	if err != nil {
		return nil, err
	}
	return func(n *model.Node) string { return r.Owner(n.UUID, n.ConductorGroup) }, nil
}

// callNode hands kind to n's owner on the ring.
func (h *Conductor) callNode(ctx context.Context, n *model.Node, kind string, body any) error {
	_, _, err := h.ask(ctx, n, kind, body)
	return err
}
