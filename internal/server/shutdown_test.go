package server

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/store/storeopen"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeShutdownSaysWhatItWaitsFor: on the first interrupt the server
// says what it waits for (the running work, by node); closing Hurry (a
// second Ctrl-C) stops it at once, long before the grace ends, and the
// interrupted work is recorded on the node.
func TestServeShutdownSaysWhatItWaitsFor(t *testing.T) {
	var logs syncBuffer
	hurry := make(chan struct{})
	db := filepath.Join(t.TempDir(), "anvil.db")
	s := serveWith(t, func(c *Config) {
		c.Log = slog.New(slog.NewTextHandler(&logs, nil))
		c.ShutdownTimeout = 10 * time.Minute
		c.Hurry = hurry
		c.Database = db
	})
	s.do("POST", "/v1/nodes", `{"name": "slow1", "driver": "fake-hardware", "driver_info": {"fake_verify_delay": 600}}`, 201)
	s.do("PUT", "/v1/nodes/slow1/states/provision", `{"target": "manage"}`, 202)
	deadline := time.Now().Add(testTimeout)
	for s.do("GET", "/v1/nodes/slow1", "", 200)["provision_state"] != "verifying" {
		if time.Now().After(deadline) {
			t.Fatal("the node never started verifying")
		}
		time.Sleep(10 * time.Millisecond) // a bounded polling loop
	}
	s.stop()
	for !strings.Contains(logs.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown message:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond) // a bounded polling loop
	}
	close(hurry)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
		s.done <- nil
	case <-time.After(testTimeout):
		t.Fatalf("a second interrupt did not stop the server; logs:\n%s", logs.String())
	}
	out := logs.String()
	for _, want := range []string{"waiting for running work", "running_work=1", "nodes=slow1", "interrupt again to stop now", "interrupted again: stopping now"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	st, err := storeopen.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Nodes().GetNode(context.Background(), "slow1")
	if err != nil {
		t.Fatal(err)
	}
	if n.Reservation != "" || n.ProvisionState == "verifying" || !strings.Contains(n.LastError, "interrupted: conductor test-host stopped") ||
		strings.Contains(n.LastError, "context canceled") {
		t.Errorf("interrupted work not recorded: state %q, reservation %q, last_error %q", n.ProvisionState, n.Reservation, n.LastError)
	}
	t.Logf("after the interrupt: %s, last_error %q", n.ProvisionState, n.LastError)
}
