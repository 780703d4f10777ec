package direct

import (
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// TestDisablePowerOff: as in Ironic, a node with disable_power_off is never
// powered off by tear down, cleaning or inspection; cleaning reboots it.
// The fake power interface fails every action (fake_fail=power), so any
// power call shows as an error.
func TestDisablePowerOff(t *testing.T) {
	reg := driver.NewRegistry()
	fk := fake.New()
	fk.Register(reg)
	d := New(Config{})
	node := func(disable bool) *driver.Task {
		n := &model.Node{UUID: "9b5e2e4e-7d1b-4c4e-9d55-0b7e0f9a3c11", Driver: "fake-hardware", DisablePowerOff: disable,
			PowerState: fsm.PowerOn, DriverInfo: model.JSON{"fake_fail": "power"}}
		if err := reg.Compose(n); err != nil {
			t.Fatal(err)
		}
		drv, err := reg.For(n)
		if err != nil {
			t.Fatal(err)
		}
		return &driver.Task{Node: n, Driver: drv}
	}
	for _, tc := range []struct {
		name    string
		run     func(*driver.Task) error
		disable bool
		wantErr string // "" : no power action was attempted
	}{
		{"tear down powers off", func(tk *driver.Task) error { return d.TearDown(t.Context(), tk) }, false, "powering off"},
		{"tear down keeps power", func(tk *driver.Task) error { return d.TearDown(t.Context(), tk) }, true, ""},
		{"inspection keeps power", func(tk *driver.Task) error {
			return d.powerOff(t.Context(), tk, " after inspection", driver.Boot.CleanUpRamdisk)
		}, true, ""},
		{"cleaning powers off", func(tk *driver.Task) error { return d.FinishCleaning(t.Context(), tk) }, false, "powering off"},
		{"cleaning reboots instead", func(tk *driver.Task) error { return d.FinishCleaning(t.Context(), tk) }, true, "rebooting after cleaning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := node(tc.disable)
			err := tc.run(tk)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected power action: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && tk.Node.PowerState != fsm.PowerOn {
				t.Fatalf("power state %q", tk.Node.PowerState)
			}
		})
	}
}
