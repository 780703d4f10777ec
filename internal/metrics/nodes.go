package metrics

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/store"
)

// powerNone labels nodes whose power state is unknown (Ironic's null).
const powerNone = "none"

var (
	descNodes = prometheus.NewDesc(namespace+"_nodes",
		"Nodes by provision state.", []string{"provision_state"}, nil)
	descPower = prometheus.NewDesc(namespace+"_nodes_by_power_state",
		`Nodes by power state ("none": unknown).`, []string{"power_state"}, nil)
	descMaintenance = prometheus.NewDesc(namespace+"_nodes_maintenance",
		"Nodes in maintenance.", nil, nil)
	descFault = prometheus.NewDesc(namespace+"_nodes_by_fault",
		"Nodes with a fault, by fault.", []string{"fault"}, nil)
	descLocked = prometheus.NewDesc(namespace+"_nodes_locked",
		"Nodes whose lock (reservation) is held.", nil, nil)
	descWaitAge = prometheus.NewDesc(namespace+"_nodes_wait_state_oldest_seconds",
		"Time the oldest node in each wait state has been in it (0: none there).", []string{"provision_state"}, nil)
	descScrape = prometheus.NewDesc(namespace+"_nodes_scrape_duration_seconds",
		"Time the node gauges took to compute.", nil, nil)
)

// knownPowerStates and knownFaults are reported even at zero.
var (
	knownPowerStates = []string{fsm.PowerOn, fsm.PowerOff, fsm.PowerError, powerNone}
	knownFaults      = []string{"power failure", "clean failure", "rescue abort failure", "service failure"}
)

// nodeCollector computes the node gauges from one grouped count of the
// nodes (store.CountNodeGroups: SQL GROUP BY, no node is read), so a scrape
// costs the same at 100 nodes as at 100,000 in memory.
type nodeCollector struct{ m *Metrics }

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNodes, descPower, descMaintenance, descFault, descLocked, descWaitAge, descScrape} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	start := c.m.cfg.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.m.cfg.ScrapeTimeout)
	defer cancel()
	groups, err := c.m.cfg.Store.Nodes().CountNodeGroups(ctx, store.NodeQuery{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descNodes, err)
		return
	}
	counts := countNodes(groups, start)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range sortedKeys(counts.provision) {
		gauge(descNodes, float64(counts.provision[s]), s)
	}
	for _, s := range sortedKeys(counts.power) {
		gauge(descPower, float64(counts.power[s]), s)
	}
	for _, s := range sortedKeys(counts.fault) {
		gauge(descFault, float64(counts.fault[s]), s)
	}
	for _, s := range sortedKeys(counts.waitAge) {
		gauge(descWaitAge, counts.waitAge[s], s)
	}
	gauge(descMaintenance, float64(counts.maintenance))
	gauge(descLocked, float64(counts.locked))
	gauge(descScrape, c.m.cfg.Now().Sub(start).Seconds())
}

// nodeCounts are the node gauges' values.
type nodeCounts struct {
	provision, power, fault map[string]int
	waitAge                 map[string]float64 // seconds
	maintenance, locked     int
}

// countNodes computes the gauges at time now from the node groups; every
// provision state, known power state, known fault and wait state is
// present, at zero if need be.
func countNodes(groups []store.NodeGroup, now time.Time) nodeCounts {
	c := nodeCounts{provision: map[string]int{}, power: map[string]int{}, fault: map[string]int{},
		waitAge: map[string]float64{}}
	for _, s := range fsm.States() {
		c.provision[s.Name] = 0
		if fsm.IsWait(s.Name) {
			c.waitAge[s.Name] = 0
		}
	}
	for _, s := range knownPowerStates {
		c.power[s] = 0
	}
	for _, f := range knownFaults {
		c.fault[f] = 0
	}
	for _, g := range groups {
		c.provision[g.ProvisionState] += g.Count
		p := g.PowerState
		if p == "" {
			p = powerNone
		}
		c.power[p] += g.Count
		if g.Fault != "" {
			c.fault[g.Fault] += g.Count
		}
		if g.Maintenance {
			c.maintenance += g.Count
		}
		if g.Reservation != "" {
			c.locked += g.Count
		}
		if fsm.IsWait(g.ProvisionState) && !g.OldestProvisionUpdate.IsZero() {
			age := now.Sub(g.OldestProvisionUpdate).Seconds()
			c.waitAge[g.ProvisionState] = max(c.waitAge[g.ProvisionState], age)
		}
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// brokerCollector reports the event stream's counters.
type brokerCollector struct{ b *eventbus.Broker }

var (
	descPublished = prometheus.NewDesc(namespace+"_events_published_total",
		"Events published on the watch stream.", nil, nil)
	descSubscribers = prometheus.NewDesc(namespace+"_events_subscribers",
		"Open watch stream subscriptions.", nil, nil)
	descSubscriptions = prometheus.NewDesc(namespace+"_events_subscriptions_total",
		"Watch stream subscriptions opened.", nil, nil)
	descOverflows = prometheus.NewDesc(namespace+"_events_overflows_total",
		"Subscribers cut off because they fell behind.", nil, nil)
	descResets = prometheus.NewDesc(namespace+"_events_resets_total",
		"Resumes whose Last-Event-ID was no longer kept (answered with a reset).", nil, nil)
)

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPublished, descSubscribers, descSubscriptions, descOverflows, descResets} {
		ch <- d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.b.Stats()
	ch <- prometheus.MustNewConstMetric(descPublished, prometheus.CounterValue, float64(st.Published))
	ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(st.Subscribers))
	ch <- prometheus.MustNewConstMetric(descSubscriptions, prometheus.CounterValue, float64(st.Subscriptions))
	ch <- prometheus.MustNewConstMetric(descOverflows, prometheus.CounterValue, float64(st.Overflows))
	ch <- prometheus.MustNewConstMetric(descResets, prometheus.CounterValue, float64(st.Resets))
}

// poolCollector reports the conductor's worker pool.
type poolCollector struct{ p Pool }

var (
	descWorkersBusy = prometheus.NewDesc(namespace+"_conductor_workers_busy",
		"Conductor workers running.", nil, nil)
	descWorkersSize = prometheus.NewDesc(namespace+"_conductor_workers",
		"Conductor worker pool size.", nil, nil)
)

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWorkersBusy
	ch <- descWorkersSize
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	busy, size := c.p.Workers()
	ch <- prometheus.MustNewConstMetric(descWorkersBusy, prometheus.GaugeValue, float64(busy))
	ch <- prometheus.MustNewConstMetric(descWorkersSize, prometheus.GaugeValue, float64(size))
}
