package agent_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/anvil-metal/anvil/internal/disk"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// sparseDisk makes a sparse file disk of size bytes.
func sparseDisk(t *testing.T, name string, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err == nil {
		err = f.Truncate(size)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readAt(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestDeployDisksHintsConfigDrivePartitionQcow2 runs a real agent with
// three file disks, each with its own attributes: root device hints with
// an unknown key and hints matching nothing fail the deploy with Ironic's
// messages and write nothing; a truncated download fails; a whole-disk
// image lands on the disk the hints name, with a config drive (given as a
// JSON object to the deploy) readable as config-2 at the end of that disk;
// then a qcow2 partition image lands, converted, in a root partition of
// root_gb on the disk instance_info's hints name, with ephemeral (ext4),
// swap and config drive partitions.
func TestDeployDisksHintsConfigDrivePartitionQcow2(t *testing.T) {
	testbin.Need(t, "qemu-img", "qemu-utils")
	api := startServer(t)
	const mac = "52:54:00:aa:bb:07"
	node := createNode(t, api, "disks-node", mac)
	disks := []string{sparseDisk(t, "a.img", 32<<20), sparseDisk(t, "b.img", 128<<20), sparseDisk(t, "c.img", 2200<<20)}
	start(t, "anvil agent", "agent", "--api-url", api, "--mac", mac, "--listen", "127.0.0.1:0",
		"--disk", disks[0]+",model=Small HDD,serial=S-A,rotational=true",
		"--disk", disks[1]+",model=Fast SSD,serial=S-B,vendor=ACME",
		"--disk", disks[2]+",model=Big SSD,serial=S-C,wwn=0x5000c500cafe",
		"--heartbeat-interval", "100ms")

	// A whole-disk image: a GPT with one partition, random bytes in it.
	wholePath := filepath.Join(t.TempDir(), "whole.img")
	if err := os.WriteFile(wholePath, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := disk.WriteTable(wholePath, disk.LabelGPT, []disk.Partition{{Role: disk.RoleRoot, Number: 1, Start: 1 << 20, Size: 6 << 20}}); err != nil {
		t.Fatal(err)
	}
	whole, _ := os.ReadFile(wholePath)
	_, _ = rand.Read(whole[1<<20 : 7<<20])
	// A partition image as qcow2.
	rootRaw := make([]byte, 5<<20)
	_, _ = rand.Read(rootRaw)
	rawPath, qcowPath := filepath.Join(t.TempDir(), "root.raw"), filepath.Join(t.TempDir(), "root.qcow2")
	_ = os.WriteFile(rawPath, rootRaw, 0o600)
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, qcowPath).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v %s", err, out)
	}
	qcow, _ := os.ReadFile(qcowPath)
	imgs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/whole.img":
			_, _ = w.Write(whole)
		case "/root.qcow2":
			_, _ = w.Write(qcow)
		case "/truncated.img":
			w.Header().Set("Content-Length", strconv.Itoa(len(whole)))
			_, _ = w.Write(whole[:len(whole)/2])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(imgs.Close)

	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")

	patch := func(ops ...map[string]any) {
		t.Helper()
		mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, ops)
	}
	add := func(path string, v any) map[string]any { return map[string]any{"op": "add", "path": path, "value": v} }
	untouched := func(what string, idx ...int) {
		t.Helper()
		for _, i := range idx {
			if !bytes.Equal(readAt(t, disks[i], 0, 1<<20), make([]byte, 1<<20)) {
				t.Fatalf("%s: disk %d was written", what, i)
			}
		}
	}
	setImage(t, api, node, imgs.URL+"/whole.img", sha(whole))

	// Bad hints: an unknown key is refused before anything boots or is
	// written (a 400 on the request, or the deploy failing with the
	// message); hints matching no disk fail the deploy with IPA's message.
	patch(add("/properties/root_device", map[string]any{"serial": "S-B", "colour": "red"}))
	r := call(t, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "active"})
	msg := string(r.Body)
	if r.Status == http.StatusAccepted {
		n := waitState(t, api, node, "deploy failed")
		msg, _ = n["last_error"].(string)
	} else if r.Status != http.StatusBadRequest {
		t.Fatalf("deploy with an unknown hint: HTTP %d %s", r.Status, r.Body)
	}
	contains(t, "unknown hint key", msg, `Failed to validate the root device hints`)
	contains(t, "unknown hint key", msg, `colour`)
	contains(t, "unknown hint key", msg, `are invalid. Valid hints are:`)
	untouched("unknown hint", 1, 2)

	patch(add("/properties/root_device", map[string]any{"serial": "S-Z"}))
	provision(t, api, node, "active")
	n := waitState(t, api, node, "deploy failed")
	le, _ := n["last_error"].(string)
	contains(t, "hints matching nothing: last_error", le, "No suitable device was found for deployment using these hints {'serial': 'S-Z'}")
	untouched("hints matching nothing", 1, 2)

	patch(add("/properties/root_device", map[string]any{"serial": "S-B"}))
	setImage(t, api, node, imgs.URL+"/truncated.img", sha(whole))
	provision(t, api, node, "active")
	n = waitState(t, api, node, "deploy failed")
	le, _ = n["last_error"].(string)
	if !strings.Contains(le, "truncated") && !strings.Contains(le, "unexpected EOF") {
		t.Fatalf("truncated image: last_error %q", le)
	}

	// Whole-disk image with a config drive on the disk with serial S-B.
	setImage(t, api, node, imgs.URL+"/whole.img", sha(whole))
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "active",
		"configdrive": map[string]any{"meta_data": map[string]any{"hostname": "disks-node.example"}, "user_data": "#cloud-config\n"}})
	waitState(t, api, node, "active")
	if !bytes.Equal(readAt(t, disks[1], 0, len(whole))[1<<20:], whole[1<<20:]) {
		t.Fatal("disk S-B does not hold the image")
	}
	untouched("whole-disk deploy on S-B", 2)
	f, _ := os.Open(disks[1])
	label, parts, err := disk.ReadTable(f)
	f.Close()
	if err != nil || label != disk.LabelGPT || len(parts) != 2 || parts[1].Start+parts[1].Size < 127<<20 {
		t.Fatalf("disk S-B's table after the deploy: %s %+v %v", label, parts, err)
	}
	meta := readConfigDrive(t, disks[1], parts[1].Start, parts[1].Size)
	if meta["uuid"] != node || meta["name"] != "disks-node" || meta["hostname"] != "disks-node.example" {
		t.Fatalf("config drive meta_data.json = %v", meta)
	}

	// Tear down, then a qcow2 partition image on the disk instance_info's
	// hints name (they take precedence over properties').
	provision(t, api, node, "deleted")
	waitState(t, api, node, "available")
	patch(add("/instance_info/image_source", imgs.URL+"/root.qcow2"), add("/instance_info/image_checksum", sha(qcow)),
		add("/instance_info/image_disk_format", "qcow2"), add("/instance_info/kernel", imgs.URL+"/k"),
		add("/instance_info/ramdisk", imgs.URL+"/r"), add("/instance_info/root_gb", 1), add("/instance_info/swap_mb", 8), add("/instance_info/ephemeral_gb", 1),
		add("/instance_info/capabilities", map[string]any{"boot_option": "netboot"}),
		add("/instance_info/root_device", map[string]any{"wwn": "0x5000C500CAFE", "size": ">= 1"}))
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "active",
		"configdrive": map[string]any{"meta_data": map[string]any{"hostname": "p"}}})
	waitState(t, api, node, "active")
	f, _ = os.Open(disks[2])
	label, parts, err = disk.ReadTable(f)
	f.Close()
	if err != nil || label != disk.LabelGPT || len(parts) != 4 {
		t.Fatalf("disk S-C's table: %s %+v %v", label, parts, err)
	}
	// ephemeral 1 GiB, swap 8 MiB, config drive 1 MiB, root 1 GiB (last),
	// from 1 MiB.
	for i, want := range [][2]int64{{1, 1024}, {1025, 8}, {1033, 1}, {1034, 1024}} {
		if parts[i].Start != want[0]<<20 || parts[i].Size != want[1]<<20 {
			t.Fatalf("partition %d = %+v, want start %d MiB, %d MiB", i+1, parts[i], want[0], want[1])
		}
	}
	if !bytes.Equal(readAt(t, disks[2], 1034<<20, len(rootRaw)), rootRaw) {
		t.Fatal("the root partition does not hold the qcow2 image's content")
	}
	if string(readAt(t, disks[2], 1025<<20+4086, 10)) != "SWAPSPACE2" {
		t.Fatal("no swap signature on the swap partition")
	}
	if meta := readConfigDrive(t, disks[2], 1033<<20, 1<<20); meta["hostname"] != "p" {
		t.Fatalf("partition image config drive meta_data = %v", meta)
	}
	if dumpe2fs, err := exec.LookPath("dumpe2fs"); err == nil {
		out, err := exec.Command(dumpe2fs, "-h", disks[2]+"?offset="+strconv.Itoa(1<<20)).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("Filesystem volume name:   ephemeral0")) {
			t.Fatalf("no ext4 ephemeral0 filesystem on the ephemeral partition: %v %s", err, out)
		}
	}
}

