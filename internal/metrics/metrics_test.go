package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/pkg/events"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func newTestMetrics(t testing.TB) (*Metrics, store.Store, *eventbus.Broker) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := eventbus.NewBroker(eventbus.Config{IDBase: 1})
	m := New(Config{Store: st, Broker: b, Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return m, st, b
}

// scrape fetches h and parses it with Prometheus' text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
	}
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return fams
}

// value returns the value of the series of family name whose labels
// include the given name=value pairs; ok is false if there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func TestNodeGauges(t *testing.T) {
	m, st, _ := newTestMetrics(t)
	ctx := context.Background()
	nodes := []*model.Node{
		{ProvisionState: "enroll"},
		{ProvisionState: "enroll", PowerState: "power off"},
		{ProvisionState: "active", PowerState: "power on", Maintenance: true, Fault: "power failure"},
		{ProvisionState: "wait call-back", PowerState: "power on", ProvisionUpdatedAt: t0.Add(-90 * time.Second)},
		{ProvisionState: "wait call-back", PowerState: "power on", ProvisionUpdatedAt: t0.Add(-30 * time.Second)},
		{ProvisionState: "clean wait", PowerState: "power on", ProvisionUpdatedAt: t0.Add(-5 * time.Second)},
	}
	for _, n := range nodes {
		n.Driver = "fake-hardware"
		if err := st.Nodes().CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Nodes().ReserveNode(ctx, nodes[0].UUID, "c1"); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m.Handler())
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"anvil_nodes", []string{"provision_state", "enroll"}, 2},
		{"anvil_nodes", []string{"provision_state", "active"}, 1},
		{"anvil_nodes", []string{"provision_state", "wait call-back"}, 2},
		{"anvil_nodes", []string{"provision_state", "available"}, 0},
		{"anvil_nodes_by_power_state", []string{"power_state", "power on"}, 4},
		{"anvil_nodes_by_power_state", []string{"power_state", "power off"}, 1},
		{"anvil_nodes_by_power_state", []string{"power_state", "none"}, 1},
		{"anvil_nodes_by_power_state", []string{"power_state", "error"}, 0},
		{"anvil_nodes_maintenance", nil, 1},
		{"anvil_nodes_by_fault", []string{"fault", "power failure"}, 1},
		{"anvil_nodes_by_fault", []string{"fault", "clean failure"}, 0},
		{"anvil_nodes_locked", nil, 1},
		{"anvil_nodes_wait_state_oldest_seconds", []string{"provision_state", "wait call-back"}, 90},
		{"anvil_nodes_wait_state_oldest_seconds", []string{"provision_state", "clean wait"}, 5},
		{"anvil_nodes_wait_state_oldest_seconds", []string{"provision_state", "inspect wait"}, 0},
	}
	for _, tt := range tests {
		got, ok := value(fams, tt.name, tt.labels...)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if n := len(fams["anvil_nodes"].GetMetric()); n != 30 {
		t.Errorf("anvil_nodes has %d series, want one per provision state (30)", n)
	}
}

func TestTransitions(t *testing.T) {
	m, _, b := newTestMetrics(t)
	hist := func(from, to string, d time.Duration, sev string) {
		b.Publish(events.Event{Type: events.TypeHistory, Node: "u1", History: &events.History{
			Severity: sev, EventType: "provisioning", FromState: from, ToState: to, Duration: d.Seconds()}})
	}
	hist("available", "deploying", 10*time.Minute, model.SeverityInfo)
	hist("deploying", "wait call-back", 20*time.Second, model.SeverityInfo)
	hist("wait call-back", "deploy failed", 40*time.Minute, model.SeverityError)
	hist("", "enroll", 0, model.SeverityInfo) // a creation: no transition
	b.Publish(events.Event{Type: events.TypeHistory, Node: "u1", History: &events.History{
		Severity: model.SeverityError, EventType: "power", Event: "BMC gone"}})
	b.Publish(events.Event{Type: events.TypeUpdated, Node: "u1", Changed: []string{"provision_state"}})
	fams := scrape(t, m.Handler())
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"anvil_provision_transitions_total", []string{"from", "available", "to", "deploying"}, 1},
		{"anvil_provision_transitions_total", []string{"from", "wait call-back", "to", "deploy failed"}, 1},
		{"anvil_provision_state_duration_seconds", []string{"state", "available"}, 1},
		{"anvil_provision_state_duration_seconds", []string{"state", "wait call-back"}, 1},
		{"anvil_provision_failures_total", []string{"from", "wait call-back", "state", "deploy failed"}, 1},
		{"anvil_node_history_errors_total", []string{"event_type", "provisioning"}, 1},
		{"anvil_node_history_errors_total", []string{"event_type", "power"}, 1},
		{"anvil_events_published_total", nil, 6},
	}
	for _, tt := range tests {
		got, ok := value(fams, tt.name, tt.labels...)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if n := len(fams["anvil_provision_transitions_total"].GetMetric()); n != 3 {
		t.Errorf("%d transition series, want 3", n)
	}
	// 40 minutes in wait call-back lands in the 3600 s bucket, not 1800 s.
	for _, mm := range fams["anvil_provision_state_duration_seconds"].GetMetric() {
		if mm.GetLabel()[0].GetValue() != "wait call-back" {
			continue
		}
		for _, bk := range mm.GetHistogram().GetBucket() {
			want := map[float64]uint64{1800: 0, 3600: 1}
			if w, ok := want[bk.GetUpperBound()]; ok && bk.GetCumulativeCount() != w {
				t.Errorf("bucket %v has %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), w)
			}
		}
	}
}

func TestInstrument(t *testing.T) {
	m, _, _ := newTestMetrics(t)
	route := func(r *http.Request) string {
		if strings.HasPrefix(r.URL.Path, "/v1/nodes/") {
			return "/v1/nodes/{ident}"
		}
		if r.URL.Path == "/stream" {
			return "/stream"
		}
		return ""
	}
	h := m.Instrument(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/nodes/missing":
			w.WriteHeader(404)
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(": hi\n\n"))
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush through the recorder: %v", err)
			}
		default:
			_, _ = w.Write([]byte("{}"))
		}
	}), route)
	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/nodes/a"}, {"GET", "/v1/nodes/b"}, {"GET", "/v1/nodes/missing"},
		{"BREW", "/v1/nodes/c"}, {"GET", "/stream"}, {"GET", "/elsewhere"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	fams := scrape(t, m.Handler())
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"anvil_api_requests_total", []string{"route", "/v1/nodes/{ident}", "method", "GET", "status", "200"}, 2},
		{"anvil_api_requests_total", []string{"route", "/v1/nodes/{ident}", "method", "GET", "status", "404"}, 1},
		{"anvil_api_requests_total", []string{"route", "/v1/nodes/{ident}", "method", "other", "status", "200"}, 1},
		{"anvil_api_requests_total", []string{"route", "/stream", "method", "GET", "status", "200"}, 1},
		{"anvil_api_requests_total", []string{"route", "other", "method", "GET", "status", "200"}, 1},
		{"anvil_api_request_duration_seconds", []string{"route", "/v1/nodes/{ident}", "method", "GET", "status", "200"}, 2},
	}
	for _, tt := range tests {
		got, ok := value(fams, tt.name, tt.labels...)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := value(fams, "anvil_api_request_duration_seconds", "route", "/stream"); ok {
		t.Error("a stream was timed")
	}
}

