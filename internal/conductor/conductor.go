package conductor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
	"github.com/anvil-metal/anvil/internal/ring"
	"github.com/anvil-metal/anvil/internal/store"
)

// Config configures a Conductor. Zero values take Ironic's defaults.
type Config struct {
	Store   Store
	Drivers *driver.Registry
	Host    string // this conductor's name (reservation holder)
	Group   string // conductor_group
	Log     *slog.Logger
	Now     func() time.Time

	Workers           int           // worker pool size (Ironic workers_pool_size: 100)
	LockRetries       int           // extra attempts to take a held lock (Ironic: 3 attempts)
	LockRetryInterval time.Duration // between attempts (Ironic: 1 s)
	HistoryLimit      int           // history entries kept per node (300)
	HeartbeatInterval time.Duration // conductor heartbeat (10 s, at most a third of ConductorDeadAfter)
	AutomatedClean    bool          // Ironic's [conductor]automated_clean (true)

	// WriteRetryInterval is the first pause before a failed write of the
	// conductor's own bookkeeping (a lock's release, a worker's final
	// save, a history entry) is tried again; it doubles up to 5 s (50 ms).
	WriteRetryInterval time.Duration

	// Wait-state timeouts (0 = never); Ironic's defaults are 30 minutes.
	DeployCallbackTimeout  time.Duration
	CleanCallbackTimeout   time.Duration
	InspectWaitTimeout     time.Duration
	RescueCallbackTimeout  time.Duration
	ServiceCallbackTimeout time.Duration
	// CheckProvisionStateInterval is how often timeouts are checked (60 s).
	CheckProvisionStateInterval time.Duration

	// Power sync (Ironic's [conductor] options).
	SyncPowerStateInterval    time.Duration // 60 s; negative disables
	ForcePowerStateDuringSync bool          // true: put hardware back to the recorded state
	PowerStateSyncMaxRetries  int           // failed reads before maintenance (3)
	SyncPowerStateWorkers     int           // parallel reads (8)
	// SyncPowerStateTimeout bounds one node's read in a sweep, the
	// driver's retries included (20 s): a BMC that does not answer holds
	// a sync worker that long, not its driver's attempts × (timeout +
	// back-off), minutes on Redfish; it is read again next sweep, as
	// Ironic retries a failed sync over sweeps (power_state_sync_max_retries).
	SyncPowerStateTimeout time.Duration
	// PowerFailureRecoveryInterval spaces the reads of nodes power sync
	// put into maintenance for a BMC that stopped answering (Ironic's
	// power_failure_recovery_interval, 300 s).
	PowerFailureRecoveryInterval time.Duration

	// ConductorDeadAfter: a conductor that has not heartbeated for this long is
	// dead and its locks are broken by the survivors (Ironic's heartbeat_timeout, 60 s).
	ConductorDeadAfter time.Duration
	// HashPartitions is each conductor's number of points on the hash ring
	// that divides nodes' periodic work (Ironic: 2^hash_partition_exponent, 32).
	HashPartitions int

	// Concurrency caps (Ironic's max_concurrent_deploy 250, max_concurrent_clean 50).
	MaxConcurrentDeploy int
	MaxConcurrentClean  int

	// Diagnosis gathers a failed node's evidence from the console, boot
	// and driver services of this process.
	Diagnosis DiagnosisSources

	// Recorder, if set, is told how long each lock acquisition waited and
	// whether it got the lock (metrics).
	Recorder interface {
		LockWait(d time.Duration, acquired bool)
	}
}

// withDefaults returns cfg with Ironic's defaults in every zero field.
func (cfg Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.CheckProvisionStateInterval, time.Minute)
	def(&cfg.SyncPowerStateInterval, time.Minute)
	def(&cfg.ConductorDeadAfter, time.Minute)
	def(&cfg.PowerFailureRecoveryInterval, 5*time.Minute)
	def(&cfg.WriteRetryInterval, 50*time.Millisecond)
	def(&cfg.SyncPowerStateTimeout, 20*time.Second)
	if cfg.PowerStateSyncMaxRetries <= 0 {
		cfg.PowerStateSyncMaxRetries = 3
	}
	if cfg.SyncPowerStateWorkers <= 0 {
		cfg.SyncPowerStateWorkers = 8
	}
	if cfg.MaxConcurrentDeploy <= 0 {
		cfg.MaxConcurrentDeploy = 250
	}
	if cfg.MaxConcurrentClean <= 0 {
		cfg.MaxConcurrentClean = 50
	}
	return cfg
}

// Conductor applies every provision, power and maintenance change to nodes:
// it takes the node lock, checks the state machine, saves the new state before
// answering and runs the work on a bounded worker pool.
type Conductor struct {
	cfg   Config
	store Store
	reg   *driver.Registry
	log   *slog.Logger
	now   func() time.Time

	workers *pool // the worker pool

	powerFailures sync.Map                       // node UUID → consecutive failed power reads (int)
	lookups       *recent.Log[model.AgentLookup] // agents' lookups that matched no node
	syncStats     powerSyncStats
	recovery      recoveryGate
}

