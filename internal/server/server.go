package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/anvil-metal/anvil/internal/records"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/dashboard"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/direct"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/driver/pxe"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/eventlog"
	"github.com/anvil-metal/anvil/internal/handoff"
	"github.com/anvil-metal/anvil/internal/hostlock"
	"github.com/anvil-metal/anvil/internal/metrics"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/oci"
	"github.com/anvil-metal/anvil/internal/policy"
	"github.com/anvil-metal/anvil/internal/recent"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/storeopen"
	"github.com/anvil-metal/anvil/internal/workq"
	"github.com/anvil-metal/anvil/pkg/events"
)

// Config is what `anvil serve` takes.
type Config struct {
	Listen string // host:port, default 127.0.0.1:6385
	// AdvertiseURL is where other Anvil processes reach this one's
	// listener (http:// or https://; the console relay of an API process
	// dials it); "" derives it from the bound address.
	AdvertiseURL string
	Database     string // SQLite path or postgres:// URL
	HostID       string // conductor name
	// Role is what this process runs: RoleAll (the API and a conductor, the
	// default), RoleConductor (a conductor only; /metrics on the listener)
	// or RoleAPI (the API; verbs handed to their node's owning conductor
	// through internal/workq). Roles other than all need PostgreSQL: SQLite
	// serves one process.
	Role string
	Log  *slog.Logger

	// Conductor holds the conductor's tunables (workers, timeouts, power
	// sync, limits); Serve fills in its store, drivers, host and logger.
	Conductor       conductor.Config
	ShutdownTimeout time.Duration // grace for running work on SIGTERM
	// Events configures the watch stream's broker (ring size, per-reader
	// buffer, heartbeat interval); zero values take its defaults.
	Events eventbus.Config
	// Ready, if set, is called with the bound address once serving.
	Ready func(addr string)
	// Hurry, once shutdown has begun, cuts the grace short when it is
	// closed (a second Ctrl-C): running work is interrupted at once and
	// recorded as the conductor records interrupted work.
	Hurry <-chan struct{}

	// Interfaces is the operator's choice of enabled hardware types and
	// interfaces (--enabled-*, --default-*); unset parts take the defaults.
	Interfaces driver.Enablement
	// Boot is the boot service the ipxe and pxe boot interfaces publish on;
	// nil leaves them failing validation (network boot is not configured).
	Boot pxe.Publisher
	// ISO builds and serves redfish-virtual-media's ISOs; nil with Boot nil
	// and Network.HTTPURL set takes the boot endpoint's.
	ISO redfish.ISOPublisher
	// KernelParams is the default kernel command line addition for network
	// and virtual media booted ramdisks.
	KernelParams string
	// DeployLogsPath, when set, receives the agent's system logs after a
	// failed agent command (Ironic's [agent]deploy_logs_local_path with
	// deploy_logs_collect=on_failure).
	DeployLogsPath string
	// OCIVerifyCA is Ironic's [oci]verify_ca for registries of oci://
	// images: "" or true (the system's roots), false, or a CA bundle.
	OCIVerifyCA string
	// OCIAllowHTTP is Ironic's [oci]permit_fallback_to_http_transport.
	OCIAllowHTTP bool
	// AllowMD5 is Ironic's [agent]allow_md5_checksum: md5 image checksums
	// are accepted, by the direct deploy and by the boot service's image
	// cache alike (refused by default).
	AllowMD5 bool
	// DeployLogsCollect is Ironic's [agent]deploy_logs_collect: on_failure
	// (""), always or never.
	DeployLogsCollect string
	// IPMI tunes the ipmi driver (retries, spacing); its Calls is set by
	// Serve.
	IPMI ipmi.Config
	// Network, when its HTTPURL is set and Boot is nil, runs the network
	// boot endpoint on the API listener and publishes on it.
	Network BootConfig
	// Limits bounds what clients can hold of the listener (timeouts, open
	// connections); zero values take the defaults.
	Limits Limits
	// Security is authentication, the Host allow-list and TLS.
	Security Security
	// ConsoleRecheck is how often a console viewer's dashboard session is
	// re-checked, so that a logout ends it (api.DefaultConsoleRecheck when 0).
	ConsoleRecheck time.Duration
}

