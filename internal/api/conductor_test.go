package api

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/records"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

const fakeDriver = "fake-hardware"

// testConductor is the real conductor with fake hardware, plus two taps a
// test cannot get from it: the provision requests the API passed on are
// recorded, and Validate can be made to fail with an internal error (the
// real conductor has no way to produce one on demand). Provision and
// SetPower wait for the conductor's workers, so a test sees the result of a
// 202 in its next request.
type testConductor struct {
	*conductor.Conductor
	// The conductor's services, and the records with no node lock, which
	// the conductor does not change.
	*conductor.Nodes
	*conductor.Allocations
	*conductor.Agents
	*conductor.Management
	*conductor.NodeRecords
	*conductor.Hardware
	*records.Service
	drivers *driver.Registry // fills the interfaces of nodes a test stores directly

	mu          sync.Mutex
	provisions  []conductor.ProvisionRequest
	validateErr error
}

var (
	_ Lifecycle   = (*testConductor)(nil)
	_ Management  = (*testConductor)(nil)
	_ NodeRecords = (*testConductor)(nil)
	_ Records     = (*testConductor)(nil)
	_ Agents      = (*testConductor)(nil)
	_ Hardware    = (*testConductor)(nil)
)

// newTestBackend opens the real SQLite store in a temporary directory,
// publishing on a broker, and starts a real conductor named host over it.
func newTestBackend(t testing.TB, host string, now func() time.Time) (eventbus.Publisher, *testConductor) {
	t.Helper()
	return newTestBackendWith(t, host, now, nil)
}

// newTestBackendWith is newTestBackend with more interfaces registered by mod.
func newTestBackendWith(t testing.TB, host string, now func() time.Time, mod func(*driver.Registry)) (eventbus.Publisher, *testConductor) {
	t.Helper()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "anvil.db"), sqlstore.WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	return newTestBackendOn(t, raw, host, now, mod)
}

// newTestBackendOn is newTestBackendWith on the store raw, which it closes
// when t ends.
func newTestBackendOn(t testing.TB, raw store.Store, host string, now func() time.Time, mod func(*driver.Registry)) (eventbus.Publisher, *testConductor) {
	t.Helper()
	ctx := context.Background()
	b := eventbus.NewBroker(eventbus.Config{})
	st := eventbus.Store(raw, b)
	reg := driver.NewRegistry()
	fake.New().Register(reg)
	if mod != nil {
		mod(reg)
	}
	c, err := conductor.New(conductor.Config{Store: st, Drivers: reg, Host: host, Now: now,
		AutomatedClean: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	if err := c.Start(cctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		c.WaitIdle()
		b.Close()
		_ = raw.Close()
	})
	return st, &testConductor{Conductor: c, Nodes: c.Nodes(), Allocations: c.Allocations(), Agents: c.Agents(), Management: c.Management(), NodeRecords: c.NodeRecords(), Hardware: c.Hardware(),
		Service: records.New(st, now, nil), drivers: reg}
}

func (c *testConductor) Provision(ctx context.Context, ident string, req conductor.ProvisionRequest) error {
	c.mu.Lock()
	c.provisions = append(c.provisions, req)
	c.mu.Unlock()
	err := c.Conductor.Provision(ctx, ident, req)
	c.WaitIdle()
	return err
}

func (c *testConductor) SetPower(ctx context.Context, ident string, req conductor.PowerRequest) error {
	err := c.Conductor.SetPower(ctx, ident, req)
	c.WaitIdle()
	return err
}

func (c *testConductor) Validate(ctx context.Context, ident string) (map[string]conductor.ValidateResult, error) {
	c.mu.Lock()
	err := c.validateErr
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.Nodes.Validate(ctx, ident)
}

func (c *testConductor) lastProvision() conductor.ProvisionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.provisions[len(c.provisions)-1]
}
