// Package realipa_test runs the real Ironic Python Agent (IPA) against
// `anvil serve` and records what crosses the wire both ways. It is opt-in:
// IPA boots in a qemu VM (TCG; ANVIL_REAL_IPA_ACCEL=kvm where KVM works) from a
// root filesystem built by scripts/real-ipa/build-rootfs.sh, which is too
// heavy for default CI.
//
//	sudo scripts/real-ipa/build-rootfs.sh /path/to/ironic-python-agent.git
//	ANVIL_REAL_IPA=1 go test ./test/realipa -v -timeout 30m
//
// Variables: ANVIL_REAL_IPA=1 enables it; ANVIL_REAL_IPA_DIR is where
// rootfs.img, vmlinuz and initrd.img are (default /var/tmp/anvil-ipa);
// ANVIL_REAL_IPA_RECORD, if set, is a directory the recording
// (exchanges.json) and the VM consoles are written to — the source of
// test/agent/testdata/ipa-real.
//
// IPA never runs on the host: its cleaning and deploy commands erase and
// write disks. The VM's disks are files: /dev/vda its root filesystem
// (snapshot=on: the image file is never written, and the node's
// skip_block_devices names it) and /dev/vdb the deploy target, a sparse
// file the node's root device hint names. The network is qemu's user mode
// with restrict=on: the guest reaches the API (10.0.2.100:6385) and the
// image server (10.0.2.101:80) through guestfwd to loopback recorders and
// servers, and the conductor reaches IPA's command API through a hostfwd on
// 127.0.0.1, behind a recorder IPA advertises as its callback_url.
//
// The node is fake-hardware (power, boot) with the direct deploy, agent
// inspection and agent rescue, so the test plays the power button: before
// each phase it boots a fresh VM (a fresh IPA, which looks up for a new
// token, as after Ironic's reboot), and stops it after. Phases: inspection
// (IPA posts its inventory to /v1/continue_inspection), provide (automated
// cleaning: erase_devices_metadata on /dev/vdb), deploy (a raw image from
// the loopback server written to /dev/vdb; the disk file is checked byte
// for byte) and rescue (rescue.finalize_rescue).
package realipa_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) {
	if os.Getenv("ANVIL_REAL_IPA") != "1" {
		fmt.Println("realipa: skipped (set ANVIL_REAL_IPA=1 and build the VM with scripts/real-ipa/build-rootfs.sh)")
		os.Exit(0)
	}
	os.Exit(testbin.Main(m, &anvilBin, nil))
}

const (
	vmMAC     = "52:54:00:1a:9a:01"
	mib       = 1 << 20
	phaseWait = 6 * time.Minute // one VM boot plus IPA's work, under TCG
)

// vm is one boot of the IPA VM.
type vm struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// vmConfig is what every boot shares.
type vmConfig struct {
	dir      string // rootfs.img, vmlinuz, initrd.img
	out      string // consoles
	target   string // /dev/vdb's file
	apiPort  int    // the IPA→anvil recorder
	imgPort  int    // the image server
	hostfwd  int    // IPA's command API (guest port 9999)
	callback int    // the anvil→IPA recorder, IPA's advertised port
	busybox  string
}

