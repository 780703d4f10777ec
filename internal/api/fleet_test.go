package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// fleetNames returns the names of a fleet list's nodes, in order.
func fleetNames(t *testing.T, m map[string]any) []string {
	t.Helper()
	var out []string
	for _, n := range m["nodes"].([]any) {
		name, _ := n.(map[string]any)["name"].(string)
		out = append(out, name)
	}
	return out
}

func TestFleetNodes(t *testing.T) {
	e := newEnv(t)
	power := []string{"power on", "power off", "error", ""}
	var uuids []string
	for i := range 12 {
		n := nodeFixture(fmt.Sprintf("rack1-n%02d", i))
		n.PowerState = power[i%4]
		n.ProvisionState = []string{"available", "active", "deploy failed"}[i%3]
		n.Maintenance = i == 5
		uuids = append(uuids, e.mustNode(n).UUID)
	}
	port := &model.Port{Address: "52:54:00:ab:cd:07", NodeUUID: uuids[7]}
	if err := e.st.Ports().CreatePort(context.Background(), port); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, query string
		want        []string
		matching    float64
	}{
		{"power state", "power_state=error", []string{"rack1-n02", "rack1-n06", "rack1-n10"}, 3},
		{"unknown power state", "power_state=None", []string{"rack1-n03", "rack1-n07", "rack1-n11"}, 3},
		{"power and provision", "power_state=power+on&provision_state=active", []string{"rack1-n04"}, 1},
		{"search by name part", "search=N1", []string{"rack1-n10", "rack1-n11"}, 2},
		{"search by MAC", "search=52:54:00:AB:CD:07", []string{"rack1-n07"}, 1},
		{"search by uuid prefix", "search=" + strings.ToUpper(uuids[3][:18]), []string{"rack1-n03"}, 1},
		{"maintenance", "maintenance=true", []string{"rack1-n05"}, 1},
		{"sorted and paged", "provision_state=available&sort_key=name&sort_dir=desc&limit=2",
			[]string{"rack1-n09", "rack1-n06"}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/fleet/nodes?fields=name,uuid,driver_info&"+c.query, "", latest)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
			if strings.Contains(rec.Body.String(), "s3cret-pw") {
				t.Fatal("the list shows a BMC password")
			}
			m := decode(t, rec)
			if got := fleetNames(t, m); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("nodes %v, want %v", got, c.want)
			}
			if m["matching"] != c.matching {
				t.Errorf("matching %v, want %v", m["matching"], c.matching)
			}
		})
	}
	t.Run("next marker pages on", func(t *testing.T) {
		m := decode(t, e.do("GET", "/v1/fleet/nodes?fields=name&sort_key=name&limit=5", "", latest))
		marker, _ := m["next_marker"].(string)
		m = decode(t, e.do("GET", "/v1/fleet/nodes?fields=name&sort_key=name&limit=5&marker="+marker, "", latest))
		if got := fleetNames(t, m); got[0] != "rack1-n05" || len(got) != 5 {
			t.Fatalf("second page %v", got)
		}
		m = decode(t, e.do("GET", "/v1/fleet/nodes?fields=name&sort_key=name&limit=5&marker="+uuids[10], "", latest))
		if m["next_marker"] != nil || len(fleetNames(t, m)) != 1 {
			t.Fatalf("last page %v next %v", fleetNames(t, m), m["next_marker"])
		}
	})
	for _, bad := range []string{"power_state=on", "sort_key=driver_info", "limit=0", "bogus=1", "fault=nope"} {
		t.Run("bad "+bad, func(t *testing.T) {
			rec := e.do("GET", "/v1/fleet/nodes?"+bad, "", latest)
			if rec.Code != 400 {
				t.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
			faultOf(t, rec)
		})
	}
}

func TestFleetSummary(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	mk := func(name, ps, power string, since time.Duration, maint bool) *model.Node {
		n := nodeFixture(name)
		n.ProvisionState, n.PowerState, n.Maintenance = ps, power, maint
		n.ProvisionUpdatedAt = now.Add(-since)
		if ps == "deploy failed" {
			n.LastError = "Deploy step failed: boom"
		}
		return e.mustNode(n)
	}
	mk("a1", "available", "power off", time.Hour, false)
	mk("a2", "available", "power off", time.Hour, true)
	mk("f1", "deploy failed", "power on", time.Hour, false)
	mk("p1", "active", "error", time.Hour, false)
	mk("s-old", "wait call-back", "power on", 2*time.Hour, false)
	mk("s-mid", "clean wait", "power on", 45*time.Minute, false)
	fresh := mk("s-new", "deploying", "power on", 5*time.Minute, false)
	ctx := context.Background()
	if err := e.st.Conductors().RegisterConductor(ctx, &model.Conductor{Hostname: "anvil-test"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Conductors().HeartbeatConductor(ctx, "anvil-test", now); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Nodes().ReserveNode(ctx, fresh.UUID, "anvil-test"); err != nil {
		t.Fatal(err)
	}
	rec := e.do("GET", "/v1/fleet/summary", "", latest)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	if strings.Contains(rec.Body.String(), "s3cret-pw") {
		t.Fatal("the summary shows a BMC password")
	}
	m := decode(t, rec)
	states := m["provision_states"].(map[string]any)
	if len(states) != 30 || states["available"] != 2.0 || states["enroll"] != 0.0 || states["wait call-back"] != 1.0 {
		t.Errorf("provision_states %v", states)
	}
	if p := m["power_states"].(map[string]any); p["power on"] != 4.0 || p["error"] != 1.0 || p["None"] != 0.0 {
		t.Errorf("power_states %v", p)
	}
	if m["total"] != 7.0 || m["maintenance"] != 1.0 || m["failed"] != 1.0 || m["stuck"] != 2.0 {
		t.Errorf("total %v maintenance %v failed %v stuck %v", m["total"], m["maintenance"], m["failed"], m["stuck"])
	}
	names := func(key string) string {
		var out []string
		for _, n := range m[key].([]any) {
			out = append(out, n.(map[string]any)["name"].(string))
		}
		return strings.Join(out, ",")
	}
	for key, want := range map[string]string{"failed_nodes": "f1", "maintenance_nodes": "a2",
		"power_error_nodes": "p1", "stuck_nodes": "s-old,s-mid"} {
		if got := names(key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	conds := m["conductors"].([]any)
	if len(conds) != 1 || conds[0].(map[string]any)["alive"] != true || conds[0].(map[string]any)["locked_nodes"] != 1.0 {
		t.Errorf("conductors %v", conds)
	}
	m = decode(t, e.do("GET", "/v1/fleet/summary?stuck_after=3600", "", latest))
	if m["stuck"] != 1.0 {
		t.Errorf("stuck after an hour: %v", m["stuck"])
	}
	if rec := e.do("GET", "/v1/fleet/summary?stuck_after=soon", "", latest); rec.Code != 400 {
		t.Errorf("bad stuck_after: %d", rec.Code)
	}
}
