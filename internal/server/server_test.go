package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/pkg/events"
)

// testTimeout bounds each wait; nothing waits for it to pass.
const testTimeout = 30 * time.Second

// served is a running `anvil serve`.
type served struct {
	t    testing.TB
	base string
	stop context.CancelFunc
	done chan error
}

func serve(t testing.TB) *served { t.Helper(); return serveWith(t, nil) }

// serveWith is serve with the configuration changed by mutate first.
func serveWith(t testing.TB, mutate func(*Config)) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	s := &served{t: t, stop: cancel, done: make(chan error, 1)}
	cfg := Config{Listen: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "anvil.db"), HostID: "test-host",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ShutdownTimeout: time.Minute,
		Conductor: conductor.Config{AutomatedClean: true},
		Ready:     func(a string) { addr <- a }}
	if mutate != nil {
		mutate(&cfg)
	}
	go func() { s.done <- Serve(ctx, cfg) }()
	select {
	case a := <-addr:
		s.base = "http://" + a
	case err := <-s.done:
		t.Fatalf("serve: %v", err)
	case <-time.After(testTimeout):
		t.Fatal("serve did not start")
	}
	t.Cleanup(func() { s.shutdown() })
	return s
}

// shutdown stops the server and returns how long Serve took to return.
func (s *served) shutdown() time.Duration {
	start := time.Now()
	s.stop()
	select {
	case err := <-s.done:
		if err != nil && err != http.ErrServerClosed {
			s.t.Errorf("serve: %v", err)
		}
		s.done <- nil // later calls return at once
	case <-time.After(testTimeout):
		s.t.Fatal("serve did not stop")
	}
	return time.Since(start)
}

// do sends a request at the latest microversion and decodes a JSON answer.
func (s *served) do(method, path, body string, want int) map[string]any {
	s.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.base+path, r)
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return out
}

// wait follows node on the watch stream until it rests in state, as
// `anvil node wait` does, and returns the final state.
func (s *served) wait(node, state string) events.NodeState {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ch, err := events.Subscribe(ctx, s.base, events.Filter{Nodes: []string{node}, Snapshot: true,
		Fields: []string{events.FieldProvisionState, events.FieldTargetProvisionState, events.FieldReservation}})
	if err != nil {
		s.t.Fatal(err)
	}
	for e := range ch {
		if st := e.State; st != nil && events.Resting(*st) && st.ProvisionState == state {
			return *st
		}
	}
	s.t.Fatalf("%s never rested in %s", node, state)
	return events.NodeState{}
}

// metrics scrapes /metrics with Prometheus' text parser.
func (s *served) metrics() map[string]*dto.MetricFamily {
	s.t.Helper()
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// series maps the value of one label to each series' value.
func series(fams map[string]*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		key := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				key = lp.GetValue()
			}
		}
		switch {
		case m.Gauge != nil:
			out[key] = m.GetGauge().GetValue()
		case m.Counter != nil:
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out
}

