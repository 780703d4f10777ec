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
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

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
