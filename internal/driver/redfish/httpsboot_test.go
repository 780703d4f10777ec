package redfish_test

import (
	"context"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
)

// TestHTTPSBootCycle: redfish-https publishes the same ISO as
// redfish-virtual-media but inserts nothing: it sets a one-time boot
// override UefiHttp (UEFI mode) with HttpBootUri = the ISO's URL;
// PrepareInstance withdraws the ISO and boots the disk persistently.
func TestHTTPSBootCycle(t *testing.T) {
	v := mockupVM(t, replayConfig{})
	isos := &fakeISOs{}
	d := fastDriver()
	b := d.NewHTTPSBoot(redfish.BootConfig{Publisher: isos})
	n := vmNode(v.node)
	task := vmTask(d, n)
	if err := b.Validate(task); err != nil {
		t.Fatal(err)
	}
	if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); err != nil {
		t.Fatal(err)
	}
	boot, _ := v.res(v.system)["Boot"].(map[string]any)
	want := "http://127.0.0.1:6385/boot/n/TOKEN-" + n.UUID + "/boot.iso"
	if boot["BootSourceOverrideTarget"] != "UefiHttp" || boot["HttpBootUri"] != want ||
		boot["BootSourceOverrideEnabled"] != "Once" || boot["BootSourceOverrideMode"] != "UEFI" {
		t.Errorf("boot override %v, want a one-time UEFI UefiHttp of %s", boot, want)
	}
	if got := v.requests("POST " + v.cd); len(got) != 0 {
		t.Errorf("virtual media touched: %v", got)
	}
	if got := v.requests("PATCH " + v.cd); len(got) != 0 {
		t.Errorf("virtual media touched: %v", got)
	}
	if isos.live() != 1 {
		t.Fatal("no ISO published")
	}
	if err := b.PrepareInstance(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if isos.live() != 0 {
		t.Error("the ISO was not withdrawn after the deploy")
	}
	if boot, _ := v.res(v.system)["Boot"].(map[string]any); boot["BootSourceOverrideTarget"] != "Hdd" || boot["BootSourceOverrideEnabled"] != "Continuous" {
		t.Errorf("boot override %v, want Hdd continuous", boot)
	}

	// An operator's deploy_iso is booted as it is, nothing published.
	n.DriverInfo["deploy_iso"] = "https://images.example.test/ipa.iso"
	if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); err != nil {
		t.Fatal(err)
	}
	if boot, _ := v.res(v.system)["Boot"].(map[string]any); boot["HttpBootUri"] != "https://images.example.test/ipa.iso" {
		t.Errorf("HttpBootUri %v, want the deploy_iso", boot["HttpBootUri"])
	}
	if isos.live() != 0 {
		t.Error("an ISO was published for a deploy_iso node")
	}
}

// TestHTTPSBootRefused: a BMC that refuses the override fails the boot
// with its error, and the ISO is withdrawn.
func TestHTTPSBootRefused(t *testing.T) {
	v := mockupVM(t, replayConfig{Gone: []string{"/redfish/v1/Systems/437XR1138R2"}})
	isos := &fakeISOs{}
	d := fastDriver()
	b := d.NewHTTPSBoot(redfish.BootConfig{Publisher: isos})
	err := b.PrepareRamdisk(context.Background(), vmTask(d, vmNode(v.node)), driver.RamdiskDeploy)
	if err == nil || !strings.Contains(err.Error(), "437XR1138R2") {
		t.Errorf("PrepareRamdisk on a BMC without the system: %v", err)
	}
	if isos.live() != 0 || isos.withdrawn == 0 {
		t.Errorf("ISO left published after the failure (live %d, withdrawn %d)", isos.live(), isos.withdrawn)
	}
}