// TestServeMetricsMatchAPI builds a small fleet through the API, waits on
// the watch stream (no polling), and checks that /metrics parses and its
// node counts are what GET /v1/nodes reports.
func TestServeMetricsMatchAPI(t *testing.T) {
	s := serve(t)
	fleet := []struct {
		name, info string
		verbs      []string
		final      string
	}{
		{"enrolled", `{}`, nil, fsm.Enroll},
		{"managed", `{}`, []string{"manage"}, fsm.Manageable},
		{"ready", `{}`, []string{"manage", "provide"}, fsm.Available},
		{"deployed", `{}`, []string{"manage", "provide", "active"}, fsm.Active},
		{"broken", `{"fake_fail": "deploy"}`, []string{"manage", "provide", "active"}, fsm.DeployFailed},
	}
	waits := 0
	for _, n := range fleet {
		s.do("POST", "/v1/nodes", fmt.Sprintf(`{"driver": "fake-hardware", "name": %q, "driver_info": %s}`, n.name, n.info), 201)
		for i, verb := range n.verbs {
			s.do("PUT", "/v1/nodes/"+n.name+"/states/provision", `{"target": "`+verb+`"}`, 202)
			want := []string{fsm.Manageable, fsm.Available, n.final}[i]
			st := s.wait(n.name, want)
			waits++
			if want == fsm.DeployFailed && !strings.Contains(st.LastError, "fake deploy failure") {
				t.Fatalf("deploy failed without its error: %+v", st)
			}
		}
	}
	s.do("PUT", "/v1/nodes/enrolled/maintenance", `{"reason": "disk"}`, 202)

	list := s.do("GET", "/v1/nodes?fields=name,provision_state,power_state,maintenance,fault", "", 200)
	apiStates, apiPower := map[string]float64{}, map[string]float64{}
	maint := 0.0
	for _, raw := range list["nodes"].([]any) {
		n := raw.(map[string]any)
		apiStates[n["provision_state"].(string)]++
		p, _ := n["power_state"].(string)
		if p == "" {
			p = "none"
		}
		apiPower[p]++
		if n["maintenance"] == true {
			maint++
		}
	}
	if len(list["nodes"].([]any)) != len(fleet) {
		t.Fatalf("API lists %d nodes", len(list["nodes"].([]any)))
	}
	fams := s.metrics()
	for state, v := range series(fams, "anvil_nodes", "provision_state") {
		if v != apiStates[state] {
			t.Errorf("anvil_nodes{provision_state=%q} = %v, API says %v", state, v, apiStates[state])
		}
	}
	for state, want := range apiStates {
		if _, ok := series(fams, "anvil_nodes", "provision_state")[state]; !ok {
			t.Errorf("no anvil_nodes series for %q (%v nodes)", state, want)
		}
	}
	for p, v := range series(fams, "anvil_nodes_by_power_state", "power_state") {
		if v != apiPower[p] {
			t.Errorf("anvil_nodes_by_power_state{power_state=%q} = %v, API says %v", p, v, apiPower[p])
		}
	}
	if v := series(fams, "anvil_nodes_maintenance", "")[""]; v != maint || maint != 1 {
		t.Errorf("anvil_nodes_maintenance = %v, API says %v", v, maint)
	}
	transitions := fams["anvil_provision_transitions_total"]
	count := func(from, to string) float64 {
		for _, m := range transitions.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["from"] == from && l["to"] == to {
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	if got := count(fsm.Enroll, fsm.Verifying); got != 4 {
		t.Errorf("enroll → verifying counted %v times, want 4", got)
	}
	if got := series(fams, "anvil_provision_failures_total", "state")[fsm.DeployFailed]; got != 1 {
		t.Errorf("deploy failures %v, want 1", got)
	}
	// Waiting polled nothing: the only node reads are the stream's. A
	// stream is counted when its handler returns, which may be just after
	// the waiter went on: read the counters again until all are in.
	getsByRoute := func(fams map[string]*dto.MetricFamily) map[string]float64 {
		perRoute := map[string]float64{}
		for _, m := range fams["anvil_api_requests_total"].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["method"] == "GET" {
				perRoute[l["route"]] += m.GetCounter().GetValue()
			}
		}
		return perRoute
	}
	perRoute := getsByRoute(fams)
	for deadline := time.Now().Add(testTimeout); perRoute[events.StreamPath] < float64(waits) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // bounded polling
		perRoute = getsByRoute(s.metrics())
	}
	if perRoute["/v1/nodes/{ident}"] != 0 || perRoute[events.StreamPath] != float64(waits) {
		t.Errorf("GET requests by route %v, want no node reads and %d streams", perRoute, waits)
	}
}

// TestServeShutdownEndsStreams: an open watch stream does not hold up
// shutdown until its deadline.
func TestServeShutdownEndsStreams(t *testing.T) {
	s := serve(t)
	resp, err := http.Get(s.base + events.StreamPath)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	if took := s.shutdown(); took > testTimeout/2 {
		t.Fatalf("shutdown took %v with a stream open", took)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
}

// TestListenInUse: an address in use is answered with the flag to change.
func TestListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Serve(t.Context(), Config{Listen: ln.Addr().String(), Database: filepath.Join(t.TempDir(), "anvil.db"),
		HostID: "in-use", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "--listen "+ln.Addr().String()) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Serve on a used address: %v", err)
	}
}
