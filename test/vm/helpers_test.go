// Package vm_test deploys a real (emulated) machine end to end: a qemu VM
// (software emulation, user networking with restrict=on) whose power is
// controlled by OpenIPMI's ipmi_sim boots the deploy ramdisk internal/ramdisk
// builds (a Debian kernel; an initramfs holding busybox and the static
// `anvil agent`, configured from the kernel command line). Anvil drives it through the
// ipmi hardware type and the direct deploy from enroll to active. Every host
// address is on 127.0.0.0/8; the guest reaches only the two forwarded ports.
//
// Needs qemu-system-x86_64, ipmi_sim, apt-get and dpkg-deb (scripts/test.sh
// installs qemu-system-x86, busybox-static and openipmi); the kernel and
// busybox are fetched with `apt-get download` and cached under
// $XDG_CACHE_HOME/anvil-vm-test. Without them the test skips, unless
// ANVIL_VM_TEST=1 or CI is set, where it fails.
package vm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

// syncBuffer collects a process's output safely.
type syncBuffer = testbin.Buffer

// vmSwitch, set to 1, makes a missing prerequisite fail the VM tests as
// under CI.
const vmSwitch = "ANVIL_VM_TEST"

// missing skips the test for a missing prerequisite, or fails it under CI
// or ANVIL_VM_TEST=1 (testbin.Missing decides).
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	testbin.Missing(t, fmt.Sprintf(format, args...), vmSwitch)
}

// startServe runs `anvil serve` on a free loopback port and returns its URL.
func startServe(t *testing.T, extra ...string) string {
	t.Helper()
	return startServeOn(t, testbin.FreePort(t), extra...)
}

// startServeOn runs `anvil serve` on 127.0.0.1:port and returns its URL.
func startServeOn(t *testing.T, port int, extra ...string) string {
	t.Helper()
	base, _ := testbin.ServeAt(t, anvilBin, fmt.Sprintf("127.0.0.1:%d", port), filepath.Join(t.TempDir(), "anvil.db"), "vm-e2e", extra...)
	return base
}

// mustCall is testbin.MustCall: the JSON call helper every end-to-end test shares.
var mustCall = testbin.MustCall

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func readTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(string(b), n)
}

func hasPrefixAny(s string, ps ...string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// vmStateDir makes a test's working directory and, in it, the state
// directory the chassis script and qemu share (power, boot device, pid,
// events, logs). At cleanup — registered first, so it runs last — it kills
// whatever VM is left and, when the test failed, logs the chassis events,
// qemu's log and the VM console.
func vmStateDir(t *testing.T) (dir, st string) {
	t.Helper()
	dir = t.TempDir()
	if strings.ContainsAny(dir, " ,'") {
		t.Skipf("temp dir %q holds a space, comma or quote", dir)
	}
	st = filepath.Join(dir, "state")
	if err := os.Mkdir(st, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(st, "qemu.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("chassis events:\n%s", readTail(filepath.Join(st, "events"), 3000))
			t.Logf("qemu log:\n%s", readTail(filepath.Join(st, "qemu.log"), 2000))
			t.Logf("VM console:\n%s", readTail(filepath.Join(st, "console.log"), 12000))
		}
	})
	return dir, st
}

// serveImage serves image at /name on a loopback HTTP server until the
// test ends (the guest reaches it through a guestfwd) and returns its
// address.
func serveImage(t *testing.T, name string, image []byte) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+name {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(image))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr)
}

// emptyDisk creates the VM's disk, dir/disk.raw: 64 MiB, sparse.
func emptyDisk(t *testing.T, dir string) string {
	t.Helper()
	disk := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(disk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 64*mib); err != nil {
		t.Fatal(err)
	}
	return disk
}

// assertDiskHolds fails the test unless the disk file starts with image.
func assertDiskHolds(t *testing.T, disk string, image []byte) {
	t.Helper()
	got, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(image)], image) {
		t.Fatal("the VM's disk does not start with the image")
	}
}

// provide takes the node from enroll through manageable to available
// (cleaning in the agent the machine boots) and logs how long the provide
// took (how says by what boot; logPhase).
func (w *watcher) provide(how string) {
	w.t.Helper()
	provision(w.t, w.api, w.node, "manage")
	w.wait("manageable")
	phase := time.Now()
	provision(w.t, w.api, w.node, "provide")
	w.wait("available")
	w.logPhase("provide", how, phase)
}

// deploy gives the node image as its instance image (at url for the
// guest, with its sha256) and deploys it: the node must become active
// without last_error. It logs as provide does and returns the node.
func (w *watcher) deploy(how, url string, image []byte) map[string]any {
	w.t.Helper()
	sum := sha256.Sum256(image)
	mustCall(w.t, 200, "PATCH", w.api+"/v1/nodes/"+w.node, []map[string]any{
		{"op": "add", "path": "/instance_info/image_source", "value": url},
		{"op": "add", "path": "/instance_info/image_checksum", "value": hex.EncodeToString(sum[:])},
	})
	phase := time.Now()
	w.reset()
	provision(w.t, w.api, w.node, "active")
	n := w.wait("active")
	w.logPhase("deploy", how, phase)
	if n["last_error"] != nil {
		w.t.Errorf("last_error after deploy: %v", n["last_error"])
	}
	return n
}

// logPhase logs how long a phase took since start and, where the chassis
// script records power events, how long from power-on to the agent's first
// heartbeat.
func (w *watcher) logPhase(phase, how string, start time.Time) {
	w.t.Helper()
	msg := fmt.Sprintf("%s (%s): %v", phase, how, time.Since(start).Round(time.Millisecond))
	if d := w.bootToHeartbeat(); d > 0 {
		msg += fmt.Sprintf("; power-on to first heartbeat %v", d)
	}
	w.t.Log(msg)
}

// enrollNetboot creates a node of the ipmi hardware type with node's
// fields, driver_info for ipmi_sim on bmcPort (startBMC), the deploy
// ramdisk a and the agent's parameters (nodeParams, its command API
// forwarded from hostfwd), and its port with vmMAC; it returns the node.
func enrollNetboot(t *testing.T, api string, node map[string]any, bmcPort, hostfwd int, a assets) map[string]any {
	t.Helper()
	node["driver"] = "ipmi"
	node["driver_info"] = map[string]any{
		"ipmi_address": "127.0.0.1", "ipmi_port": bmcPort, "ipmi_username": "admin",
		"ipmi_password": password, "ipmi_cipher_suite": 3,
		"deploy_kernel": a.kernel, "deploy_ramdisk": a.initramfs,
		"kernel_append_params": "console=ttyS0 " + nodeParams(hostfwd),
	}
	n := mustCall(t, 201, "POST", api+"/v1/nodes", node).JSON(t)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": n["uuid"], "address": vmMAC})
	return n
}
