package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// BenchmarkFleet100k serves the dashboard's requests over 100,000 nodes
// (10,000 with a port) in SQLite: a table page with each kind of filter,
// sorting and search, a page deep in the list, and the fleet summary.
// Seeding takes a while; run it alone:
//
//	go test ./internal/api -run '^$' -bench Fleet100k -benchtime 20x
func BenchmarkFleet100k(b *testing.B) {
	const total = 100_000
	e := newEnv(b)
	ctx := context.Background()
	states := []string{"active", "active", "active", "active", "active", "active", "available",
		"available", "wait call-back", "deploy failed"}
	var deep string
	for i := range total {
		n := &model.Node{Name: fmt.Sprintf("rack%03d-n%03d", i/1000, i%1000), Driver: fakeDriver,
			ProvisionState: states[i%len(states)], PowerState: []string{"power on", "power off"}[i%2],
			Maintenance: i%97 == 0, ResourceClass: []string{"bm-large", "bm-small"}[i%2],
			Owner: fmt.Sprintf("project-%d", i%20), ProvisionUpdatedAt: e.clock.Now().Add(-time.Duration(i) * time.Second),
			DriverInfo: model.JSON{"ipmi_address": "10.0.0.1", "ipmi_password": "secret"}}
		e.mustNode(n)
		if i == total*9/10 {
			deep = n.UUID
		}
		if i%10 == 0 {
			p := &model.Port{Address: fmt.Sprintf("52:54:%02x:%02x:%02x:%02x", i>>24&255, i>>16&255, i>>8&255, i&255), NodeUUID: n.UUID}
			if err := e.st.Ports().CreatePort(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	const fields = "fields=uuid,name,provision_state,target_provision_state,power_state,maintenance,fault,driver,resource_class,owner,provision_updated_at&limit=50"
	cases := []struct{ name, path string }{
		{"first page", "/v1/fleet/nodes?" + fields},
		{"page at 90k", "/v1/fleet/nodes?" + fields + "&marker=" + deep},
		{"state filter sorted by name", "/v1/fleet/nodes?" + fields + "&provision_state=deploy+failed&sort_key=name&sort_dir=desc"},
		{"power and owner filter", "/v1/fleet/nodes?" + fields + "&power_state=power+off&owner=project-7"},
		{"maintenance", "/v1/fleet/nodes?" + fields + "&maintenance=true"},
		{"search name", "/v1/fleet/nodes?" + fields + "&search=rack042-n1"},
		{"search MAC", "/v1/fleet/nodes?" + fields + "&search=52:54:00:01:86:96"},
		{"summary", "/v1/fleet/summary"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "http://"+testHost+c.path, nil)
				req.Header.Set(hdrLegacyVersion, "latest")
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}
