package fake

import (
	"context"
	"fmt"

	"github.com/anvil-metal/anvil/internal/driver"
)

var _ driver.IndicatorManager = (*Hardware)(nil)

// fakeIndicators are Ironic's FakeManagement indicators.
var fakeIndicators = []driver.Component{
	{Name: "chassis", Indicators: []driver.Indicator{{Name: "led-0", ReadOnly: true, States: []string{"off", "on"}}}},
	{Name: "system", Indicators: []driver.Indicator{{Name: "led", States: []string{"blinking", "off", "on"}}}},
}

// Indicators lists the fake indicators.
func (h *Hardware) Indicators(context.Context, *driver.Task) ([]driver.Component, error) {
	return fakeIndicators, nil
}

// IndicatorState answers "on" for every known indicator, as Ironic's fake.
func (h *Hardware) IndicatorState(_ context.Context, _ *driver.Task, component, indicator string) (string, error) {
	for _, c := range fakeIndicators {
		if c.Name != component {
			continue
		}
		for _, i := range c.Indicators {
			if i.Name == indicator {
				return "on", nil
			}
		}
		return "", &driver.ArgError{Msg: fmt.Sprintf("Invalid indicator %s specified.", indicator)}
	}
	return "", &driver.ArgError{Msg: fmt.Sprintf("Invalid component %s specified.", component)}
}

// SetIndicatorState is not offered by Ironic's fake management.
func (h *Hardware) SetIndicatorState(context.Context, *driver.Task, string, string, string) error {
	return driver.ErrUnsupported
}
