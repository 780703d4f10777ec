package api

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

// BenchmarkNodeList100k serves Ironic's node list over 100,000 nodes in
// SQLite: the first 1,000 in detail, two fields of 1,000 (Ironic's
// max_limit), and a page of 100 sorted by every sort key Ironic offers and
// filtered by each indexed filter. Seeding takes a while; run it alone:
//
//	go test ./internal/api -run '^$' -bench NodeList100k -benchtime 3x
func BenchmarkNodeList100k(b *testing.B) { benchNodeList100k(b, newEnv(b)) }

// BenchmarkNodeList100kPostgres is the same on PostgreSQL (a throwaway
// server, or $ANVIL_TEST_POSTGRES_DSN).
func BenchmarkNodeList100kPostgres(b *testing.B) {
	dsn := pg.DSN(b)
	benchNodeList100k(b, newEnvOn(b, func(now func() time.Time) store.Store {
		st, err := postgres.Open(b.Context(), dsn, sqlstore.WithClock(now))
		if err != nil {
			b.Fatal(err)
		}
		return st
	}))
}

func benchNodeList100k(b *testing.B, e *env) {
	const total = 100_000
	states := []string{"active", "active", "active", "available", "wait call-back", "deploy failed"}
	for i := range total {
		n := &model.Node{Name: fmt.Sprintf("rack%03d-n%03d", i/1000, i%1000), Driver: fakeDriver,
			ProvisionState: states[i%len(states)], PowerState: []string{"power on", "power off"}[i%2],
			ResourceClass: []string{"bm-large", "bm-small"}[i%2], ConductorGroup: []string{"", "rack-a"}[i%2],
			Owner: fmt.Sprintf("project-%d", i%20), Lessee: fmt.Sprintf("lessee-%d", i%7),
			ProvisionUpdatedAt: e.clock.Now().Add(-time.Duration(i) * time.Second),
			DriverInfo:         model.JSON{"ipmi_address": "10.0.0.1", "ipmi_password": "secret"}}
		if i%50 == 0 {
			n.Fault = "power failure"
		}
		e.mustNode(n)
	}
	cases := []struct{ name, path string }{
		{"detail first 1000", "/v1/nodes/detail?limit=1000"},
		{"fields uuid,provision_state, a page of 1000", "/v1/nodes?fields=uuid,provision_state&limit=1000"},
		{"brief first 1000", "/v1/nodes?limit=1000"},
	}
	for _, k := range store.NodeSortKeys {
		cases = append(cases, struct{ name, path string }{"sort " + k + " desc", "/v1/nodes?limit=100&sort_dir=desc&sort_key=" + k})
	}
	for _, f := range []string{"provision_state=deploy+failed", "driver=" + fakeDriver, "resource_class=bm-small",
		"fault=power+failure", "conductor_group=rack-a", "owner=project-7", "lessee=lessee-3", "maintenance=true"} {
		cases = append(cases, struct{ name, path string }{"filter " + f, "/v1/nodes?limit=100&" + f})
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
