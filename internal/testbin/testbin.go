package testbin

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Main builds ./cmd/anvil (CGO_ENABLED=0, static) into a temporary bin
// directory, stores the binary's path in *bin, calls prepare (if not nil)
// with that directory, runs the tests and removes the directory. Use it as
// `func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }`.
func Main(m *testing.M, bin *string, prepare func(binDir string) error) int {
	dir, err := os.MkdirTemp("", "anvil-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	*bin = filepath.Join(binDir, "anvil")
	if err := Build(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	if prepare != nil {
		if err := prepare(binDir); err != nil {
			fmt.Fprintln(os.Stderr, "testbin:", err)
			return 1
		}
	}
	return m.Run()
}

// Build compiles ./cmd/anvil of the module containing the working directory
// into out, statically (CGO_ENABLED=0), within five minutes.
func Build(out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/anvil")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/anvil (CGO_ENABLED=0): %v\n%s", err, b)
	}
	return nil
}

// moduleRoot walks up from the working directory to the go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Buffer is a bytes.Buffer safe for a process's writers and the test.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FreeAddr is a free TCP address on 127.0.0.1 for a server the test starts
// later. It is picked at random below the kernel's ephemeral range
// (Linux's 32768–60999), where the kernel never hands out ports itself: a
// port the kernel chose for it and that it freed again could be given to
// any other server binding port 0, or to an outgoing connection, before
// the test's server binds it (under CI's parallel packages that happened:
// "the address is in use"). Only another FreeAddr could choose it too, at
// random among 12,000.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		port := freeLow + rand.IntN(freeHigh-freeLow)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: try another
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return addr
	}
	t.Fatalf("find a free port: 100 random ports in [%d, %d) were taken", freeLow, freeHigh)
	return ""
}

// The ports FreeAddr picks among: below the kernel's ephemeral range.
const (
	freeLow  = 20000
	freeHigh = 32000
)

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(FreeAddr(t))
	var p int
	fmt.Sscan(port, &p)
	return p
}

// FreeUDPPort is a free UDP port on 127.0.0.1, picked as FreeAddr picks
// its TCP port (at random below the kernel's ephemeral range).
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := freeLow + rand.IntN(freeHigh-freeLow)
		c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: try another
		}
		_ = c.Close()
		return port
	}
	t.Fatalf("find a free UDP port: 100 random ports in [%d, %d) were taken", freeLow, freeHigh)
	return 0
}
