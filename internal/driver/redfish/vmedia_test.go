package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// fakeISOs is an ISOPublisher that remembers what is published.
type fakeISOs struct {
	base      string // URL the ISOs are served under ("" = a loopback address nothing fetches)
	mu        sync.Mutex
	published map[string]redfish.ISORamdisk
	withdrawn int
	fail      error
}

func (f *fakeISOs) PublishISO(_ context.Context, node string, r redfish.ISORamdisk) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return "", f.fail
	}
	if f.published == nil {
		f.published = map[string]redfish.ISORamdisk{}
	}
	f.published[node] = r
	base := f.base
	if base == "" {
		base = "http://127.0.0.1:6385"
	}
	return base + "/boot/n/TOKEN-" + node + "/boot.iso", nil
}

func (f *fakeISOs) Withdraw(_ context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.published, node)
	f.withdrawn++
	return nil
}

func (f *fakeISOs) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.published)
}

// vmTarget is a replayed BMC with virtual media and a node on it.
type vmTarget struct {
	rp     *replay
	node   *model.Node
	system string // the system's path
	cd     string // the CD device the insert should use
}

func sushyVM(t *testing.T, cfg replayConfig) vmTarget {
	t.Helper()
	cfg.User, cfg.Password, cfg.ContinuousOnly = sushyUser, sushyPassword, true
	rp := newReplay(cfg)
	rp.loadExchanges(t, sushyRecording)
	srv := rp.start(t)
	sys := "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094"
	b := bmcTarget{address: srv.URL, password: sushyPassword}
	return vmTarget{rp: rp, node: b.node(sushyPassword), system: sys, cd: sys + "/VirtualMedia/Cd"}
}

func mockupVM(t *testing.T, cfg replayConfig) vmTarget {
	t.Helper()
	cfg.User, cfg.Password = sushyUser, testPassword
	rp := newReplay(cfg)
	rp.loadMockup(t, mockupDir)
	srv := rp.start(t)
	sys := "/redfish/v1/Systems/437XR1138R2"
	b := bmcTarget{address: srv.URL, systemID: sys, password: testPassword}
	return vmTarget{rp: rp, node: b.node(testPassword), system: sys, cd: sys + "/VirtualMedia/CD1"}
}

func (v vmTarget) res(p string) map[string]any {
	v.rp.mu.Lock()
	defer v.rp.mu.Unlock()
	out := map[string]any{}
	for k, val := range v.rp.res[p] {
		out[k] = val
	}
	return out
}