// New returns a conductor; call Start before use.
func New(cfg Config) (*Conductor, error) {
	if cfg.Store == nil || cfg.Drivers == nil || cfg.Host == "" {
		return nil, errors.New("conductor: Store, Drivers and Host are required")
	}
	if err := ring.CheckGroup(cfg.Group); err != nil {
		return nil, fmt.Errorf("conductor: %w", err)
	}
	// Groups compare case-insensitively; the API stores nodes' lowercased.
	cfg.Group = strings.ToLower(cfg.Group)
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 100
	}
	if cfg.LockRetries < 0 {
		cfg.LockRetries = 0
	}
	if cfg.HistoryLimit == 0 {
		cfg.HistoryLimit = 300
	}
	cfg = cfg.withDefaults()
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = min(10*time.Second, cfg.ConductorDeadAfter/3)
	}
	if cfg.HeartbeatInterval >= cfg.ConductorDeadAfter {
		return nil, fmt.Errorf("conductor: heartbeat interval %s must be shorter than the heartbeat timeout %s, or the conductor is taken for dead while it runs", cfg.HeartbeatInterval, cfg.ConductorDeadAfter)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Conductor{
		cfg: cfg, store: cfg.Store, reg: cfg.Drivers, log: cfg.Log.With("conductor", cfg.Host), now: cfg.Now,
		workers: &pool{host: cfg.Host, slots: make(chan struct{}, cfg.Workers), ctx: ctx, cancel: cancel}, lookups: newLookupLog(),
	}, nil
}

// Host is the conductor's name.
func (c *Conductor) Host() string { return c.cfg.Host }

// Start registers the conductor, recovers nodes a previous run of this host
// left mid-operation, resumes its unfinished allocations, and heartbeats
// until ctx ends.
func (c *Conductor) Start(ctx context.Context) error {
	names := make([]string, 0)
	for _, ht := range c.reg.HardwareTypes() {
		names = append(names, ht.Name)
	}
	if err := c.store.Conductors().RegisterConductor(ctx, &model.Conductor{
		Hostname: c.cfg.Host, ConductorGroup: c.cfg.Group, Drivers: names,
	}); err != nil {
		return fmt.Errorf("register conductor: %w", err)
	}
	if err := c.recover(ctx); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	if err := c.Allocations().resumeAllocations(ctx, c.cfg.Host); err != nil {
		return fmt.Errorf("resume allocations: %w", err)
	}
	go c.heartbeat(ctx)
	go c.every(ctx, c.cfg.CheckProvisionStateInterval, "check provision state timeouts", c.CheckTimeouts)
	go c.every(ctx, c.cfg.CheckProvisionStateInterval, "fail nodes no conductor works on", c.CheckOrphans)
	go c.every(ctx, c.cfg.SyncPowerStateInterval, "sync power states", c.PowerSync().SyncPowerStates)
	go c.every(ctx, c.cfg.ConductorDeadAfter/2, "break locks of dead conductors", c.BreakDeadLocks)
	return nil
}

// StartAPIOnly is Start for an API process (serve --role api): it
// registers without drivers, so it is never on the hash ring (no periodic
// work, no handed-over calls), frees what a previous run of this host left,
// and heartbeats, so that survivors break its locks if it dies.
func (c *Conductor) StartAPIOnly(ctx context.Context) error {
	if err := c.store.Conductors().RegisterConductor(ctx, &model.Conductor{Hostname: c.cfg.Host, ConductorGroup: c.cfg.Group}); err != nil {
		return fmt.Errorf("register API process: %w", err)
	}
	if err := c.recover(ctx); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	go c.heartbeat(ctx)
	return nil
}

func (c *Conductor) heartbeat(ctx context.Context) {
	t := time.NewTicker(c.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.store.Conductors().HeartbeatConductor(ctx, c.cfg.Host, c.now()); err != nil && ctx.Err() == nil {
				c.log.Error("conductor heartbeat failed", "err", err)
			}
		}
	}
}

// recover fails the nodes this host was working on when it last stopped and
// releases its locks. Wait states are left to their callbacks and timeouts.
func (c *Conductor) recover(ctx context.Context) error {
	held, err := c.store.Nodes().ListNodes(ctx, store.NodeQuery{ReservedBy: c.cfg.Host})
	if err != nil {
		return err
	}
	for _, n := range held {
		if !workerOnly(n.ProvisionState) {
			if n.TargetPowerState != "" {
				n.TargetPowerState = ""
				n.LastError = "Power operation was interrupted: conductor " + c.cfg.Host + " restarted"
				c.saveQuiet(ctx, n, nil)
			}
			continue
		}
		t := &task{c: c, node: n}
		msg := fmt.Sprintf("Operation was interrupted: conductor %s restarted while the node was in state %q", c.cfg.Host, n.ProvisionState)
		t.failWith(msg)
		t.node.TargetPowerState = ""
		c.saveQuietTask(ctx, t)
	}
	freed, err := c.store.Nodes().ReleaseHost(ctx, c.cfg.Host)
	if len(freed) > 0 {
		c.log.Warn("released locks left by a previous run", "count", len(freed))
	}
	return err
}