func (c vmConfig) boot(t *testing.T, name string, params ...string) *vm {
	t.Helper()
	accel := os.Getenv("ANVIL_REAL_IPA_ACCEL") // kvm hangs under nested virtualisation here
	if accel == "" {
		accel = "tcg"
	}
	nic := fmt.Sprintf("user,model=virtio-net-pci,mac=%s,restrict=on,"+
		"guestfwd=tcp:10.0.2.100:6385-cmd:%s nc 127.0.0.1 %d,"+
		"guestfwd=tcp:10.0.2.101:80-cmd:%s nc 127.0.0.1 %d,"+
		"hostfwd=tcp:127.0.0.1:%d-:9999", vmMAC, c.busybox, c.apiPort, c.busybox, c.imgPort, c.hostfwd)
	if !strings.Contains(nic, "restrict=on") {
		t.Fatal("user networking without restrict=on")
	}
	appendLine := strings.Join(append([]string{"root=/dev/vda", "rw", "console=ttyS0", "panic=-1",
		"ipa-api-url=http://10.0.2.100:6385", "ipa-insecure=1",
		"ipa-advertise-host=127.0.0.1", fmt.Sprintf("ipa-advertise-port=%d", c.callback),
		"BOOTIF=01-" + strings.ReplaceAll(vmMAC, ":", "-")}, params...), " ")
	cmd := exec.Command("qemu-system-x86_64", "-accel", accel, "-m", "1536", "-smp", "1", "-no-reboot",
		"-kernel", filepath.Join(c.dir, "vmlinuz"), "-initrd", filepath.Join(c.dir, "initrd.img"),
		"-append", appendLine, "-display", "none", "-serial", "file:"+filepath.Join(c.out, name+".console.log"),
		"-drive", "file="+filepath.Join(c.dir, "rootfs.img")+",format=raw,if=virtio,snapshot=on",
		"-drive", "file="+c.target+",format=raw,if=virtio",
		"-nic", nic)
	qlog, err := os.Create(filepath.Join(c.out, name+".qemu.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer qlog.Close()
	cmd.Stdout, cmd.Stderr = qlog, qlog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	v := &vm{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(v.done) }()
	t.Cleanup(func() { v.stop() })
	t.Logf("VM %s booted (%s, pid %d)", name, accel, cmd.Process.Pid)
	return v
}

func (v *vm) stop() {
	select {
	case <-v.done:
		return
	default:
	}
	_ = v.cmd.Process.Kill()
	<-v.done
}

func call(t *testing.T, want int, method, url string, body any) map[string]any {
	t.Helper()
	r := testbin.Call(t, "1.81", method, url, body)
	if r.Status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.Status, want, r.Body)
	}
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(t)
}

func provision(t *testing.T, api, node string, body map[string]any) {
	t.Helper()
	call(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", body)
}

func TestRealIPA(t *testing.T) {
	dir := os.Getenv("ANVIL_REAL_IPA_DIR")
	if dir == "" {
		dir = "/var/tmp/anvil-ipa"
	}
	for _, f := range []string{"rootfs.img", "vmlinuz", "initrd.img"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%v: build the VM first: scripts/real-ipa/build-rootfs.sh IPA_GIT_DIR %s", err, dir)
		}
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox (busybox-static) is needed for the guestfwd netcat")
	}
	out := os.Getenv("ANVIL_REAL_IPA_RECORD")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	// The image, on a loopback server the guest reaches as 10.0.2.101:80.
	// A whole-disk image must hold a partition table: IPA checks one is
	// there after writing (an MBR with one Linux partition over random
	// bytes).
	image := make([]byte, 16*mib)
	_, _ = rand.Read(image)
	mbr(image)
	sum := sha256.Sum256(image)
	imgLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	imgSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/img.raw" {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "img.raw", time.Time{}, bytes.NewReader(image))
	})}
	go func() { _ = imgSrv.Serve(imgLn) }()
	t.Cleanup(func() { _ = imgSrv.Close() })

	api, srv := testbin.Serve(t, anvilBin, "real-ipa", "--log-level", "debug")
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(out, "anvil-serve.log"), []byte(srv.Logs.String()), 0o644) })
	rec := newRecorder(t)
	hostfwd := testbin.FreePort(t)
	cfg := vmConfig{dir: dir, out: out, busybox: busybox,
		apiPort:  rec.proxy(t, "ipa->anvil", api),
		imgPort:  imgLn.Addr().(*net.TCPAddr).Port,
		hostfwd:  hostfwd,
		callback: rec.proxy(t, "anvil->ipa", fmt.Sprintf("https://127.0.0.1:%d", hostfwd)),
		target:   filepath.Join(out, "target.raw")}
	if err := os.WriteFile(cfg.target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cfg.target, 5<<30); err != nil { // above IPA's 4 GiB minimum
		t.Fatal(err)
	}
	// Non-zero bytes where erase_devices_metadata zeroes (the first MiB).
	if err := writeAt(cfg.target, 0, bytes.Repeat([]byte{0xa5}, mib)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.save(filepath.Join(out, "exchanges.json")); err != nil {
			t.Error(err)
		}
		t.Logf("recording and consoles in %s", out)
	})

	n := call(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "real-ipa", "driver": "fake-hardware",
		"deploy_interface": "direct", "inspect_interface": "agent", "rescue_interface": "agent",
		"properties": map[string]any{
			"root_device":        map[string]any{"name": "/dev/vdb"},
			"skip_block_devices": []any{map[string]any{"name": "/dev/vda"}},
		}})
	node := n["uuid"].(string)
	call(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": vmMAC})
	wait := func(state string) map[string]any {
		t.Helper()
		return testbin.WaitState(t, api, node, state, phaseWait)
	}

	// Inspection: IPA posts its inventory before it looks its node up.
	provision(t, api, node, map[string]any{"target": "manage"})
	wait("manageable")
	rec.setPhase("inspection")
	provision(t, api, node, map[string]any{"target": "inspect"})
	v := cfg.boot(t, "inspection", "ipa-inspection-callback-url=http://10.0.2.100:6385/v1/continue_inspection")
	got := wait("manageable")
	v.stop()
	t.Logf("properties after inspection: %v", got["properties"])
	inv := call(t, 200, "GET", api+"/v1/nodes/"+node+"/inventory", nil)
	if disks, _ := inv["inventory"].(map[string]any)["disks"].([]any); len(disks) != 2 {
		t.Errorf("inventory disks = %v, want vda and vdb", disks)
	}

	// Automated cleaning.
	rec.newToken()
	rec.setPhase("cleaning")
	provision(t, api, node, map[string]any{"target": "provide"})
	v = cfg.boot(t, "cleaning")
	wait("available")
	v.stop()
	if head, err := readAt(cfg.target, 0, 4096); err != nil || !bytes.Equal(head, make([]byte, 4096)) {
		t.Errorf("the target disk's first 4 KiB after erase_devices_metadata are not zero (%v)", err)
	}

	// Deploy.
	rec.newToken()
	rec.setPhase("deploy")
	call(t, 200, "PATCH", api+"/v1/nodes/"+node, []map[string]any{
		{"op": "add", "path": "/instance_info/image_source", "value": "http://10.0.2.101/img.raw"},
		{"op": "add", "path": "/instance_info/image_checksum", "value": hex.EncodeToString(sum[:])},
		{"op": "add", "path": "/instance_info/image_disk_format", "value": "raw"},
	})
	provision(t, api, node, map[string]any{"target": "active"})
	v = cfg.boot(t, "deploy")
	got = wait("active")
	v.stop()
	if got["last_error"] != nil {
		t.Errorf("last_error after deploy: %v", got["last_error"])
	}
	if head, err := readAt(cfg.target, 0, len(image)); err != nil || !bytes.Equal(head, image) {
		t.Errorf("the target disk does not start with the image (%v)", err)
	}

	// Rescue.
	rec.newToken()
	rec.setPhase("rescue")
	provision(t, api, node, map[string]any{"target": "rescue", "rescue_password": "real-ipa-rescue"})
	v = cfg.boot(t, "rescue")
	wait("rescue")
	v.stop()

	checkRecording(t, rec.exchanges())
}