func (v vmTarget) requests(prefix string) []string {
	v.rp.mu.Lock()
	defer v.rp.mu.Unlock()
	var out []string
	for _, r := range v.rp.Requests {
		if strings.HasPrefix(r, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func vmNode(n *model.Node) *model.Node {
	n.DriverInfo["deploy_kernel"] = "http://127.0.0.1:8080/vmlinuz"
	n.DriverInfo["deploy_ramdisk"] = "http://127.0.0.1:8080/initramfs"
	n.DriverInfo["kernel_append_params"] = "console=ttyS0 %default%"
	return n
}

// vmTask is a task on n whose driver has d as its management interface:
// the boot interface sets the boot device through the task's driver.
func vmTask(d *redfish.Driver, n *model.Node) *driver.Task {
	return &driver.Task{Node: n, Driver: &driver.Driver{Management: d}}
}

// TestVirtualMediaBootCycle: PrepareRamdisk publishes the ISO, inserts it
// (InsertMedia on sushy-tools, PATCH Image on the DMTF mockup whose CD has no
// action, under the system or under the manager), sets a boot from Cd;
// PrepareInstance ejects, withdraws and boots the disk.
func TestVirtualMediaBootCycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T) vmTarget
		how  string // the request that inserts (the mockup's CD1 holds an image: PATCHed twice, eject and insert)
		n    int
	}{
		{"sushy-tools", func(t *testing.T) vmTarget { return sushyVM(t, replayConfig{}) }, "POST {cd}/Actions/VirtualMedia.InsertMedia", 1},
		{"DMTF mockup", func(t *testing.T) vmTarget { return mockupVM(t, replayConfig{}) }, "PATCH {cd}", 2},
		{"DMTF mockup, media under the manager", func(t *testing.T) vmTarget {
			return mockupVM(t, replayConfig{Edit: func(p string, m map[string]any) {
				switch p {
				case "/redfish/v1/Systems/437XR1138R2":
					delete(m, "VirtualMedia")
				case "/redfish/v1/Managers/BMC":
					m["VirtualMedia"] = map[string]any{"@odata.id": "/redfish/v1/Systems/437XR1138R2/VirtualMedia"}
				}
			}})
		}, "PATCH {cd}", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.make(t)
			isos := &fakeISOs{}
			d := fastDriver()
			b := d.NewVirtualMediaBoot(redfish.BootConfig{Publisher: isos, KernelParams: "ipa-debug=1"})
			n := vmNode(v.node)
			task := vmTask(d, n)
			if err := b.Validate(task); err != nil {
				t.Fatal(err)
			}
			if err := b.PrepareRamdisk(context.Background(), task, driver.RamdiskDeploy); err != nil {
				t.Fatal(err)
			}
			want := redfish.ISORamdisk{Kernel: "http://127.0.0.1:8080/vmlinuz", Ramdisk: "http://127.0.0.1:8080/initramfs", KernelParams: "console=ttyS0 ipa-debug=1"}
			if got := isos.published[n.UUID]; got != want {
				t.Errorf("published %+v, want %+v", got, want)
			}
			cd := v.res(v.cd)
			if cd["Inserted"] != true || cd["Image"] != "http://127.0.0.1:6385/boot/n/TOKEN-"+n.UUID+"/boot.iso" {
				t.Errorf("CD after PrepareRamdisk: Inserted=%v Image=%v", cd["Inserted"], cd["Image"])
			}
			if got := v.requests(strings.ReplaceAll(tc.how, "{cd}", v.cd)); len(got) != tc.n {
				t.Errorf("requests %v, want %d %s", v.requests("P"), tc.n, tc.how)
			}
			if boot, _ := v.res(v.system)["Boot"].(map[string]any); boot["BootSourceOverrideTarget"] != "Cd" {
				t.Errorf("boot override %v, want Cd", boot)
			}
			if err := b.PrepareInstance(context.Background(), task); err != nil {
				t.Fatal(err)
			}
			for _, dev := range []string{v.cd, strings.Replace(v.cd, "CD1", "CD2", 1)} {
				if cd := v.res(dev); cd != nil && cd["Inserted"] == true {
					t.Errorf("%s still inserted after PrepareInstance: %v", dev, cd["Image"])
				}
			}
			if isos.live() != 0 {
				t.Error("the ISO was not withdrawn after the deploy")
			}
			if boot, _ := v.res(v.system)["Boot"].(map[string]any); boot["BootSourceOverrideTarget"] != "Hdd" {
				t.Errorf("boot override %v, want Hdd", boot)
			}
		})
	}
}

// TestVirtualMediaBadBMC: a BMC that refuses the image, one that never shows
// it inserted and one answering 500 fail with a clear error, and the ISO is
// withdrawn every time.
func TestVirtualMediaBadBMC(t *testing.T) {
	insert := "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"
	for _, tc := range []struct {
		name    string
		cfg     replayConfig
		answer  *fact
		want    []string
		inserts int
	}{
		{name: "insert refused", answer: &fact{status: 400, body: []byte(`{"error":{"code":"Base.1.0.GeneralError","message":"Failed fetching image from URL"}}`)},
			want: []string{"Virtual media mount failed for node", "HTTP 400", "Failed fetching image from URL"}, inserts: 1},
		{name: "never inserted", cfg: replayConfig{InsertIgnored: true},
			want: []string{"did not report image http://127.0.0.1:6385/boot/n/", "Inserted=false", "can the BMC fetch that URL?"}, inserts: 1},
		{name: "HTTP 500", answer: &fact{status: 500, body: []byte(`{"error":{"message":"internal error"}}`)},
			want: []string{"Virtual media mount failed for node", "HTTP 500", "internal error"}, inserts: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := sushyVM(t, tc.cfg)
			if tc.answer != nil {
				v.rp.facts["POST "+insert] = *tc.answer
			}
			isos := &fakeISOs{}
			d := fastDriver()
			b := d.NewVirtualMediaBoot(redfish.BootConfig{Publisher: isos})
			err := b.PrepareRamdisk(context.Background(), vmTask(d, vmNode(v.node)), driver.RamdiskDeploy)
			if err == nil {
				t.Fatal("PrepareRamdisk succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), sushyPassword) {
				t.Errorf("error shows the password: %v", err)
			}
			if got := len(v.requests("POST " + insert)); got != tc.inserts {
				t.Errorf("%d inserts, want %d (Config.Attempts bounds the retries)", got, tc.inserts)
			}
			if isos.live() != 0 || isos.withdrawn != 1 {
				t.Errorf("ISO not withdrawn after the failure (%d live, %d withdrawals)", isos.live(), isos.withdrawn)
			}
			if boot, _ := v.res(v.system)["Boot"].(map[string]any); boot["BootSourceOverrideTarget"] == "Cd" {
				t.Error("the boot device was set to Cd without media")
			}
		})
	}
}

