package metrics

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/store"
)

// namespace prefixes every metric name.
const namespace = "anvil"

// Pool reports a worker pool's use: running workers and the pool's size.
type Pool interface {
	Workers() (busy, size int)
}

// Recorder is what the conductor reports that the store cannot show:
// how long acquiring a node lock took, retries included. *Metrics
// implements it.
type Recorder interface {
	LockWait(wait time.Duration, acquired bool)
}

var _ Recorder = (*Metrics)(nil)

// Config configures Metrics. Store is required; the rest is optional.
type Config struct {
	Store store.Store // nodes are counted from it at scrape time
	// Broker feeds transition metrics (its node.history events) and the
	// stream's own counters.
	Broker *eventbus.Broker
	Log    *slog.Logger
	Now    func() time.Time
	// ScrapeTimeout bounds the store queries of one scrape (10 s).
	ScrapeTimeout time.Duration
	// Process adds the Go runtime and process collectors (true in servers,
	// false in tests that compare exact output).
	Process bool
}

// Metrics owns a Prometheus registry and Anvil's metrics in it.
type Metrics struct {
	cfg Config
	reg *prometheus.Registry

	transitions *prometheus.CounterVec
	inState     *prometheus.HistogramVec
	failures    *prometheus.CounterVec
	errors      *prometheus.CounterVec

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	lockAttempts *prometheus.CounterVec
	lockWait     *prometheus.HistogramVec
}

// New builds the metrics and registers them; with a Broker it observes it.
func New(cfg Config) *Metrics {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ScrapeTimeout <= 0 {
		cfg.ScrapeTimeout = 10 * time.Second
	}
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry()}
	m.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "provision_transitions_total",
		Help: "Provision state transitions, by state left and state entered."}, []string{"from", "to"})
	m.inState = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace,
		Name:    "provision_state_duration_seconds",
		Help:    "Time nodes spent in a provision state, observed when they leave it.",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400, 604800},
	}, []string{"state"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "provision_failures_total",
		Help: "Transitions into a failure state (state), by the state the operation failed in (from)."},
		[]string{"from", "state"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "node_history_errors_total",
		Help: "Node history entries of severity ERROR, by event type."}, []string{"event_type"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "api_requests_total",
		Help: "API requests, by route pattern, method and status (event streams included)."},
		[]string{"route", "method", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace,
		Name:    "api_request_duration_seconds",
		Help:    "API request latency, by route pattern, method and status (event streams excluded).",
		Buckets: prometheus.DefBuckets}, []string{"route", "method", "status"})
	m.lockAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "node_lock_attempts_total",
		Help: "Attempts to take a node lock (reservation), by result: acquired, locked (held by another), error."},
		[]string{"result"})
	m.lockWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace,
		Name:    "node_lock_wait_seconds",
		Help:    "Time the conductor waited for a node lock, retries included, by result: acquired or locked (gave up).",
		Buckets: []float64{0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60}}, []string{"result"})
	m.reg.MustRegister(m.transitions, m.inState, m.failures, m.errors, m.requests, m.latency,
		m.lockAttempts, m.lockWait, &nodeCollector{m: m})
	if cfg.Broker != nil {
		m.reg.MustRegister(&brokerCollector{b: cfg.Broker})
		cfg.Broker.Observe(m.Observe)
	}
	if cfg.Process {
		m.reg.MustRegister(collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Registry is the registry the metrics live in (to add more).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus' formats. A failed store query
// is logged and leaves the node gauges out; the rest is still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.cfg.Log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// AddPool reports p's use as the conductor's worker pool
// (anvil_conductor_workers_busy, anvil_conductor_workers). Call it once.
func (m *Metrics) AddPool(p Pool) {
	m.reg.MustRegister(&poolCollector{p: p})
}

// LockWait records how long the conductor waited for a node lock, retries
// included, and whether it got it. (A hook for the conductor's acquire.)
func (m *Metrics) LockWait(wait time.Duration, acquired bool) {
	result := "acquired"
	if !acquired {
		result = "locked"
	}
	m.lockWait.WithLabelValues(result).Observe(wait.Seconds())
}
