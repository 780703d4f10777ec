package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/noop"
	"github.com/anvil-metal/anvil/internal/model"
)

func TestSetRAIDConfig(t *testing.T) {
	e := newEnv(t)
	st, fc := newTestBackendWith(t, "anvil-test", e.clock.Now, func(r *driver.Registry) { noop.Register(r) })
	e.st, e.cond = st, fc
	e.h = New(Wire(Config{Now: e.clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, fc))
	n := e.mustNode(nodeFixture("r1"))
	nr := nodeFixture("r2")
	nr.Interfaces.Raid = noop.Names["raid"]
	nr = e.mustNode(nr)
	good := `{"logical_disks": [{"size_gb": 100, "is_root_volume": true, "raid_level": "1"}]}`
	target := func(uuid string) model.JSON {
		t.Helper()
		got, err := e.st.Nodes().GetNode(context.Background(), uuid)
		if err != nil {
			t.Fatal(err)
		}
		return got.TargetRaidConfig
	}
	tests := []struct {
		name, node, body, version string
		code                      int
		msg                       string
	}{
		{"old version", n.UUID, good, at(11), 406, ""},
		{"not an object", n.UUID, `[1, 2]`, latest, 400, "Expected types <class 'dict'> for target_raid_config: [1, 2]"},
		{"no body", n.UUID, ``, latest, 400, "Missing mandatory parameter: target_raid_config"},
		{"no logical disks", n.UUID, `{"foo": 1}`, latest, 400, "RAID config validation error: 'logical_disks' is a required property"},
		{"bad level", n.UUID, `{"logical_disks": [{"size_gb": 10, "raid_level": "7"}]}`, latest, 400,
			"RAID config validation error: '7' is not one of ['JBOD', '0', '1', '2', '5', '6', '1+0', '5+0', '6+0']"},
		{"bad size", n.UUID, `{"logical_disks": [{"size_gb": "100", "raid_level": "1"}]}`, latest, 400,
			"RAID config validation error: '100' is not one of ['MAX']"},
		{"two roots", n.UUID, `{"logical_disks": [{"size_gb": 10, "raid_level": "1", "is_root_volume": true}, {"size_gb": "MAX", "raid_level": "0", "is_root_volume": true}]}`, latest, 400,
			"Raid config cannot have more than one root volume. 2 root volumes were specified"},
		{"no-raid", nr.UUID, good, latest, 404, "Driver fake-hardware does not support raid (disabled or not implemented)."},
		{"unknown node", "nope", good, latest, 404, "Node nope could not be found."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("PUT", "/v1/nodes/"+tc.node+"/states/raid", tc.body, tc.version)
			if rec.Code != tc.code {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body.String(), tc.code)
			}
			if tc.msg != "" {
				if _, msg := faultOf(t, rec); msg != tc.msg {
					t.Fatalf("got %q, want %q", msg, tc.msg)
				}
			}
		})
	}
	if got := target(n.UUID); len(got) != 0 {
		t.Fatalf("a refused config changed the node: %v", got)
	}
	rec := e.do("PUT", "/v1/nodes/r1/states/raid", good, at(12))
	if rec.Code != 204 || rec.Body.Len() != 0 {
		t.Fatalf("set: %d %s", rec.Code, rec.Body.String())
	}
	if got, _ := json.Marshal(target(n.UUID)); string(got) != `{"logical_disks":[{"is_root_volume":true,"raid_level":"1","size_gb":100}]}` {
		t.Fatalf("stored %s", got)
	}
	states := decode(t, e.do("GET", "/v1/nodes/r1/states", "", latest))
	if lds, _ := states["target_raid_config"].(map[string]any)["logical_disks"].([]any); len(lds) != 1 {
		t.Fatalf("states: %v", states)
	}
	node := decode(t, e.do("GET", "/v1/nodes/r1?fields=target_raid_config,raid_config", "", latest))
	if _, ok := node["target_raid_config"].(map[string]any)["logical_disks"]; !ok {
		t.Fatalf("node: %v", node)
	}
	// {} clears it, also on no-raid (Ironic validates only a non-empty one).
	for _, id := range []string{"r1", "r2"} {
		if rec := e.do("PUT", "/v1/nodes/"+id+"/states/raid", `{}`, latest); rec.Code != 204 {
			t.Fatalf("clear %s: %d %s", id, rec.Code, rec.Body.String())
		}
	}
	if got := target(n.UUID); len(got) != 0 {
		t.Fatalf("not cleared: %v", got)
	}
}

func TestRAIDLogicalDiskProperties(t *testing.T) {
	e := newEnv(t)
	rec := e.do("GET", "/v1/drivers/fake-hardware/raid/logical_disk_properties", "", latest)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	b, err := os.ReadFile("../raid/testdata/driver-logical-disk-properties-response.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	_ = json.Unmarshal(b, &want)
	got := decode(t, rec)
	if len(got) != len(want) || got["size_gb"] != want["size_gb"] || got["raid_level"] != want["raid_level"] {
		t.Fatalf("got %v", got)
	}
	if rec := e.do("GET", "/v1/drivers/fake-hardware/raid/logical_disk_properties", "", at(11)); rec.Code != 406 {
		t.Fatalf("at 1.11: %d", rec.Code)
	}
	rec = e.do("GET", "/v1/drivers/nope/raid/logical_disk_properties", "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 404 || msg != "Could not find the following driver(s) or hardware type(s): nope." {
		t.Fatalf("unknown driver: %d %q", rec.Code, msg)
	}
}