// The roles of `anvil serve --role`.
const (
	RoleAll       = "all"
	RoleConductor = "conductor"
	RoleAPI       = "api"
)

// checkRole refuses a role the database or this build cannot serve.
func checkRole(role, database string) error {
	switch role {
	case "", RoleAll:
		return nil
	case RoleConductor, RoleAPI:
		if !storeopen.IsPostgres(database) {
			return fmt.Errorf("--role %s needs a postgres:// --database: SQLite serves one process, which runs --role all", role)
		}
		return nil
	}
	return fmt.Errorf("--role must be all, conductor or api, not %q", role)
}

// Serve runs the API and a conductor until ctx ends, then shuts down cleanly:
// no new requests, running work finishes or is recorded, locks released.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	// Every log line of the server is masked, whoever built the logger.
	cfg.Log = slog.New(secret.Handler(cfg.Log.Handler()))
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if err := checkRole(cfg.Role, cfg.Database); err != nil {
		return err
	}
	if err := checkAdvertise(cfg.AdvertiseURL); err != nil {
		return err
	}
	var (
		bootPrefix string
		bootH      http.Handler
		err        error
	)
	bootCtx, stopBoot := context.WithCancel(context.Background())
	defer stopBoot()
	bootErr := make(chan error, 1)
	if cfg.Boot == nil && cfg.Network.HTTPURL != "" {
		var pub bootPublisher
		if !storeopen.IsPostgres(cfg.Database) {
			// The SQLite database holds every BMC password: no allowed
			// directory of local images may contain it.
			cfg.Network.Private = append(cfg.Network.Private, cfg.Database)
		}
		cfg.Network.AllowMD5 = cfg.AllowMD5
		if pub, bootPrefix, bootH, err = newBoot(bootCtx, cfg.Network, cfg.Log, bootErr); err != nil {
			return fmt.Errorf("network boot: %w", err)
		}
		cfg.Boot = pub
		if cfg.ISO == nil {
			cfg.ISO = pub
		}
	}
	if err := direct.CheckCollect(cfg.DeployLogsCollect); err != nil {
		return fmt.Errorf("--deploy-logs-collect: %w", err)
	}
	ociHTTP, err := oci.HTTPClient(cfg.OCIVerifyCA)
	if err != nil {
		return err
	}
	// What a failed node's diagnosis gathers in this process: the BMC
	// calls (ipmi, redfish), the boot services' record, the console recording
	// (below) and the agent's saved logs.
	calls := recent.New[model.BMCCall](bmcCallsKept, bmcCallNodes)
	ipmiCfg := cfg.IPMI
	ipmiCfg.Calls = calls
	// One Redfish driver for the process: its sessions (one per BMC
	// account) are logged out when the conductor has stopped.
	rf := redfish.New(redfish.Config{Calls: calls, Log: cfg.Log.With("component", "redfish")})
	reg, err := hardware.BuildRegistry(hardware.Drivers{Fake: fake.New(), Boot: cfg.Boot, ISO: cfg.ISO, KernelParams: cfg.KernelParams, Interfaces: cfg.Interfaces,
		IPMI: ipmi.New(ipmiCfg), Redfish: rf,
		Agent: direct.Config{LogsDir: cfg.DeployLogsPath, LogsCollect: cfg.DeployLogsCollect, AllowMD5: cfg.AllowMD5,
			OCI: oci.NewClient(oci.Config{HTTP: ociHTTP, AllowHTTP: cfg.OCIAllowHTTP})}})
	if err != nil {
		return fmt.Errorf("drivers: %w", err)
	}
	db, err := storeopen.Open(ctx, cfg.Database)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	claim, err := claimHost(ctx, db, cfg.Database, cfg.HostID, cmp.Or(cfg.Conductor.HeartbeatInterval, 10*time.Second))
	if err != nil {
		return err
	}
	defer claim.Release()
	// Every node write goes through st: it is published on the broker (the
	// watch stream and the transition metrics) and its lock attempts counted.
	// On PostgreSQL it goes to the log processes share, which every process
	// serving the API follows into its broker.
	broker, sink, stopEvents, err := openEvents(ctx, cfg)
	if err != nil {
		return err
	}
	defer stopEvents()
	defer broker.Close()
	mx := metrics.New(metrics.Config{Store: db, Broker: broker, Log: cfg.Log, Process: true})
	st := eventbus.StoreVia(mx.Store(db), broker, sink)
	ccfg := cfg.Conductor
	// From flags, 0 means "disabled" (Ironic's meaning); the conductor reads
	// 0 as "default" and a negative interval as "disabled".
	for _, d := range []*time.Duration{&ccfg.SyncPowerStateInterval, &ccfg.CheckProvisionStateInterval} {
		if *d == 0 {
			*d = -1
		}
	}
	ccfg.Store, ccfg.Drivers, ccfg.Host, ccfg.Log = st, reg, cfg.HostID, cfg.Log
	ccfg.Recorder = mx
	var consoleSvc atomic.Pointer[console.Service] // set below, read by failures' diagnoses
	ccfg.Diagnosis = diagnosisSources(cfg, calls, consoleSvc.Load)
	cond, err := conductor.New(ccfg)
	if err != nil {
		return err
	}
	cctx, stopConductor := context.WithCancel(context.Background())
	defer stopConductor()
	mx.AddPool(cond)
	mx.AddPowerSync(func() metrics.PowerSync {
		r := cond.PowerSync().Report()
		return metrics.PowerSync{Sweeps: r.Sweeps, Reads: r.Reads, FailedReads: r.FailedReads, LastDuration: r.LastDuration}
	})
	var apiCond any = cond
	if cfg.Role == RoleAPI {
		err = cond.StartAPIOnly(cctx)
	} else {
		err = cond.Start(cctx)
	}
	if err != nil {
		return err
	}
	// A conductor's consoles, and the tickets by which API processes'
	// viewers attach to them (the relay's address is known once the
	// listener is bound).
	var (
		consoles  *console.Service
		tickets   *console.Tickets
		relayBase atomic.Pointer[string]
		relay     func(ctx context.Context, n *model.Node) (string, string, error)
		relayLog  func(ctx context.Context, n *model.Node, tail int) ([]byte, bool, error)
	)
	if cfg.Role != RoleAPI {
		consoles = console.New(console.Config{Log: cfg.Log})
		consoleSvc.Store(consoles)
		tickets = console.NewTickets(nil)
	}
	// On PostgreSQL, conductors take the calls API processes hand them.
	if storeopen.IsPostgres(cfg.Database) {
		q, err := workq.Open(ctx, cfg.Database, cfg.Log)
		if err != nil {
			return err
		}
		defer q.Close()
		if cfg.Role == RoleAPI {
			hc := handoff.New(handoff.Config{Local: cond, Queue: q, Store: st,
				DeadAfter: cmp.Or(ccfg.ConductorDeadAfter, time.Minute), Partitions: ccfg.HashPartitions})
			apiCond = hc
			relay = func(ctx context.Context, n *model.Node) (string, string, error) {
				a, err := hc.ConsoleAccess(ctx, n)
				return a.URL, a.Ticket, err
			}
			relayLog = hc.ConsoleLog
		} else {
			grant := ownedConsoles{svc: consoles, tickets: tickets, base: &relayBase}
			served := make(chan struct{})
			go func() {
				defer close(served)
				_ = q.Serve(cctx, cfg.HostID, handoff.Handler(cond, grant), time.Second)
			}()
			defer func() { stopConductor(); <-served }()
		}
	}
	// The conductor holds the consoles of the nodes it owns (console
	// enabled, or recorded while the machine cleans, deploys...): at once
	// for its own writes (the broker), within a sweep for other processes'.
	if consoles != nil {
		ctl := console.NewController(consoles, cond.Consoles(), 0, cfg.Log)
		broker.Observe(func(e events.Event) {
			if e.Node != "" {
				ctl.Kick(e.Node)
			}
		})
		consoled := make(chan struct{})
		go func() { defer close(consoled); ctl.Run(cctx) }()
		defer func() { stopConductor(); <-consoled }()
	}
	dash, err := dashboard.New()
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--listen %s: the address is in use (another anvil serve or demo?); stop it or pick another with --listen: %w", cfg.Listen, err)
		}
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	lim := cfg.Limits.withDefaults()
	auditLog, closeAudit, err := openAudit(cfg.Security.AuditLog, cfg.Log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer closeAudit()
	// The API's "alive" is the conductors' own test, with their timeout.
	pol := policy.Default()
	apiH := api.New(api.Wire(api.Config{Logger: cfg.Log, Policy: pol, Console: consoles, ConsoleRelay: relay, ConsoleLogRelay: relayLog, ConsoleRecheck: cfg.ConsoleRecheck,
		ConductorAliveWindow: cmp.Or(ccfg.ConductorDeadAfter, time.Minute), MaxStreamsPerClient: lim.MaxStreamsPerClient, MaxStreams: lim.MaxStreams},
		st, apiCond, cond.Nodes(), cond.Allocations(), cond.Agents(), cond.Management(), cond.NodeRecords(), cond.Hardware(),
		records.New(st, nil, cfg.Log)))
	metricsH := policyGuard(mx.Handler(), pol, "anvil:metrics:get")
	var relayH http.Handler
	if consoles != nil {
		relayH = api.ConsoleRelay(consoles, tickets)
	}
	inner := handler(apiH, mx, metricsH, bootPrefix, bootH, dash, relayH)
	if cfg.Role == RoleConductor {
		inner = conductorOnly(metricsH, relayH)
	}
	h, err := guard(ctx, inner, cfg, bootPrefix, auditLog, st.Sessions())
	var (
		sln    net.Listener
		reload func() error
	)
	if err == nil {
		sln, reload, err = secureListener(ln, cfg.Security, cfg.Log)
	}
	if err != nil {
		_ = ln.Close()
		return err
	}
	capped := newConnCap(sln, lim.MaxConnections, lim.MaxConnectionsPerAddress)
	ln = capped
	if reload != nil {
		reloadOnHUP(ctx, reload, cfg.Log)
	}
	srv := newHTTPServer(withLimits(pace(h, lim, capped), bootPrefix, lim), lim)
	srv.ErrorLog = slog.NewLogLogger(cfg.Log.Handler(), slog.LevelInfo) // TLS handshake failures and the like
	srv.ConnState = capped.track
	srv.ConnContext = capped.connContext
	// Open watch streams end when shutdown begins, or Shutdown would wait
	// for them until its deadline.
	srv.RegisterOnShutdown(broker.Close)
	errc := make(chan error, 1)
	base := advertised(cfg.AdvertiseURL, ln.Addr(), cfg.Security.TLSCertFile != "")
	relayBase.Store(&base)
	go func() { errc <- srv.Serve(ln) }()
	var lost error // set when the conductor name's claim is lost
	cfg.Log.Info("anvil serving", "listen", ln.Addr().String(), "host", cfg.HostID, "role", cmp.Or(cfg.Role, RoleAll), "conductor_group", ccfg.Group)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case err := <-bootErr:
		return fmt.Errorf("network boot: %w", err)
	case <-ctx.Done():
	case <-claim.Lost():
		// Another process may claim the name now: stop being this conductor.
		lost = fmt.Errorf("lost the claim on conductor name %q (its database session ended); shut down so that two processes never run as one", cfg.HostID)
		cfg.Log.Error("conductor name claim lost", "host", cfg.HostID)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	stopWatch := watchShutdown(sctx, cancel, cfg, cond, st)
	defer stopWatch()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		cfg.Log.Warn("http shutdown", "err", err)
	}
	err = cond.Shutdown(sctx)
	stopConductor()
	// The BMC sessions are ended on a budget of their own: a shutdown
	// whose grace went to running work still logs out of its BMCs.
	lctx, lcancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	rf.Logout(lctx)
	lcancel()
	err = errors.Join(lost, err)
	if err == nil {
		cfg.Log.Info("shut down")
	}
	return err
}