// saveQuiet writes n and its history outside a task, logging a failure;
// it reports whether n was saved.
func (c *Conductor) saveQuiet(ctx context.Context, n *model.Node, hist []*model.HistoryEvent) bool {
	if err := c.store.Nodes().UpdateNode(ctx, n); err != nil {
		c.log.Error("saving node failed", "node", n.UUID, "err", err)
		return false
	}
	c.addHistory(ctx, hist)
	return true
}

// Shutdown stops taking work, lets running work finish until ctx ends, then
// interrupts it (it records itself as failed and releases its locks), and
// marks the conductor offline.
func (c *Conductor) Shutdown(ctx context.Context) error {
	c.workers.stop()
	done := make(chan struct{})
	go func() { c.workers.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		c.log.Warn("shutdown deadline reached: interrupting running work")
		c.workers.cancel()
		<-done
	}
	c.workers.cancel()
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.store.Nodes().ReleaseHost(uctx, c.cfg.Host); err != nil {
		return err
	}
	return c.store.Conductors().UnregisterConductor(uctx, c.cfg.Host)
}

// Workers reports the worker pool's use: busy workers and pool size.
func (c *Conductor) Workers() (busy, size int) { return len(c.workers.slots), cap(c.workers.slots) }

// WaitIdle blocks until no worker is running. Work started before the call
// is waited for; tests use it instead of sleeping.
func (c *Conductor) WaitIdle() { c.workers.wg.Wait() }

// pool is the conductor's bounded worker pool: one slot per running
// worker; once stopping it takes no new work, and the context its workers
// run under is cancelled when a shutdown's grace period ends, so that
// in-flight work records itself as interrupted.
type pool struct {
	host  string        // the conductor's name, for the 503 of a shutdown
	slots chan struct{} // one token per running worker
	wg    sync.WaitGroup

	mu       sync.Mutex
	stopping bool

	ctx    context.Context
	cancel context.CancelFunc
}

// stop makes the pool refuse new work.
func (p *pool) stop() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
}

// reserve takes a worker slot or answers 503.
func (p *pool) reserve() error {
	if err := p.available(); err != nil {
		return err
	}
	select {
	case p.slots <- struct{}{}:
		p.wg.Add(1)
		return nil
	default:
		return errNoWorker()
	}
}

// available answers reserve's 503 when it would refuse now (the conductor
// stops, or every worker is busy), taking nothing: work that would need a
// worker is refused before it writes anything (a lock).
func (p *pool) available() error {
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		return fault.New(fault.Unavailable, "Conductor %s is shutting down and takes no new work.", p.host)
	}
	if len(p.slots) >= cap(p.slots) {
		return errNoWorker()
	}
	return nil
}

// errNoWorker is Ironic's NoFreeConductorWorker (503).
func errNoWorker() error { return fault.New(fault.Unavailable, "No free conductor workers available") }

// spawn runs fn on the slot taken by reserve.
func (p *pool) spawn(fn func(ctx context.Context)) {
	go func() {
		defer func() { <-p.slots; p.wg.Done() }()
		fn(p.ctx)
	}()
}

// free gives back a slot taken by reserve that was not used.
func (p *pool) free() { <-p.slots; p.wg.Done() }

// Drivers lists enabled hardware types.
func (svc *Hardware) Drivers() []DriverInfo {
	c := svc.c
	out := []DriverInfo{}
	for _, ht := range c.reg.HardwareTypes() {
		out = append(out, svc.driverInfo(ht))
	}
	return out
}

// Driver returns one enabled hardware type.
func (svc *Hardware) Driver(name string) (DriverInfo, error) {
	c := svc.c
	ht, ok := c.reg.HardwareType(name)
	if !ok {
		return DriverInfo{}, driverNotFound(name)
	}
	return svc.driverInfo(ht), nil
}

// driverNotFound is Ironic's DriverNotFound.
func driverNotFound(name string) error {
	return fault.New(fault.NotFound, "Could not find the following driver(s) or hardware type(s): %s.", name)
}

func (svc *Hardware) driverInfo(ht driver.HardwareType) DriverInfo {
	c := svc.c
	d := DriverInfo{Name: ht.Name, Hosts: []string{c.cfg.Host}, Interfaces: map[string][]string{},
		Defaults: map[string]string{}, Properties: map[string]string{}}
	for k, v := range ht.Supported {
		d.Interfaces[k] = append([]string(nil), v...)
		if len(v) > 0 {
			d.Defaults[k] = v[0]
		}
	}
	for k, v := range ht.Properties {
		d.Properties[k] = v
	}
	return d
}
