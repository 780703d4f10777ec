package api

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

func TestRootAndV1(t *testing.T) {
	e := newEnv(t)
	root := decode(t, e.do("GET", "/", ""))
	dv := root["default_version"].(map[string]any)
	if root["name"] != "OpenStack Ironic API" || dv["version"] != "1.115" || dv["min_version"] != "1.1" || dv["status"] != "CURRENT" {
		t.Errorf("root %v", root)
	}
	if dv["links"].([]any)[0].(map[string]any)["href"] != "http://"+testHost+"/v1/" {
		t.Errorf("root link %v", dv["links"])
	}
	tests := []struct {
		version string
		want    []string
	}{
		{"", []string{"chassis", "drivers", "id", "links", "media_types", "nodes", "ports", "version"}},
		{at(22), []string{"chassis", "drivers", "heartbeat", "id", "links", "lookup", "media_types", "nodes", "ports", "version"}},
		{at(51), []string{"chassis", "conductors", "drivers", "heartbeat", "id", "links", "lookup", "media_types",
			"nodes", "portgroups", "ports", "version", "volume"}},
		{latest, []string{"allocations", "chassis", "conductors", "continue_inspection", "deploy_templates", "drivers", "events",
			"heartbeat", "id", "inspection_rules", "links", "lookup", "media_types", "nodes", "portgroups", "ports", "runbooks",
			"shards", "version", "volume"}},
	}
	for _, tc := range tests {
		for _, path := range []string{"/v1", "/v1/"} {
			m := decode(t, e.do("GET", path, "", tc.version))
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.want) {
				t.Errorf("GET %s at %q: %v", path, tc.version, keys)
			}
		}
	}
	if rec := e.do("PUT", "/v1", "", latest); rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("PUT /v1: %d %q", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := e.do("HEAD", "/v1/nodes", "", latest); rec.Code != 200 {
		t.Errorf("HEAD: %d", rec.Code)
	}
	if rec := e.do("GET", "/v1/chassis", "", latest); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"chassis": []`) {
		t.Errorf("chassis: %d %s", rec.Code, rec.Body.String())
	}
	if rec := e.do("GET", "/v1/chassis/0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3", "", latest); rec.Code != 404 {
		t.Errorf("chassis one: %d", rec.Code)
	}
}

func TestPublicURL(t *testing.T) {
	e := newEnv(t)
	e.h = New(Wire(Config{Now: e.clock.Now, PublicURL: "https://bm.example.com:6385/"}, e.st, e.cond))
	m := decode(t, e.do("GET", "/v1", "", latest))
	if m["nodes"].([]any)[0].(map[string]any)["href"] != "https://bm.example.com:6385/v1/nodes/" {
		t.Errorf("%v", m["nodes"])
	}
}

func TestDrivers(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, path, version string
		status              int
		check               func(t *testing.T, m map[string]any)
	}{
		{"list at 1.1", "/v1/drivers", "", 200, func(t *testing.T, m map[string]any) {
			d := m["drivers"].([]any)[0].(map[string]any)
			if len(d) != 3 || d["hosts"].([]any)[0] != "anvil-test" {
				t.Errorf("%v", d)
			}
		}},
		{"list", "/v1/drivers", latest, 200, func(t *testing.T, m map[string]any) {
			d := m["drivers"].([]any)[0].(map[string]any)
			if len(d) != 5 || d["type"] != "dynamic" {
				t.Errorf("%v", d)
			}
		}},
		{"detail", "/v1/drivers?detail=True", latest, 200, func(t *testing.T, m map[string]any) {
			d := m["drivers"].([]any)[0].(map[string]any)
			if len(d) != 5+26 || d["default_power_interface"] != "fake" {
				t.Errorf("%d keys: %v", len(d), d)
			}
		}},
		{"detail at 1.39 hides bios and firmware", "/v1/drivers?detail=True", at(39), 200, func(t *testing.T, m map[string]any) {
			d := m["drivers"].([]any)[0].(map[string]any)
			if _, ok := d["default_bios_interface"]; ok || len(d) != 5+22 {
				t.Errorf("%d keys", len(d))
			}
		}},
		{"detail at 1.29", "/v1/drivers?detail=True", at(29), 406, nil},
		{"type classic", "/v1/drivers?type=classic", latest, 200, func(t *testing.T, m map[string]any) {
			if len(m["drivers"].([]any)) != 0 {
				t.Errorf("%v", m)
			}
		}},
		{"bad type", "/v1/drivers?type=bogus", latest, 400, nil},
		{"fields", "/v1/drivers?fields=name", latest, 200, func(t *testing.T, m map[string]any) {
			if d := m["drivers"].([]any)[0].(map[string]any); len(d) != 2 {
				t.Errorf("%v", d)
			}
		}},
		{"fields at 1.76", "/v1/drivers?fields=name", at(76), 406, nil},
		{"bad field", "/v1/drivers?fields=bogus", latest, 400, nil},
		{"fields and detail", "/v1/drivers?fields=name&detail=true", latest, 400, nil},
		{"one", "/v1/drivers/fake-hardware", latest, 200, func(t *testing.T, m map[string]any) {
			if len(m) != 5+26 {
				t.Errorf("%d keys", len(m))
			}
		}},
		{"one unknown", "/v1/drivers/nosuch", latest, 404, nil},
		{"properties", "/v1/drivers/fake-hardware/properties", latest, 200, func(t *testing.T, m map[string]any) {
			if d, _ := m["fake_fail"].(string); !strings.HasSuffix(d, "Optional.") {
				t.Errorf("%v", m)
			}
		}},
		{"properties unknown", "/v1/drivers/nosuch/properties", latest, 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code >= 400 {
				faultOf(t, rec)
			}
			if tc.check != nil {
				tc.check(t, decode(t, rec))
			}
		})
	}
	_, msg := faultOf(t, e.do("GET", "/v1/drivers/nosuch/properties", "", latest))
	want(t, msg, "The driver 'nosuch' is unknown.")
}

func TestConductors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, h := range []string{"c2", "c1"} {
		_ = e.st.Conductors().RegisterConductor(ctx, &model.Conductor{Hostname: h, Drivers: []string{"ipmi"}})
	}
	e.clock.Advance(61 * time.Second)
	_ = e.st.Conductors().HeartbeatConductor(ctx, "c1", e.clock.Now())
	tests := []struct {
		name, path, version string
		status              int
		check               func(t *testing.T, m map[string]any)
	}{
		{"before 1.49", "/v1/conductors", at(48), 404, nil},
		{"list", "/v1/conductors", latest, 200, func(t *testing.T, m map[string]any) {
			c := m["conductors"].([]any)
			if len(c) != 3 || len(c[0].(map[string]any)) != 4 {
				t.Errorf("%v", c)
			}
		}},
		{"alive follows heartbeat", "/v1/conductors?sort_key=hostname", latest, 200, func(t *testing.T, m map[string]any) {
			var alive []string
			for _, c := range m["conductors"].([]any) {
				if c.(map[string]any)["alive"] == true {
					alive = append(alive, c.(map[string]any)["hostname"].(string))
				}
			}
			if !slices.Equal(alive, []string{"c1"}) {
				t.Errorf("alive %v", alive)
			}
		}},
		{"detail", "/v1/conductors?detail=True", latest, 200, func(t *testing.T, m map[string]any) {
			if c := m["conductors"].([]any)[0].(map[string]any); len(c) != 7 {
				t.Errorf("%v", c)
			}
		}},
		{"page", "/v1/conductors?limit=1&sort_key=hostname&sort_dir=desc", latest, 200, func(t *testing.T, m map[string]any) {
			if m["next"] != "http://"+testHost+"/v1/conductors?sort_key=hostname&sort_dir=desc&fields=hostname,conductor_group,alive&limit=1&marker=c2" {
				t.Errorf("%v", m["next"])
			}
		}},
		{"marker", "/v1/conductors?sort_key=hostname&marker=c1", latest, 200, func(t *testing.T, m map[string]any) {
			if len(m["conductors"].([]any)) != 1 {
				t.Errorf("%v", m)
			}
		}},
		{"unknown marker", "/v1/conductors?marker=zz", latest, 404, nil},
		{"unsortable", "/v1/conductors?sort_key=alive", latest, 400, nil},
		{"bad field", "/v1/conductors?fields=bogus", latest, 400, nil},
		{"one", "/v1/conductors/c1", latest, 200, func(t *testing.T, m map[string]any) {
			if m["alive"] != true || len(m) != 7 {
				t.Errorf("%v", m)
			}
		}},
		{"one unknown", "/v1/conductors/nosuch", latest, 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if tc.check != nil {
				tc.check(t, decode(t, rec))
			}
		})
	}
}

func TestRoute(t *testing.T) {
	e := newEnv(t)
	s := New(Wire(Config{}, e.st, e.cond))
	for path, want := range map[string]string{
		"/v1/nodes/web1":       "/v1/nodes/{ident}",
		"/v1/nodes/other":      "/v1/nodes/{ident}",
		"/v1/nodes":            "/v1/nodes",
		"/v1/no/such/resource": "/",
	} {
		if got := s.Route(httptest.NewRequest("GET", path, nil)); got != want {
			t.Errorf("Route(%s) = %q, want %q", path, got, want)
		}
	}
}
