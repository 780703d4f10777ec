package metrics

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// BenchmarkScrape10k and BenchmarkScrape100k are one /metrics scrape over
// 10,000 and 100,000 nodes (the node gauges are one GROUP BY).
func BenchmarkScrape10k(b *testing.B)  { benchScrape(b, 10000) }
func BenchmarkScrape100k(b *testing.B) { benchScrape(b, 100000) }

func benchScrape(b *testing.B, nodes int) {
	m, st, _ := newTestMetrics(b)
	ctx := context.Background()
	for i := range nodes {
		n := &model.Node{Driver: "fake-hardware", Name: fmt.Sprintf("n%d", i), ProvisionState: "available",
			PowerState: "power off", DriverInfo: model.JSON{"ipmi_address": "10.0.0.1", "ipmi_password": "x"}}
		if err := st.Nodes().CreateNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	h := m.Handler()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
