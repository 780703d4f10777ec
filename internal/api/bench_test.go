package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// richNode is a node with every kind of field filled, as after a deploy.
func richNode(i int) *model.Node {
	yes := true
	n := nodeFixture(fmt.Sprintf("node-%04d", i))
	n.ID, n.UUID = int64(i+1), fmt.Sprintf("6d85703a-565d-469a-96ce-%012d", i)
	n.ProvisionState, n.PowerState, n.Maintenance = "active", "power on", false
	n.InstanceUUID = fmt.Sprintf("5344a3e2-978a-444e-990a-%012d", i)
	n.ResourceClass, n.Owner, n.Description, n.ConductorGroup = "bm-large", "john doe", "rack 4 slot 12", ""
	n.Properties = model.JSON{"cpus": 64.0, "memory_mb": 524288.0, "local_gb": 1800.0, "cpu_arch": "x86_64",
		"capabilities": "boot_mode:uefi,secure_boot:true"}
	n.InstanceInfo = model.JSON{"image_source": "http://images/img.qcow2", "root_gb": 100.0, "configdrive": "H4sI...",
		"image_checksum": "abc123", "display_name": "vm-1"}
	n.DriverInternalInfo = model.JSON{"clean_steps": nil, "deploy_steps": nil, "agent_secret_token": "tok",
		"last_power_state_change": "2026-12-02T12:17:23.272622", "agent_url": "http://10.0.0.5:9999"}
	n.Extra = model.JSON{"rack": "r4", "tags": []any{"a", "b", "c"}}
	n.Traits = []string{"CUSTOM_GPU", "HW_CPU_X86_VMX"}
	n.AutomatedClean, n.SecureBoot, n.BootMode = &yes, &yes, "uefi"
	n.CreatedAt = time.Date(2026, 12, 2, 12, 16, 3, 434301000, time.UTC)
	n.UpdatedAt, n.ProvisionUpdatedAt = n.CreatedAt.Add(time.Hour), n.CreatedAt.Add(time.Hour)
	return n
}

// BenchmarkRenderNodes1000 renders 1,000 full nodes at the latest version,
// the body of GET /v1/nodes/detail.
func BenchmarkRenderNodes1000(b *testing.B) {
	render := renderer(newEnv(b))
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		size = render()
	}
	b.ReportMetric(float64(size), "bytes/body")
}

// renderer returns a function rendering 1,000 rich nodes as the detail
// list's body and returning its size.
func renderer(e *env) func() int {
	nodes := make([]*model.Node, 1000)
	for i := range nodes {
		nodes[i] = richNode(i)
	}
	rc := &call{s: e.h.(*Server), minor: MaxMinor, base: "http://" + testHost, ctx: context.Background()}
	plan := rc.nodePlan(nil)
	return func() int {
		w := rc.s.listWriter(256 + len(nodes)*len(plan)*48)
		w.rootObj()
		w.key("nodes")
		w.arr()
		for _, n := range nodes {
			rc.writeNode(w, n, plan)
		}
		w.endArr()
		w.endObj()
		size := len(w.b)
		rc.s.releaseWriter(w)
		return size
	}
}

// BenchmarkListNodesDetail1000 is the whole request over the test store.
func BenchmarkListNodesDetail1000(b *testing.B) {
	e := newEnv(b)
	for i := range 1000 {
		n := richNode(i)
		n.ID, n.UUID = 0, ""
		e.mustNode(n)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "http://"+testHost+"/v1/nodes/detail", nil)
		req.Header.Set(hdrLegacyVersion, "latest")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// Rendering stays a few allocations per node (4,014 for 1,000 rich nodes
// when written): what keeps the detail list fast, counted rather than timed.
// Its speed is BenchmarkRenderNodes1000's.
func TestRenderNodes1000Allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	render := renderer(newEnv(t))
	if allocs := testing.AllocsPerRun(3, func() { render() }); allocs > 6000 {
		t.Errorf("rendering 1,000 nodes made %.0f allocations, want at most 6,000", allocs)
	}
}
