package conductor

import (
	"context"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// consoleValidated checks the node's console interface (no-console answers
// Ironic's UnsupportedDriverExtension).
func (c *Conductor) consoleValidated(n *model.Node) error {
	drv, err := c.reg.For(n)
	if err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	v, _ := drv.Interface("console").(interface{ Validate(*model.Node) error })
	if v == nil {
		return unsupported(n, "console")
	}
	if err := v.Validate(n); err != nil {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	return nil
}

// Console reads the console state (GET .../states/console): whether it is
// enabled and, when it is, its connection information (Anvil's only
// console interfaces are fake, which has none to give, and no-console).
func (c *Conductor) Console(ctx context.Context, ident string) (bool, map[string]any, error) {
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return false, nil, err
	}
	if err := c.consoleValidated(n); err != nil {
		return false, nil, err
	}
	if !n.ConsoleEnabled {
		return false, nil, nil
	}
	return true, map[string]any{}, nil
}

// SetConsole enables or disables the node's console under its lock (PUT
// .../states/console); asking for the current state changes nothing.
func (c *Conductor) SetConsole(ctx context.Context, ident, user string, enabled bool) error {
	t, err := c.acquire(ctx, ident, user)
	if err != nil {
		return err
	}
	defer t.release()
	if err := c.consoleValidated(t.node); err != nil {
		return err
	}
	if t.node.ConsoleEnabled == enabled {
		return nil
	}
	t.node.ConsoleEnabled, t.node.LastError = enabled, ""
	return t.save(ctx)
}