func TestVirtualMediaBootValidation(t *testing.T) {
	v := sushyVM(t, replayConfig{})
	n := v.node
	b := fastDriver().NewVirtualMediaBoot(redfish.BootConfig{Publisher: &fakeISOs{}})
	err := b.Validate(&driver.Task{Node: n})
	if err == nil || err.Error() != "Error validating Redfish virtual media. Some parameters were missing in node's driver_info. Missing are: ['deploy_kernel', 'deploy_ramdisk']" {
		t.Errorf("no deploy ramdisk: %v", err)
	}
	if err := b.ValidateRescue(vmNode(n)); err == nil || !strings.Contains(err.Error(), "['rescue_kernel', 'rescue_ramdisk']") {
		t.Errorf("no rescue ramdisk: %v", err)
	}
	n.DriverInfo["deploy_iso"] = "nfs://server/x.iso"
	if err := b.Validate(&driver.Task{Node: n}); err == nil || !strings.Contains(err.Error(), "http(s) URL") {
		t.Errorf("nfs deploy_iso: %v", err)
	}

	// deploy_iso is inserted as given, without the boot endpoint.
	n.DriverInfo["deploy_iso"] = "http://127.0.0.1:8080/agent.iso"
	dn := fastDriver()
	nob := dn.NewVirtualMediaBoot(redfish.BootConfig{})
	if err := nob.PrepareRamdisk(context.Background(), vmTask(dn, n), driver.RamdiskDeploy); err != nil {
		t.Fatal(err)
	}
	if cd := v.res(v.cd); cd["Image"] != "http://127.0.0.1:8080/agent.iso" {
		t.Errorf("CD image %v, want deploy_iso", cd["Image"])
	}
	delete(n.DriverInfo, "deploy_iso")
	n.DriverInfo["redfish_deploy_iso"] = "http://127.0.0.1:8080/deprecated.iso" // Ironic's deprecated name
	if err := nob.PrepareRamdisk(context.Background(), vmTask(dn, n), driver.RamdiskDeploy); err != nil {
		t.Fatal(err)
	}
	if cd := v.res(v.cd); cd["Image"] != "http://127.0.0.1:8080/deprecated.iso" {
		t.Errorf("CD image %v, want redfish_deploy_iso", cd["Image"])
	}
	delete(n.DriverInfo, "redfish_deploy_iso")
	if err := nob.Validate(&driver.Task{Node: vmNode(n)}); !errors.Is(err, redfish.ErrBootNotConfigured) {
		t.Errorf("kernel and ramdisk without a boot endpoint: %v", err)
	}
}

