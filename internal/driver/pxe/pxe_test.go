package pxe_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/driver/pxe"
	"github.com/anvil-metal/anvil/internal/model"
)

// publisher is a function-field fake recording every call.
type publisher struct {
	calls   []string
	ramdisk pxe.Ramdisk
	macs    []string
	fail    error
}

func (p *publisher) PublishRamdisk(_ context.Context, node string, macs []string, r pxe.Ramdisk) error {
	p.calls = append(p.calls, "ramdisk "+node)
	p.ramdisk, p.macs = r, macs
	return p.fail
}

func (p *publisher) PublishLocalBoot(_ context.Context, node string, macs []string) error {
	p.calls = append(p.calls, "local "+node)
	p.macs = macs
	return p.fail
}

func (p *publisher) Withdraw(_ context.Context, node string) error {
	p.calls = append(p.calls, "withdraw "+node)
	return p.fail
}

// setup returns an ipxe boot interface on a registry whose fake management
// remembers boot devices, and a task for a node with two ports.
func setup(t *testing.T, pub pxe.Publisher) (*pxe.Boot, *fake.Hardware, *driver.Task) {
	t.Helper()
	return setupMode(t, pub, pxe.IPXE)
}

// setupMode is setup with the boot interface of mode.
func setupMode(t *testing.T, pub pxe.Publisher, mode string) (*pxe.Boot, *fake.Hardware, *driver.Task) {
	t.Helper()
	r := driver.NewRegistry()
	fk := fake.New()
	fk.Register(r)
	b := pxe.New(mode, pxe.Config{Publisher: pub, KernelParams: "console=ttyS0"})
	r.AddInterface("boot", mode, b)
	n := &model.Node{UUID: "n-1", Driver: fake.Name, DriverInfo: model.JSON{
		"deploy_kernel": "http://127.0.0.1/k", "deploy_ramdisk": "http://127.0.0.1/r",
		"rescue_kernel": "http://127.0.0.1/rk", "rescue_ramdisk": "http://127.0.0.1/rr"}}
	if err := r.Compose(n); err != nil {
		t.Fatal(err)
	}
	n.Interfaces.Set("boot", mode)
	drv, err := r.For(n)
	if err != nil {
		t.Fatal(err)
	}
	ports := []*model.Port{{Address: "52:54:00:AA:BB:01"}, {Address: "52:54:00:aa:bb:02"}}
	return b, fk, &driver.Task{Node: n, Ports: ports, Driver: drv}
}

