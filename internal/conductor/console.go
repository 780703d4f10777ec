package conductor

import (
	"context"
	"errors"
	"io"
	"slices"

	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// consoleValidated checks the node's console interface (no-console answers
// Ironic's UnsupportedDriverExtension).
func (svc *Management) consoleValidated(n *model.Node) error {
	c := svc.c
	drv, err := c.reg.For(n)
	if err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	v, _ := drv.Interface("console").(driver.Validator)
	if v == nil {
		return unsupported(n, "console")
	}
	if err := v.Validate(&driver.Task{Node: n, Driver: drv}); err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	return nil
}

// Console reads the console state (GET .../states/console): whether it is
// enabled and, when it is, its connection information (the console
// interface's ConsoleInfo; fake has none to give).
func (svc *Management) Console(ctx context.Context, ident string) (bool, map[string]any, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return false, nil, err
	}
	if err := svc.consoleValidated(n); err != nil {
		return false, nil, err
	}
	if !n.ConsoleEnabled {
		return false, nil, nil
	}
	if con := c.Consoles().consoleOf(n); con != nil {
		return true, con.ConsoleInfo(n), nil
	}
	return true, map[string]any{}, nil
}

// consoleOf is the node's console interface when it connects to a real
// console (nil for fake and no-console).
func (svc *Consoles) consoleOf(n *model.Node) driver.Console {
	c := svc.c
	drv, err := c.reg.For(n)
	if err != nil {
		return nil
	}
	con, _ := drv.Interface("console").(driver.Console)
	return con
}

// RecordedStates are the provision states whose console output is
// recorded even when the console is not enabled: the machine boots,
// cleans, deploys, is inspected, rescued or serviced.
var RecordedStates = []string{
	fsm.Cleaning, fsm.CleanWait, fsm.Deploying, fsm.DeployWait,
	fsm.Inspecting, fsm.InspectWait, fsm.Rescuing, fsm.RescueWait,
	fsm.Servicing, fsm.ServiceWait,
}

// ConsoleDecision says whether this conductor holds the node's console
// (internal/console's Resolver): it does when it owns the node on the hash
// ring, the node's console interface reaches a real console, and the
// console is enabled or the node is in a recorded state.
func (svc *Consoles) ConsoleDecision(ctx context.Context, uuid string) (console.Decision, error) {
	c := svc.c
	n, err := c.store.Nodes().GetNode(ctx, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return console.Decision{Reason: "the node was deleted"}, nil
	}
	if err != nil {
		return console.Decision{}, err
	}
	con := svc.consoleOf(n)
	if con == nil {
		return console.Decision{Reason: "the node's console interface has no console"}, nil
	}
	if !n.ConsoleEnabled && !slices.Contains(RecordedStates, n.ProvisionState) {
		return console.Decision{Reason: "the console is disabled (the node is " + n.ProvisionState + ")"}, nil
	}
	r, err := c.liveRing(ctx)
	if err != nil {
		return console.Decision{}, err
	}
	if !r.Owns(c.cfg.Host, n.UUID, n.ConductorGroup) {
		return console.Decision{Reason: "another conductor owns the node now"}, nil
	}
	switch {
	case con.Validate(&driver.Task{Node: n}) != nil:
		return console.Decision{Reason: "the node's console settings are invalid"}, nil
	case n.ConsoleEnabled:
		d := console.Decision{Hold: true, Attachable: true, Open: opener(con, n), Reason: "the console is enabled"}
		if l, ok := con.(interface{ ConsoleListen(*model.Node) string }); ok {
			d.Listen = l.ConsoleListen(n)
		}
		return d, nil
	case slices.Contains(RecordedStates, n.ProvisionState):
		return console.Decision{Hold: true, Open: opener(con, n), Reason: "recording: the node is " + n.ProvisionState}, nil
	}
	return console.Decision{Reason: "the console is disabled (the node is " + n.ProvisionState + ")"}, nil
}

// opener opens n's console as it was when the decision was made.
func opener(con driver.Console, n *model.Node) console.Opener {
	return func(ctx context.Context) (io.ReadWriteCloser, error) { return con.OpenConsole(ctx, n) }
}

// ConsoleCandidates lists the nodes this conductor owns whose console is
// enabled or whose state is recorded (internal/console's Resolver).
func (svc *Consoles) ConsoleCandidates(ctx context.Context) ([]string, error) {
	c := svc.c
	nodes, err := c.store.Nodes().ListNodes(ctx, store.NodeQuery{})
	if err != nil {
		return nil, err
	}
	r, err := c.liveRing(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range c.owned(r, nodes) {
		if n.ConsoleEnabled || slices.Contains(RecordedStates, n.ProvisionState) {
			out = append(out, n.UUID)
		}
	}
	return out, nil
}

// SetConsole enables or disables the node's console under its lock (PUT
// .../states/console); asking for the current state changes nothing.
func (svc *Management) SetConsole(ctx context.Context, ident, user string, enabled bool) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, user)
	if err != nil {
		return err
	}
	defer t.release()
	if err := svc.consoleValidated(t.node); err != nil {
		return err
	}
	if t.node.ConsoleEnabled == enabled {
		return nil
	}
	t.node.ConsoleEnabled, t.node.LastError = enabled, ""
	return t.save(ctx)
}
