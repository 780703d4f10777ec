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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

var httpClient = &http.Client{Timeout: 30 * time.Second}

// mustRun reports whether a missing prerequisite fails the test instead of
// skipping it.
func mustRun() bool { return os.Getenv("ANVIL_VM_TEST") == "1" || os.Getenv("CI") != "" }

func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if mustRun() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// startServe runs `anvil serve` on a free loopback port and returns its URL.
func startServe(t *testing.T, extra ...string) string {
	t.Helper()
	return startServeOn(t, testbin.FreePort(t), extra...)
}

// startServeOn runs `anvil serve` on 127.0.0.1:port and returns its URL.
func startServeOn(t *testing.T, port int, extra ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{"serve", "--listen", addr, "--database", filepath.Join(t.TempDir(), "anvil.db"),
		"--host-id", "vm-e2e"}, extra...)
	logs := &syncBuffer{}
	cmd := exec.Command(anvilBin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("anvil serve output:\n%s", tail(logs.String(), 20000))
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r, err := httpClient.Get(base + "/"); err == nil {
			r.Body.Close()
			return base
		}
	}
	t.Fatalf("anvil serve not ready on %s", addr)
	return ""
}

type resp struct {
	status int
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

func mustCall(t *testing.T, want int, method, url string, body any) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.81")
	req.Header.Set("Content-Type", "application/json")
	r, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, r.StatusCode, want, b)
	}
	return resp{r.StatusCode, b}
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

func hasPrefixAny(s string, ps ...string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
