package conductor

import (
	"sync"
	"sync/atomic"
	"time"
)

// powerSyncStats counts power-sync sweeps for operators (metrics, logs):
// how long the last one took, how many nodes it read and how many reads
// failed. Updated with atomics: a scrape never waits for a sweep.
type powerSyncStats struct {
	sweeps, reads, failed atomic.Int64
	lastNanos             atomic.Int64
	lastNodes, lastFailed atomic.Int64
}

// PowerSyncReport is what power sync has done since the conductor started:
// sweeps finished, power reads made and failed, and the last sweep's
// duration, nodes read and failed reads.
type PowerSyncReport struct {
	Sweeps, Reads, FailedReads int64
	LastDuration               time.Duration
	LastNodes, LastFailed      int64
}

// Report returns the power-sync counters.
func (svc *PowerSync) Report() PowerSyncReport {
	c := svc.c
	s := &c.syncStats
	return PowerSyncReport{Sweeps: s.sweeps.Load(), Reads: s.reads.Load(), FailedReads: s.failed.Load(),
		LastDuration: time.Duration(s.lastNanos.Load()), LastNodes: s.lastNodes.Load(), LastFailed: s.lastFailed.Load()}
}

// sweep counts the reads of one power-sync pass.
type sweep struct {
	start         time.Time
	nodes, failed atomic.Int64
}

// recoveryGate spaces the reads of nodes that power sync put into
// maintenance (fault "power failure"): one try per interval, as Ironic's
// power_failure_recovery_interval, instead of a full read with retries on
// every sweep.
type recoveryGate struct {
	mu   sync.Mutex
	last map[string]time.Time // node UUID → last recovery try
}

// due reports whether node uuid may be tried at now, and if so records the
// try.
func (g *recoveryGate) due(uuid string, now time.Time, interval time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = map[string]time.Time{}
	}
	if t, ok := g.last[uuid]; ok && now.Sub(t) < interval {
		return false
	}
	g.last[uuid] = now
	return true
}

// forget drops node uuid (it recovered or left maintenance).
func (g *recoveryGate) forget(uuid string) {
	g.mu.Lock()
	delete(g.last, uuid)
	g.mu.Unlock()
}