func bootDevice(t *testing.T, fk *fake.Hardware, task *driver.Task) driver.BootDevice {
	t.Helper()
	d, err := fk.BootDevice(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		info    model.JSON
		nilPub  bool
		rescue  bool
		wantErr string
	}{
		{name: "complete", info: model.JSON{"deploy_kernel": "k", "deploy_ramdisk": "r"}},
		{name: "nothing", info: model.JSON{},
			wantErr: "Cannot validate PXE bootloader. Some parameters were missing in node's driver_info and configuration. Missing are: ['deploy_kernel', 'deploy_ramdisk']"},
		{name: "no ramdisk", info: model.JSON{"deploy_kernel": "k"},
			wantErr: "Cannot validate PXE bootloader. Some parameters were missing in node's driver_info and configuration. Missing are: ['deploy_ramdisk']"},
		{name: "rescue", info: model.JSON{"deploy_kernel": "k", "deploy_ramdisk": "r"}, rescue: true,
			wantErr: "Missing are: ['rescue_kernel', 'rescue_ramdisk']"},
		{name: "not configured", info: model.JSON{"deploy_kernel": "k", "deploy_ramdisk": "r"}, nilPub: true,
			wantErr: "network boot is not configured: start anvil serve with --http-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pub pxe.Publisher = &publisher{}
			if tt.nilPub {
				pub = nil
			}
			b := pxe.New(pxe.PXE, pxe.Config{Publisher: pub})
			n := &model.Node{DriverInfo: tt.info}
			err := b.Validate(&driver.Task{Node: n})
			if tt.rescue {
				err = b.ValidateRescue(n)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestPrepareRamdiskPublishesAndSetsPXE(t *testing.T) {
	pub := &publisher{}
	b, fk, task := setup(t, pub)
	if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); err != nil {
		t.Fatal(err)
	}
	want := pxe.Ramdisk{Kernel: pxe.Image{Source: "http://127.0.0.1/k"}, Ramdisk: pxe.Image{Source: "http://127.0.0.1/r"},
		KernelParams: "console=ttyS0"}
	if !reflect.DeepEqual(pub.ramdisk, want) || !reflect.DeepEqual(pub.calls, []string{"ramdisk n-1"}) {
		t.Errorf("published %+v (calls %v), want %+v", pub.ramdisk, pub.calls, want)
	}
	if !reflect.DeepEqual(pub.macs, []string{"52:54:00:aa:bb:01", "52:54:00:aa:bb:02"}) {
		t.Errorf("macs %v", pub.macs)
	}
	if d := bootDevice(t, fk, task); d != (driver.BootDevice{Device: "pxe"}) {
		t.Errorf("boot device %+v, want pxe once", d)
	}

	if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskRescue); err != nil {
		t.Fatal(err)
	}
	if pub.ramdisk.Kernel.Source != "http://127.0.0.1/rk" || pub.ramdisk.Ramdisk.Source != "http://127.0.0.1/rr" {
		t.Errorf("rescue published %+v", pub.ramdisk)
	}
}

func TestKernelParams(t *testing.T) {
	tests := []struct {
		name           string
		instance, info model.JSON
		want           string
	}{
		{name: "default", want: "console=ttyS0"},
		{name: "driver_info", info: model.JSON{"kernel_append_params": "quiet"}, want: "quiet"},
		{name: "instance_info wins", info: model.JSON{"kernel_append_params": "quiet"},
			instance: model.JSON{"kernel_append_params": "%default% debug"}, want: "console=ttyS0 debug"},
		{name: "empty instance_info still wins", info: model.JSON{"kernel_append_params": "quiet"},
			instance: model.JSON{"kernel_append_params": ""}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub := &publisher{}
			b, _, task := setup(t, pub)
			for k, v := range tt.info {
				task.Node.DriverInfo[k] = v
			}
			task.Node.InstanceInfo = tt.instance
			if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); err != nil {
				t.Fatal(err)
			}
			if pub.ramdisk.KernelParams != tt.want {
				t.Errorf("kernel params %q, want %q", pub.ramdisk.KernelParams, tt.want)
			}
		})
	}
}