// readConfigDrive parses the ISO 9660 at off of path (go-diskfs), checks
// its config-2 label and returns openstack/latest/meta_data.json. The
// partition is copied out first: go-diskfs reads directories at offsets
// from the start of the file, not of the filesystem.
func readConfigDrive(t *testing.T, path string, off, size int64) map[string]any {
	t.Helper()
	part := filepath.Join(t.TempDir(), "configdrive.iso")
	if err := os.WriteFile(part, readAt(t, path, off, int(size)), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(part)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs, err := iso9660.Read(file.New(f, true), size, 0, 2048)
	if err != nil {
		t.Fatalf("config drive is not ISO 9660: %v", err)
	}
	if got := strings.TrimSpace(fs.Label()); got != "config-2" {
		t.Fatalf("config drive label %q", got)
	}
	// What cloud-init runs to find it (util-linux, independent of go-diskfs).
	if blkid, err := exec.LookPath("blkid"); err == nil {
		out, err := exec.Command(blkid, "-p", "-o", "export", part).Output()
		if err != nil || !strings.Contains(string(out), "TYPE=iso9660") || !strings.Contains(string(out), "LABEL=config-2") {
			t.Fatalf("blkid of the config drive partition: %v %s", err, out)
		}
	}
	b, err := fs.ReadFile("openstack/latest/meta_data.json")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	return meta
}