// openEvents makes the broker of the watch stream and the sink of the
// store decorator. With SQLite they are one: the in-process broker. With
// PostgreSQL the sink is the shared event log (internal/eventlog) and,
// unless the process runs the conductor only, a follower relays the log
// into the broker. stop ends the follower and closes the log once the
// conductor's last write is in.
func openEvents(ctx context.Context, cfg Config) (*eventbus.Broker, eventbus.Sink, func(), error) {
	if !storeopen.IsPostgres(cfg.Database) {
		b := eventbus.NewBroker(cfg.Events)
		return b, b, func() {}, nil
	}
	lg, err := eventlog.Open(ctx, eventlog.Config{DSN: cfg.Database, Log: cfg.Log, Keep: max(20000, 2*cfg.Events.Buffer)})
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Role == RoleConductor {
		// Nobody reads its stream: its broker takes its own events, so that
		// its /metrics counts its own transitions (the API processes count
		// everyone's).
		b := eventbus.NewBroker(cfg.Events)
		return b, teeSink{lg, b}, func() { _ = lg.Close() }, nil
	}
	b, err := lg.NewBroker(ctx, cfg.Events)
	if err != nil {
		_ = lg.Close()
		return nil, nil, nil, err
	}
	fctx, stopFollow := context.WithCancel(context.Background())
	followed := make(chan struct{})
	go func() { defer close(followed); lg.Follow(fctx, b) }()
	return b, lg, func() {
		stopFollow()
		<-followed
		_ = lg.Close()
	}, nil
}

