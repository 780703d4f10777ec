package ipmi

import (
	"context"
	"errors"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/anvil-metal/anvil/internal/driver"
)

var _ driver.NMIInjector = (*Driver)(nil)

// InjectNMI sends Chassis Control "pulse diagnostic interrupt" (what
// Ironic's `ipmitool power diag` sends). A BMC that refuses the command
// with a completion code is not asked again (go-ipmi's BMC server and
// others without an NMI line answer "parameter out of range"); any failure
// is Ironic's IPMIFailure text, the cause in the log.
func (d *Driver) InjectNMI(ctx context.Context, t *driver.Task) error {
	err := d.run(ctx, t, "power diag", func(ctx context.Context, c *client.Client) error {
		_, err := c.ChassisControl(ctx, chassis.ChassisControlDiagnosticInterrupt)
		var re *types.ResponseError
		if errors.As(err, &re) {
			return fmt.Errorf("the BMC refused the diagnostic interrupt (%w): %w", err, driver.ErrUnsupported)
		}
		return err
	})
	if err != nil {
		d.cfg.Log.Error("Inject NMI failed", "node", t.Node.UUID, "err", err)
		return &driver.CallError{Msg: "IPMI call failed: power diag.", Err: err}
	}
	return nil
}
