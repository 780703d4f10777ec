package testbin

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// ReadyTimeout bounds how long a server may take to start answering.
	ReadyTimeout = 20 * time.Second
	// StopTimeout bounds how long a process may take to exit after SIGTERM.
	StopTimeout = 15 * time.Second
	// StateTimeout bounds a wait for a node to settle (WaitState).
	StateTimeout = 10 * time.Second
	// pollInterval is the pause between two polls.
	pollInterval = 20 * time.Millisecond
)

// Process is a started command whose output is collected in Logs. It is
// stopped with SIGTERM when the test ends (SIGKILL after StopTimeout), and
// its output is logged if the test failed.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	Logs *Buffer

	exited  chan error
	stopped bool
	killed  bool
	err     error
}

// Start runs bin with args; name labels it in messages.
func Start(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, Logs: &Buffer{}, exited: make(chan error, 1)}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Logs, p.Logs
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.exited <- p.Cmd.Wait() }()
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Logs.String())
		}
	})
	return p
}

// Stop sends SIGTERM and waits for the exit (killing the process after
// StopTimeout, which fails the test); it returns the exit error. Later
// calls return the same error at once.
func (p *Process) Stop(t testing.TB) error {
	t.Helper()
	if p.stopped {
		return p.err
	}
	p.stopped = true
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case p.err = <-p.exited:
	case <-time.After(StopTimeout):
		t.Errorf("%s still running %s after SIGTERM; killing it", p.Name, StopTimeout)
		_ = p.Cmd.Process.Kill()
		p.err = <-p.exited
	}
	return p.err
}

// Kill ends the process with SIGKILL (a crash) and waits for it.
func (p *Process) Kill() {
	if p.stopped {
		return
	}
	p.stopped, p.killed = true, true
	_ = p.Cmd.Process.Kill()
	p.err = <-p.exited
}

// exitedEarly reports whether the process has exited, and how.
func (p *Process) exitedEarly() (bool, error) {
	select {
	case err := <-p.exited:
		p.stopped, p.err = true, err
		return true, err
	default:
		return p.stopped, p.err
	}
}

// Serve runs `bin serve` on a free loopback port with a fresh SQLite
// database in the test's temporary directory, conductor hostID and the
// extra flags, and waits until it answers GET / and has logged
// "anvil: listening on http://ADDR". It returns the base URL (no trailing
// slash) and the process. At cleanup the server must exit cleanly after
// SIGTERM, or the test fails.
func Serve(t testing.TB, bin, hostID string, extra ...string) (string, *Process) {
	t.Helper()
	return ServeOn(t, bin, filepath.Join(t.TempDir(), "anvil.db"), hostID, extra...)
}

// ServeOn is Serve on the database db (which several servers may share,
// one after the other or at once). A server ended with Kill is not
// expected to exit cleanly.
func ServeOn(t testing.TB, bin, db, hostID string, extra ...string) (string, *Process) {
	t.Helper()
	// Port 0: the server binds a free port itself and prints it (a port
	// picked here and bound later could be taken meanwhile by another
	// package's server: "the address is in use").
	return ServeAt(t, bin, "127.0.0.1:0", db, hostID, extra...)
}

// ServeAt is ServeOn listening on addr, for a test that must know the
// address before the server starts (e.g. to hand it to a VM).
func ServeAt(t testing.TB, bin, addr, db, hostID string, extra ...string) (string, *Process) {
	t.Helper()
	args := append([]string{"serve", "--listen", addr, "--database", db, "--host-id", hostID}, extra...)
	p := Start(t, "anvil serve ("+hostID+")", bin, args...)
	t.Cleanup(func() {
		if err := p.Stop(t); err != nil && !p.killed {
			t.Errorf("anvil serve did not exit cleanly after SIGTERM: %v", err)
		}
	})
	base := "http://" + addr
	line := "anvil: listening on " + base + " "
	deadline := time.Now().Add(ReadyTimeout)
	for {
		if done, err := p.exitedEarly(); done {
			t.Fatalf("anvil serve exited before it was ready: %v", err)
		}
		if strings.HasSuffix(addr, ":0") {
			// The server chose the port: read it from its first line.
			if m := listeningRE.FindStringSubmatch(p.Logs.String()); m != nil {
				addr = m[1]
				base = "http://" + addr
				line = "anvil: listening on " + base + " "
			}
		}
		if resp, err := client.Get(base + "/"); err == nil && !strings.HasSuffix(addr, ":0") {
			resp.Body.Close()
			if strings.Contains(p.Logs.String(), line) {
				return base, p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("anvil serve not ready on %s after %s", addr, ReadyTimeout)
		}
		time.Sleep(pollInterval) // polling with a deadline, not synchronisation
	}
}

// listeningRE finds the address on anvil serve's "listening on" line.
var listeningRE = regexp.MustCompile(`anvil: listening on http://(127\.0\.0\.1:[0-9]+) `)

// client sends the helpers' requests; every request is bounded. It is
// never modified.
var client = &http.Client{Timeout: 30 * time.Second}