// TestVirtualMediaAPI is the management side of Ironic's vmedia API:
// list, attach and detach by device type.
func TestVirtualMediaAPI(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T) vmTarget
		want []driver.VirtualMedia // before
	}{
		{"sushy-tools", func(t *testing.T) vmTarget { return sushyVM(t, replayConfig{}) }, []driver.VirtualMedia{
			{MediaTypes: []string{"CD", "DVD"}}, {MediaTypes: []string{"Floppy", "USBStick"}}}},
		{"DMTF mockup", func(t *testing.T) vmTarget { return mockupVM(t, replayConfig{}) }, []driver.VirtualMedia{
			{MediaTypes: []string{"Floppy", "USBStick"}, Inserted: true, Image: "https://www.dmtf.org/freeImages/Sardine.img"},
			{MediaTypes: []string{"CD", "DVD"}, Inserted: true, Image: "redfish.dmtf.org/freeImages/freeOS.1.1.iso"},
			{MediaTypes: []string{"CD", "DVD"}, Inserted: true, Image: "/redfish/v1/UpdateService/LocalImageStore/49"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.make(t)
			d := fastDriver()
			task := &driver.Task{Node: v.node}
			ctx := context.Background()
			got, err := d.GetVirtualMedia(ctx, task)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("GetVirtualMedia = %v, %v; want %v", got, err, tc.want)
			}
			if err := d.AttachVirtualMedia(ctx, task, "cdrom", "http://127.0.0.1:8080/x.iso"); err != nil {
				t.Fatal(err)
			}
			if err := d.AttachVirtualMedia(ctx, task, "floppy", "http://127.0.0.1:8080/f.img"); err != nil {
				t.Fatal(err)
			}
			inserted := func() map[string]string { // media type → image
				got, _ := d.GetVirtualMedia(ctx, task)
				out := map[string]string{}
				for _, m := range got {
					if m.Inserted {
						out[m.MediaTypes[0]] += m.Image
					}
				}
				return out
			}
			if got := fmt.Sprint(inserted()); got != "map[CD:http://127.0.0.1:8080/x.iso Floppy:http://127.0.0.1:8080/f.img]" {
				t.Errorf("inserted after attach: %v (one CD, the floppy)", got)
			}
			if err := d.DetachVirtualMedia(ctx, task, []string{"cdrom"}); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(inserted()); got != "map[Floppy:http://127.0.0.1:8080/f.img]" {
				t.Errorf("after detaching cdrom: %v, want only the floppy inserted", got)
			}
			if err := d.DetachVirtualMedia(ctx, task, nil); err != nil {
				t.Fatal(err)
			}
			got, _ = d.GetVirtualMedia(ctx, task)
			for _, m := range got {
				if m.Inserted {
					t.Errorf("after detaching all: %v", got)
				}
			}
			if err := d.AttachVirtualMedia(ctx, task, "tape", "http://x/y"); err == nil || !strings.Contains(err.Error(), "Invalid device type tape") {
				t.Errorf("tape: %v", err)
			}
		})
	}
}

// TestRamdiskBoot: a ramdisk deploy inserts instance_info boot_iso as it
// is, or an ISO published of the instance's kernel and ramdisk with
// ramdisk_kernel_arguments, and boots the CD continuously.
func TestRamdiskBoot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		info      model.JSON
		wantImage string
		want      *redfish.ISORamdisk
	}{
		{name: "boot_iso", info: model.JSON{"boot_iso": "http://127.0.0.1:8080/live.iso"}, wantImage: "http://127.0.0.1:8080/live.iso"},
		{name: "kernel and ramdisk", info: model.JSON{"kernel": "http://127.0.0.1:8080/k", "ramdisk": "http://127.0.0.1:8080/r",
			"ramdisk_kernel_arguments": "quiet"}, wantImage: "http://127.0.0.1:6385/boot/n/TOKEN-{node}/boot.iso",
			want: &redfish.ISORamdisk{Kernel: "http://127.0.0.1:8080/k", Ramdisk: "http://127.0.0.1:8080/r", KernelParams: "quiet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := sushyVM(t, replayConfig{})
			isos := &fakeISOs{}
			d := fastDriver()
			b := d.NewVirtualMediaBoot(redfish.BootConfig{Publisher: isos})
			n := vmNode(v.node) // the agent's ramdisk, for cleaning
			n.InstanceInfo = tc.info
			n.Interfaces.Set("deploy", driver.DeployRamdisk)
			if err := b.Validate(&driver.Task{Node: n}); err != nil {
				t.Fatal(err)
			}
			if err := b.PrepareRamdiskBoot(context.Background(), vmTask(d, n)); err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && isos.published[n.UUID] != *tc.want || tc.want == nil && isos.live() != 0 {
				t.Errorf("published %+v, want %+v", isos.published, tc.want)
			}
			cd := v.res(v.cd)
			if want := strings.ReplaceAll(tc.wantImage, "{node}", n.UUID); cd["Inserted"] != true || cd["Image"] != want {
				t.Errorf("CD: Inserted=%v Image=%v, want %s", cd["Inserted"], cd["Image"], want)
			}
			if boot, _ := v.res(v.system)["Boot"].(map[string]any); boot["BootSourceOverrideTarget"] != "Cd" || boot["BootSourceOverrideEnabled"] != "Continuous" {
				t.Errorf("boot override %v, want Cd, continuous", boot)
			}
		})
	}
}
