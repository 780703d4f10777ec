package conductor

import (
	"context"
	"errors"

	"github.com/anvil-metal/anvil/internal/driver"
)

// indicatorManager is the node's validated management interface as an
// indicator manager (Ironic's UnsupportedDriverExtension without one).
func (svc *Management) indicatorManager(ctx context.Context, ident string) (driver.IndicatorManager, *driver.Task, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, nil, err
	}
	m, err := svc.management(n)
	if err != nil {
		return nil, nil, err
	}
	im, ok := m.(driver.IndicatorManager)
	if !ok {
		return nil, nil, unsupported(n, "get_supported_indicators")
	}
	return im, &driver.Task{Node: n}, nil
}

// Indicators lists the node's components and their indicators (1.63).
func (svc *Management) Indicators(ctx context.Context, ident string) ([]driver.Component, error) {
	im, t, err := svc.indicatorManager(ctx, ident)
	if err != nil {
		return nil, err
	}
	comps, err := im.Indicators(ctx, t)
	return comps, driverFault(err)
}

// IndicatorState reads one indicator's state.
func (svc *Management) IndicatorState(ctx context.Context, ident, component, indicator string) (string, error) {
	im, t, err := svc.indicatorManager(ctx, ident)
	if err != nil {
		return "", err
	}
	st, err := im.IndicatorState(ctx, t, component, indicator)
	return st, driverFault(err)
}

// SetIndicatorState sets one indicator's state under the node's lock.
func (svc *Management) SetIndicatorState(ctx context.Context, ident, user, component, indicator, state string) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, user)
	if err != nil {
		return err
	}
	defer t.release()
	m, err := svc.management(t.node)
	if err != nil {
		return err
	}
	im, ok := m.(driver.IndicatorManager)
	if ok {
		err = im.SetIndicatorState(ctx, t.driverTask(ctx), component, indicator, state)
	}
	if !ok || errors.Is(err, driver.ErrUnsupported) {
		return unsupported(t.node, "set_indicator_state")
	}
	return driverFault(err)
}
