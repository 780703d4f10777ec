package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PowerSync is what the conductor's power sync has done since it started.
type PowerSync struct {
	Sweeps, Reads, FailedReads int64
	LastDuration               time.Duration // of the last finished sweep
}

// AddPowerSync reports the conductor's power-sync sweeps from report
// (anvil_power_sync_sweeps_total, anvil_power_sync_reads_total,
// anvil_power_sync_failed_reads_total,
// anvil_power_sync_last_sweep_duration_seconds). Call it once.
func (m *Metrics) AddPowerSync(report func() PowerSync) {
	m.reg.MustRegister(powerSyncCollector(report))
}

type powerSyncCollector func() PowerSync

var (
	descSyncSweeps = prometheus.NewDesc(namespace+"_power_sync_sweeps_total",
		"Power-sync sweeps finished by this conductor.", nil, nil)
	descSyncReads = prometheus.NewDesc(namespace+"_power_sync_reads_total",
		"Power state reads made by power sync.", nil, nil)
	descSyncFailed = prometheus.NewDesc(namespace+"_power_sync_failed_reads_total",
		"Power state reads by power sync that failed (the BMC did not answer, refused or erred).", nil, nil)
	descSyncLast = prometheus.NewDesc(namespace+"_power_sync_last_sweep_duration_seconds",
		"How long the last finished power-sync sweep took.", nil, nil)
)

func (c powerSyncCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSyncSweeps, descSyncReads, descSyncFailed, descSyncLast} {
		ch <- d
	}
}

func (c powerSyncCollector) Collect(ch chan<- prometheus.Metric) {
	s := c()
	ch <- prometheus.MustNewConstMetric(descSyncSweeps, prometheus.CounterValue, float64(s.Sweeps))
	ch <- prometheus.MustNewConstMetric(descSyncReads, prometheus.CounterValue, float64(s.Reads))
	ch <- prometheus.MustNewConstMetric(descSyncFailed, prometheus.CounterValue, float64(s.FailedReads))
	ch <- prometheus.MustNewConstMetric(descSyncLast, prometheus.GaugeValue, s.LastDuration.Seconds())
}