func TestPrepareRamdiskRefusals(t *testing.T) {
	t.Run("no ports", func(t *testing.T) {
		pub := &publisher{}
		b, fk, task := setup(t, pub)
		task.Ports = nil
		if err := b.ValidatePorts(task); err == nil || err.Error() != "Node n-1 does not have any port associated with it" {
			t.Errorf("ValidatePorts: %v", err)
		}
		err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy)
		if err == nil || err.Error() != "Node n-1 does not have any port associated with it" {
			t.Fatalf("err = %v", err)
		}
		if len(pub.calls) != 0 || bootDevice(t, fk, task).Device != "disk" {
			t.Errorf("published %v or changed the boot device", pub.calls)
		}
	})
	t.Run("publisher fails", func(t *testing.T) {
		boom := errors.New("boom")
		b, fk, task := setup(t, &publisher{fail: boom})
		err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy)
		if !errors.Is(err, boom) || bootDevice(t, fk, task).Device != "disk" {
			t.Fatalf("err = %v, boot device changed to %v", err, bootDevice(t, fk, task))
		}
	})
	t.Run("not configured", func(t *testing.T) {
		b, _, task := setup(t, nil)
		if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); !errors.Is(err, pxe.ErrNotConfigured) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInstanceAndCleanUp(t *testing.T) {
	pub := &publisher{}
	b, fk, task := setup(t, pub)
	ctx := context.Background()
	if err := b.PrepareInstance(ctx, task); err != nil {
		t.Fatal(err)
	}
	if d := bootDevice(t, fk, task); d != (driver.BootDevice{Device: "disk", Persistent: true}) {
		t.Errorf("boot device %+v, want disk persistent", d)
	}
	if err := b.CleanUpInstance(ctx, task); err != nil {
		t.Fatal(err)
	}
	if err := b.CleanUpRamdisk(ctx, task); err != nil {
		t.Fatal(err)
	}
	want := []string{"local n-1", "withdraw n-1", "withdraw n-1"}
	if !reflect.DeepEqual(pub.calls, want) {
		t.Errorf("calls %v, want %v", pub.calls, want)
	}
	if b.Mode() != pxe.IPXE {
		t.Errorf("mode %s", b.Mode())
	}
}

// TestPrepareRamdiskBoot: a ramdisk deploy publishes the instance's own
// kernel and ramdisk (instance_info) with ramdisk_kernel_arguments, for
// the node's MACs, and network boot stays the boot device on every boot.
func TestPrepareRamdiskBoot(t *testing.T) {
	pub := &publisher{}
	b, fk, task := setup(t, pub)
	task.Node.InstanceInfo = model.JSON{"kernel": "http://127.0.0.1/ik", "ramdisk": "http://127.0.0.1/ir",
		"ramdisk_kernel_arguments": "root=/dev/ram0 quiet"}
	if err := b.PrepareRamdiskBoot(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	want := pxe.Ramdisk{Kernel: pxe.Image{Source: "http://127.0.0.1/ik"}, Ramdisk: pxe.Image{Source: "http://127.0.0.1/ir"},
		KernelParams: "root=/dev/ram0 quiet"}
	if !reflect.DeepEqual(pub.ramdisk, want) || !reflect.DeepEqual(pub.calls, []string{"ramdisk n-1"}) {
		t.Errorf("published %+v (calls %v), want %+v", pub.ramdisk, pub.calls, want)
	}
	if d := bootDevice(t, fk, task); d != (driver.BootDevice{Device: "pxe", Persistent: true}) {
		t.Errorf("boot device %+v, want pxe, persistent", d)
	}
	task.Node.InstanceInfo = model.JSON{"kernel": "http://127.0.0.1/ik"}
	pub.calls = nil
	if err := b.PrepareRamdiskBoot(context.Background(), task); err == nil || !strings.Contains(err.Error(), "Missing are: ['ramdisk']") || pub.calls != nil {
		t.Errorf("without instance_info ramdisk: err %v, calls %v", err, pub.calls)
	}
}

// TestHTTPBootModes: the UEFI HTTP boot interfaces publish the same ramdisk
// with the loader the firmware gets (iPXE for http-ipxe, GRUB for http),
// instance ramdisks too; the PXE interfaces none. Both set boot device pxe.
func TestHTTPBootModes(t *testing.T) {
	for mode, want := range map[string]string{pxe.IPXE: "", pxe.PXE: "", pxe.HTTPIPXE: pxe.LoaderIPXE, pxe.HTTP: pxe.LoaderGRUB} {
		t.Run(mode, func(t *testing.T) {
			pub := &publisher{}
			b, fk, task := setupMode(t, pub, mode)
			if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); err != nil {
				t.Fatal(err)
			}
			if pub.ramdisk.HTTPBoot != want || pub.ramdisk.Kernel.Source != "http://127.0.0.1/k" {
				t.Errorf("published %+v, want HTTPBoot %q", pub.ramdisk, want)
			}
			if d := bootDevice(t, fk, task); d.Device != "pxe" {
				t.Errorf("boot device %+v, want pxe", d)
			}
			task.Node.InstanceInfo = model.JSON{"kernel": "http://127.0.0.1/ik", "ramdisk": "http://127.0.0.1/ir"}
			if err := b.PrepareRamdiskBoot(context.Background(), task); err != nil {
				t.Fatal(err)
			}
			if pub.ramdisk.HTTPBoot != want || pub.ramdisk.Kernel.Source != "http://127.0.0.1/ik" {
				t.Errorf("instance ramdisk published %+v, want HTTPBoot %q", pub.ramdisk, want)
			}
		})
	}
}
