package redfish_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
)

// The recording of an insert of an image sushy-tools cannot fetch (see
// testdata/sushy-tools/README.md): its InsertMedia answers HTTP 500.
const sushyBadImageRecording = "testdata/sushy-tools/exchanges-bad-image.json"

// isoServer serves a small blob at every path, as the boot endpoint serves
// ISOs (sushy-tools downloads the image on insert).
func isoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte{0}, 4096))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sushyVMBoot runs the redfish-virtual-media boot interface and the vmedia
// calls against b: the ISO inserted and booted once from Cd, then ejected
// and withdrawn when the instance boots its disk.
func sushyVMBoot(t *testing.T, b bmcTarget, isoBase string) {
	ctx := context.Background()
	t.Run("boot interface", func(t *testing.T) {
		isos := &fakeISOs{base: isoBase}
		vb := b.d.NewVirtualMediaBoot(redfish.BootConfig{Publisher: isos})
		task := vmTask(b.d, vmNode(b.node(b.password)))
		if err := vb.PrepareRamdisk(ctx, task, driver.RamdiskDeploy); err != nil {
			t.Fatal(err)
		}
		media, err := b.d.GetVirtualMedia(ctx, task)
		if err != nil || !media[0].Inserted || !strings.HasPrefix(media[0].Image, isoBase+"/boot/n/TOKEN-") {
			t.Fatalf("after PrepareRamdisk: %v, %v; want the ISO in the CD", media, err)
		}
		if bd, err := b.d.BootDevice(ctx, task); err != nil || bd.Device != "cdrom" {
			t.Errorf("boot device %+v, %v; want cdrom", bd, err)
		}
		if err := vb.PrepareInstance(ctx, task); err != nil {
			t.Fatal(err)
		}
		media, _ = b.d.GetVirtualMedia(ctx, task)
		if media[0].Inserted || isos.live() != 0 {
			t.Errorf("after PrepareInstance: %v, %d ISOs published; want ejected and withdrawn", media, isos.live())
		}
		if bd, err := b.d.BootDevice(ctx, task); err != nil || bd.Device != "disk" {
			t.Errorf("boot device %+v, %v; want disk", bd, err)
		}
	})
	t.Run("vmedia calls", func(t *testing.T) {
		task := &driver.Task{Node: b.node(b.password)}
		if err := b.d.AttachVirtualMedia(ctx, task, "cdrom", isoBase+"/attached.iso"); err != nil {
			t.Fatal(err)
		}
		media, err := b.d.GetVirtualMedia(ctx, task)
		if err != nil || len(media) != 2 || media[0].Image != isoBase+"/attached.iso" || media[1].Inserted {
			t.Fatalf("after attaching the cdrom: %v, %v", media, err)
		}
		if err := b.d.DetachVirtualMedia(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
		if media, _ := b.d.GetVirtualMedia(ctx, task); media[0].Inserted {
			t.Errorf("after detaching: %v", media)
		}
	})
}

// sushyBadImage: an image sushy-tools cannot fetch fails the insert (its
// HTTP 500, retried Config.Attempts times) with its message, and the ISO is
// withdrawn.
func sushyBadImage(t *testing.T, d *redfish.Driver, b bmcTarget, isoBase string) {
	isos := &fakeISOs{base: isoBase}
	vb := d.NewVirtualMediaBoot(redfish.BootConfig{Publisher: isos})
	err := vb.PrepareRamdisk(context.Background(), vmTask(d, vmNode(b.node(b.password))), driver.RamdiskDeploy)
	for _, w := range []string{"Virtual media mount failed for node", "HTTP 500", "Failed fetching image from URL http://127.0.0.1:"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("PrepareRamdisk = %v, want it to contain %q", err, w)
		}
	}
	if isos.live() != 0 || isos.withdrawn != 1 {
		t.Errorf("ISO not withdrawn (%d live, %d withdrawals)", isos.live(), isos.withdrawn)
	}
}

// TestSushyToolsReplayBadImage replays the insert of an image sushy-tools
// could not fetch.
func TestSushyToolsReplayBadImage(t *testing.T) {
	rp := newReplay(replayConfig{User: sushyUser, Password: sushyPassword, ContinuousOnly: true})
	rp.loadExchanges(t, sushyRecording)
	rp.loadExchanges(t, sushyBadImageRecording)
	srv := rp.start(t)
	b := bmcTarget{address: srv.URL, password: sushyPassword}
	d := fastDriver()
	sushyBadImage(t, d, b, "http://127.0.0.1:9")
	if n := len(vmTarget{rp: rp}.requests("POST /redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia")); n != 3 {
		t.Errorf("%d inserts, want 3 (Config.Attempts)", n)
	}
}
