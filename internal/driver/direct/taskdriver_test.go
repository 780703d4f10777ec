package direct_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/direct"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// recorder logs the calls the agent interfaces make on the node's other
// interfaces.
type recorder struct{ calls []string }

func (r *recorder) add(call string) { r.calls = append(r.calls, call) }

// recPower is a power interface that only records.
type recPower struct{ *recorder }

func (p recPower) Validate(*driver.Task) error { p.add("power.validate"); return nil }
func (p recPower) PowerState(context.Context, *driver.Task) (string, error) {
	p.add("power.state")
	return fsm.PowerOff, nil
}
func (p recPower) SetPowerState(_ context.Context, _ *driver.Task, target string) error {
	p.add("power.set " + target)
	return nil
}

// recBoot is a boot interface (with rescue, port and ramdisk boot checks)
// that only records.
type recBoot struct{ *recorder }

func (b recBoot) Validate(*driver.Task) error      { b.add("boot.validate"); return nil }
func (b recBoot) ValidateRescue(*model.Node) error { b.add("boot.validate_rescue"); return nil }
func (b recBoot) ValidatePorts(*driver.Task) error { b.add("boot.validate_ports"); return nil }
func (b recBoot) ValidateRamdiskBoot(*model.Node) error {
	b.add("boot.validate_ramdisk_boot")
	return nil
}
func (b recBoot) PrepareRamdisk(_ context.Context, _ *driver.Task, mode string) error {
	b.add("boot.prepare_ramdisk " + mode)
	return nil
}
func (b recBoot) CleanUpRamdisk(context.Context, *driver.Task) error {
	b.add("boot.clean_up_ramdisk")
	return nil
}
func (b recBoot) PrepareInstance(context.Context, *driver.Task) error {
	b.add("boot.prepare_instance")
	return nil
}
func (b recBoot) CleanUpInstance(context.Context, *driver.Task) error {
	b.add("boot.clean_up_instance")
	return nil
}
func (b recBoot) PrepareRamdiskBoot(context.Context, *driver.Task) error {
	b.add("boot.prepare_ramdisk_boot")
	return nil
}

// TestInterfacesUseTheTaskDriver: the agent's deploy, ramdisk,
// custom-agent, inspect and rescue interfaces reach the node's boot and
// power interfaces through the task's composed driver (Ironic's
// task.driver) and nothing else: the recording interfaces exist only on
// the task, and every call the operation needs shows on them. A task
// without a driver is refused with driver.ErrNoDriver, never a panic.
func TestInterfacesUseTheTaskDriver(t *testing.T) {
	d := direct.New(direct.Config{})
	image := model.JSON{"image_source": "http://127.0.0.1:1/image.raw",
		"image_checksum": strings.Repeat("a", 64)}
	ctx := context.Background()
	step := func(name string) driver.Step { return driver.Step{Interface: "deploy", Step: name} }
	for _, tc := range []struct {
		name string
		info model.JSON
		run  func(t *driver.Task) error
		want []string
	}{
		{"direct validate", image, func(t *driver.Task) error { return d.Validate(t) }, []string{"boot.validate"}},
		{"direct ports", image, func(t *driver.Task) error { return d.ValidatePorts(t) }, []string{"boot.validate_ports"}},
		{"direct deploy", image, func(t *driver.Task) error { _, err := d.Deploy(ctx, t); return err },
			[]string{"boot.prepare_ramdisk deploy", "power.state", "power.set " + fsm.PowerOn}},
		{"direct tear down", image, func(t *driver.Task) error { return d.TearDown(ctx, t) },
			[]string{"power.set " + fsm.PowerOff, "boot.clean_up_instance"}},
		{"direct finish cleaning", nil, func(t *driver.Task) error { return d.FinishCleaning(ctx, t) },
			[]string{"power.set " + fsm.PowerOff, "boot.clean_up_ramdisk"}},
		{"direct clean up ramdisk", nil, func(t *driver.Task) error { return d.CleanUpRamdisk(ctx, t, false) },
			[]string{"boot.clean_up_ramdisk"}},
		{"ramdisk validate", nil, func(t *driver.Task) error { return d.Ramdisk().Validate(t) },
			[]string{"boot.validate_ramdisk_boot"}},
		{"ramdisk deploy", nil, func(t *driver.Task) error { _, err := d.Ramdisk().Deploy(ctx, t); return err },
			[]string{"power.set " + fsm.PowerOff, "boot.prepare_ramdisk_boot", "power.set " + fsm.PowerOn}},
		{"custom-agent validate", nil, func(t *driver.Task) error { return d.CustomAgent().Validate(t) },
			[]string{"boot.validate"}},
		{"custom-agent closing steps", nil, func(t *driver.Task) error {
			for _, s := range []string{"tear_down_agent", "prepare_instance_boot", "boot_instance"} {
				if _, err := d.CustomAgent().ExecuteStep(ctx, t, driver.DeploySteps, step(s)); err != nil {
					return err
				}
			}
			return nil
		}, []string{"power.set " + fsm.PowerOff, "boot.prepare_instance", "power.set " + fsm.PowerOn}},
		{"inspect validate", nil, func(t *driver.Task) error { return d.Inspector().Validate(t) }, []string{"boot.validate"}},
		{"inspect", nil, func(t *driver.Task) error { _, err := d.Inspector().Inspect(ctx, t); return err },
			[]string{"boot.prepare_ramdisk deploy", "power.state", "power.set " + fsm.PowerOn}},
		{"rescue validate", nil, func(t *driver.Task) error { return d.Rescuer().Validate(t) },
			[]string{"boot.validate_rescue"}},
		{"rescue", model.JSON{"rescue_password": "pw"}, func(t *driver.Task) error { _, err := d.Rescuer().Rescue(ctx, t); return err },
			[]string{"boot.prepare_ramdisk rescue", "power.state", "power.set " + fsm.PowerOn}},
		{"unrescue", nil, func(t *driver.Task) error { return d.Rescuer().Unrescue(ctx, t) },
			[]string{"boot.prepare_instance", "power.set " + fsm.Rebooting}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := func() *model.Node {
				info := model.JSON{}
				for k, v := range tc.info {
					info[k] = v
				}
				return &model.Node{UUID: "6f1a0c1e-0f5c-4d0e-9d1a-2b3c4d5e6f70", Driver: "fake-hardware",
					InstanceInfo: info, DriverInternalInfo: model.JSON{}}
			}
			rec := &recorder{}
			task := &driver.Task{Node: node(), Driver: &driver.Driver{Power: recPower{rec}, Boot: recBoot{rec}}}
			if err := tc.run(task); err != nil {
				t.Fatalf("with the task's driver: %v", err)
			}
			if strings.Join(rec.calls, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("calls on the task's interfaces: %q, want %q", rec.calls, tc.want)
			}
			if err := tc.run(&driver.Task{Node: node()}); !errors.Is(err, driver.ErrNoDriver) {
				t.Errorf("without a driver on the task: %v, want %v", err, driver.ErrNoDriver)
			}
		})
	}
}
