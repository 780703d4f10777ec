package bmo_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// liveISOPath is where the test's file server has the live ISO.
const liveISOPath = "/images/live-iso.iso"

// liveISO is a live ISO as a BareMetalHost names one (image.diskFormat
// live-iso): an ISO 9660 image with its own boot configuration, which
// hands no agent an API (the emulator runs no agent for it).
func liveISO(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "live.iso")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs, err := iso9660.Create(file.New(f, false), 0, 0, 2048, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Mkdir("/isolinux"); err != nil {
		t.Fatal(err)
	}
	w, err := fs.OpenFile("/isolinux/isolinux.cfg", os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("default live\nlabel live\n  kernel /vmlinuz\n  append initrd=/initrd boot=live\n")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Finalize(iso9660.FinalizeOptions{RockRidge: true, VolumeIdentifier: "LIVE"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// liveISOFlow is a host whose image is a live ISO: BMO provisions it with
// deploy_interface ramdisk and instance_info boot_iso; the machine boots
// it from its virtual CD and runs it, nothing is written to its disk.
func (h *hostRun) liveISOFlow(t *testing.T) {
	if h.phase(t, "register", needsRegister, h.register); h.p.nodeID == "" {
		return
	}
	h.phase(t, "inspect", "", h.inspect)
	h.phase(t, "provision", "", h.provisionLiveISO)
	h.phase(t, "deprovision", "", h.deprovision)
	h.phase(t, "delete", "", h.delete)
}

func (h *hostRun) provisionLiveISO(t *testing.T) {
	format := "live-iso"
	data := provisionData{Image: image{URL: h.env.files + liveISOPath, DiskFormat: &format}}
	r := h.reconcile(t, "provision", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		return h.p.Provision(ctx, data)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("provisioning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Active) || n.PowerState != "power on" || n.LastError != "" || n.DeployInterface != "ramdisk" {
		t.Errorf("after provisioning: %s, deploy_interface %q", h.nodeState(t), n.DeployInterface)
	}
	if !ironicHasSameImage(n, data.Image) || n.InstanceInfo["image_source"] != nil {
		t.Errorf("instance_info %v does not hold BMO's live ISO settings", n.InstanceInfo)
	}
	if st := h.m.Status(); st.Power != "On" || st.Running != bmcemu.RunningLiveISO {
		t.Errorf("machine power %s, running %q; want On, the live ISO", st.Power, st.Running)
	}
	if md := h.m.Media(); !md.Inserted || md.Image != data.Image.URL {
		t.Errorf("virtual media %+v, want the live ISO inserted", md)
	}
	if h.env.fetches(liveISOPath) == 0 {
		t.Errorf("the BMC never fetched the live ISO")
	}
	disk, err := os.ReadFile(h.m.Disk())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, make([]byte, len(disk))) {
		t.Errorf("a ramdisk deploy wrote to the machine's disk")
	}
}

// customDeployFlow is a host with spec.customDeploy: BMO provisions it
// with deploy_interface custom-agent and one deploy step, the method, at
// priority 80. The method here is the agent's in-band deploy step
// erase_devices_metadata: its mark on the disk shows the agent ran the
// step, and the host's image, which a direct deploy would write, is not
// written.
func (h *hostRun) customDeployFlow(t *testing.T) {
	if h.phase(t, "register", needsRegister, h.register); h.p.nodeID == "" {
		return
	}
	h.phase(t, "inspect", "", h.inspect)
	h.phase(t, "provision", "", h.provisionCustom)
	h.phase(t, "deprovision", "", h.deprovision)
	h.phase(t, "delete", "", h.delete)
}

func (h *hostRun) provisionCustom(t *testing.T) {
	raw := "raw"
	data := provisionData{Image: image{URL: h.env.imageURL(h.name), Checksum: h.env.imageSum(h.name),
		ChecksumType: h.checksumType, DiskFormat: &raw}, CustomDeploy: "erase_devices_metadata"}
	// Provision as far as available (BMO's provide and cleaning), then
	// mark the disk where erase_devices_metadata erases.
	r := h.reconcile(t, "provide", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		n, err := h.p.getNode(ctx)
		if err != nil {
			return transientError(err)
		}
		if n.ProvisionState == string(nodes.Available) {
			return operationComplete()
		}
		return h.p.Provision(ctx, data)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("provide failed: %s", r.ErrorMessage)
	}
	mark := bytes.Repeat([]byte("custom deploy mark "), 1000)
	f, err := os.OpenFile(h.m.Disk(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(mark, 4096)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	r = h.reconcile(t, "provision", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		return h.p.Provision(ctx, data)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("provisioning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Active) || n.PowerState != "power on" || n.LastError != "" || n.DeployInterface != "custom-agent" {
		t.Errorf("after provisioning: %s, deploy_interface %q", h.nodeState(t), n.DeployInterface)
	}
	disk, err := os.ReadFile(h.m.Disk())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, mark[:100]) {
		t.Errorf("the disk still holds the mark: the agent did not run erase_devices_metadata")
	}
	img := h.env.images["/images/"+h.name+".raw"]
	if bytes.Contains(disk, img[mib:mib+4096]) {
		t.Errorf("the custom deploy wrote the host's image")
	}
	if st := h.m.Status(); st.Power != "On" || st.Running != bmcemu.RunningNoImage {
		t.Errorf("machine power %s, running %q; want On, booted from its (empty) disk", st.Power, st.Running)
	}
	if md := h.m.Media(); md.Inserted {
		t.Errorf("virtual media still inserted after the deploy: %+v", md)
	}
}