type fakePool struct{ busy, size int }

func (p fakePool) Workers() (int, int) { return p.busy, p.size }

func TestLocksAndPool(t *testing.T) {
	m, st, _ := newTestMetrics(t)
	ctx := context.Background()
	m.AddPool(fakePool{busy: 3, size: 100})
	ls := m.Store(st)
	n := &model.Node{Driver: "fake-hardware", ProvisionState: "enroll"}
	if err := ls.Nodes().CreateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Nodes().ReserveNode(ctx, n.UUID, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Nodes().ReserveNode(ctx, n.UUID, "c2"); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	if _, err := ls.Nodes().ReserveNode(ctx, "00000000-0000-4000-8000-000000000000", "c1"); err == nil {
		t.Fatal("locked a missing node")
	}
	m.LockWait(1500*time.Millisecond, true)
	m.LockWait(3*time.Second, false)
	fams := scrape(t, m.Handler())
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"anvil_node_lock_attempts_total", []string{"result", "acquired"}, 1},
		{"anvil_node_lock_attempts_total", []string{"result", "locked"}, 1},
		{"anvil_node_lock_attempts_total", []string{"result", "error"}, 1},
		{"anvil_node_lock_wait_seconds", []string{"result", "acquired"}, 1},
		{"anvil_node_lock_wait_seconds", []string{"result", "locked"}, 1},
		{"anvil_conductor_workers_busy", nil, 3},
		{"anvil_conductor_workers", nil, 100},
	}
	for _, tt := range tests {
		got, ok := value(fams, tt.name, tt.labels...)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
}

// failingStore fails the node reads the gauges could use.
type failingStore struct{ store.Store }

func (s failingStore) Nodes() store.NodeStore { return failingNodes{s.Store.Nodes()} }

type failingNodes struct{ store.NodeStore }

func (failingNodes) ListNodes(context.Context, store.NodeQuery) ([]*model.Node, error) {
	return nil, errors.New("database on fire")
}

func (failingNodes) CountNodeGroups(context.Context, store.NodeQuery) ([]store.NodeGroup, error) {
	return nil, errors.New("database on fire")
}

func TestScrapeSurvivesStoreError(t *testing.T) {
	_, st, _ := newTestMetrics(t)
	m := New(Config{Store: failingStore{st}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m.LockWait(time.Second, true)
	fams := scrape(t, m.Handler())
	if _, ok := fams["anvil_nodes"]; ok {
		t.Error("node gauges served without a store")
	}
	if v, ok := value(fams, "anvil_node_lock_wait_seconds", "result", "acquired"); !ok || v != 1 {
		t.Error("other metrics not served")
	}
}

func TestPowerSyncMetrics(t *testing.T) {
	m, _, _ := newTestMetrics(t)
	m.AddPowerSync(func() PowerSync {
		return PowerSync{Sweeps: 4, Reads: 2000, FailedReads: 7, LastDuration: 1500 * time.Millisecond}
	})
	fams := scrape(t, m.Handler())
	for name, want := range map[string]float64{
		"anvil_power_sync_sweeps_total": 4, "anvil_power_sync_reads_total": 2000,
		"anvil_power_sync_failed_reads_total": 7, "anvil_power_sync_last_sweep_duration_seconds": 1.5,
	} {
		if got, ok := value(fams, name); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}
