// Package realos_test installs real operating systems through Anvil: the
// test OS images of internal/testos, deployed to qemu VMs of `anvil
// bmc-emulator --qemu` by `anvil serve` and the deploy ramdisk's agent,
// then booted from disk (realos_test.go says how). Everything binds to
// 127.0.0.1; the VMs have restricted user networking.
//
// Needs qemu-system-x86_64, OVMF, Debian's ipxe-qemu, GRUB 2
// (grub2-common, grub-pc-bin, grub-efi-amd64-bin), e2fsprogs,
// dosfstools, mtools and apt-get (the kernel and busybox are fetched with
// `apt-get download` into $XDG_CACHE_HOME/anvil-vm-test); scripts/test.sh
// installs them. Without them the test skips, unless ANVIL_VM_TEST=1 or
// CI is set, where it fails. Its own package: the deploys under TCG take
// minutes each, beside test/vm's.
package realos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }

const (
	vmSwitch  = "ANVIL_VM_TEST"
	password  = "realos-bmc-pw1"
	agentPort = 9999
	// stockIPXE is Debian's ipxe-qemu ROM qemu loads into a virtio NIC.
	stockIPXE = "/usr/lib/ipxe/qemu/efi-virtio.rom"
)

var mustCall = testbin.MustCall

func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	testbin.Missing(t, fmt.Sprintf(format, args...), vmSwitch)
}

// startServeOn runs `anvil serve` on 127.0.0.1:port and returns its URL.
func startServeOn(t *testing.T, port int, extra ...string) string {
	t.Helper()
	base, _ := testbin.ServeAt(t, anvilBin, fmt.Sprintf("127.0.0.1:%d", port), filepath.Join(t.TempDir(), "anvil.db"), "realos", extra...)
	return base
}

func provision(t *testing.T, api, node, target string) {
	t.Helper()
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": target})
}

// waitFor polls cond until it holds, d passes or ctx ends.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

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