// teeSink publishes on a local broker and appends to the shared log.
type teeSink struct {
	log   eventbus.Sink
	local *eventbus.Broker
}

func (t teeSink) Append(e events.Event) func() {
	t.local.Publish(e)
	return t.log.Append(e)
}

// claimHost holds the conductor name host on database for the life of the
// process, or explains which live process has it.
func claimHost(ctx context.Context, db store.Store, database, host string, check time.Duration) (*hostlock.Claim, error) {
	claim, err := hostlock.Acquire(ctx, database, host, check)
	if !errors.Is(err, hostlock.ErrHeld) {
		return claim, err
	}
	last := "unknown"
	if c, gerr := db.Conductors().GetConductor(ctx, host); gerr == nil {
		last = c.UpdatedAt.UTC().Format(time.RFC3339)
	}
	return nil, fmt.Errorf("conductor %q is already running on this database (last heartbeat %s); stop it or start this process with a distinct --host-id", host, last)
}

// conductorOnly is the listener of a conductor-only process: /metrics, and
// a one-line answer on / so that probes see it up; no Ironic API.
func conductorOnly(metricsH, relayH http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if relayH != nil && strings.HasPrefix(r.URL.Path, api.ConsoleRelayPrefix) {
			relayH.ServeHTTP(w, r)
			return
		}
		switch r.URL.Path {
		case "/metrics":
			metricsH.ServeHTTP(w, r)
		case "/":
			_, _ = io.WriteString(w, "anvil conductor (no API in --role conductor)\n")
		default:
			http.NotFound(w, r)
		}
	})
}

// handler serves /metrics, the boot endpoint (bootH under bootPrefix, when
// set), the dashboard (a browser's GET / is sent there) and, instrumented,
// the API.
func handler(apiH *api.Server, mx *metrics.Metrics, metricsH http.Handler, bootPrefix string, bootH http.Handler, dash *dashboard.Handler, relayH http.Handler) http.Handler {
	instrumented := mx.Instrument(apiH, apiH.Route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if relayH != nil && strings.HasPrefix(r.URL.Path, api.ConsoleRelayPrefix) {
			relayH.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/metrics" {
			metricsH.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/" && dashboard.WantsHTML(r) {
			dashboard.RedirectRoot(w, r)
			return
		}
		if r.URL.Path == dashboard.Path || strings.HasPrefix(r.URL.Path, dashboard.Path+"/") {
			dash.ServeHTTP(w, r)
			return
		}
		if bootH != nil && strings.HasPrefix(r.URL.Path, bootPrefix+"/") {
			bootH.ServeHTTP(w, r)
			return
		}
		instrumented.ServeHTTP(w, r)
	})
}