// checkRecording asserts the recording holds what each phase must have
// crossed the wire.
func checkRecording(t *testing.T, ex []exchange) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range ex {
		key := e.Phase + " " + e.Method + " " + e.Path
		if e.Method == "POST" && e.Path == "/v1/commands/" {
			var c struct {
				Name string `json:"name"`
			}
			_ = jsonUnmarshal(e.Body, &c)
			key = e.Phase + " " + c.Name
		}
		if strings.HasPrefix(e.Path, "/v1/heartbeat/") {
			key = e.Phase + " heartbeat"
		}
		if e.Status < 400 {
			seen[key] = true
		}
	}
	for _, want := range []string{
		"inspection POST /v1/continue_inspection",
		"cleaning GET /v1/lookup", "cleaning heartbeat", "cleaning clean.execute_clean_step",
		"deploy GET /v1/lookup", "deploy heartbeat", "deploy standby.prepare_image",
		"rescue GET /v1/lookup", "rescue heartbeat", "rescue rescue.finalize_rescue",
	} {
		if !seen[want] {
			t.Errorf("recording lacks a successful %q", want)
		}
	}
}

// mbr writes a DOS partition table into img's first sector: one Linux
// partition from sector 2048 to the end.
func mbr(img []byte) {
	clear(img[:512])
	e := img[446:462]
	e[4] = 0x83
	binary.LittleEndian.PutUint32(e[8:], 2048)
	binary.LittleEndian.PutUint32(e[12:], uint32(len(img)/512-2048))
	img[510], img[511] = 0x55, 0xaa
}
