package direct

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// raidIPA is an IPA with software RAID, as far as the conductor sees it:
// execute_clean_step runs asynchronously; create_configuration answers
// the target configuration it was sent as its clean_result.
type raidIPA struct {
	mu    sync.Mutex
	steps []map[string]any
	nodes []map[string]any
	last  ipa.CommandResult
}

func (a *raidIPA) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if r.Method == http.MethodGet { // poll: the command ended
			a.last.Status = ipa.StatusSucceeded
			_ = json.NewEncoder(w).Encode(a.last)
			return
		}
		var req struct {
			Name   string         `json:"name"`
			Params map[string]any `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Name != ipa.CmdExecuteCleanStep {
			t.Errorf("command %s", req.Name)
		}
		step := req.Params["step"].(map[string]any)
		node := req.Params["node"].(map[string]any)
		a.steps, a.nodes = append(a.steps, step), append(a.nodes, node)
		result := map[string]any{"clean_step": step, "clean_result": nil}
		if step["step"] == "create_configuration" {
			dii := node["driver_internal_info"].(map[string]any)
			result["clean_result"] = dii["target_raid_config"]
		}
		a.last = ipa.CommandResult{ID: "cmd-1", Name: req.Name, Status: ipa.StatusRunning, Result: result}
		_ = json.NewEncoder(w).Encode(a.last)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAgentRAIDSteps(t *testing.T) {
	a := &raidIPA{}
	r := New(Config{}).RAID()
	r.now = func() time.Time { return time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC) }
	n := &model.Node{UUID: "n1", Properties: model.JSON{"root_device": map[string]any{"name": "/dev/md0"}},
		DriverInternalInfo: model.JSON{ipa.KeyURL: a.serve(t), ipa.KeyToken: "tok"},
		TargetRaidConfig: model.JSON{"logical_disks": []any{
			map[string]any{"raid_level": "1", "size_gb": float64(10), "is_root_volume": true},
			map[string]any{"raid_level": "0", "size_gb": "MAX"}}}}
	ctx := context.Background()
	run := func(name string, args model.JSON) error {
		t.Helper()
		s := driver.Step{Interface: "raid", Step: name, Args: args}
		n.CleanStep = model.JSON{"interface": "raid", "step": name, "args": args, "priority": 0}
		res, err := r.ExecuteStep(ctx, &driver.Task{Node: n}, driver.CleanSteps, s)
		if err != nil || res != driver.Wait {
			return err
		}
		for i := 0; i < 3; i++ { // heartbeats: start, poll
			res, err = r.Continue(ctx, &driver.Task{Node: n}, string(driver.CleanSteps))
			if err != nil || res == driver.Done {
				return err
			}
		}
		t.Fatalf("%s never finished", name)
		return nil
	}
	if err := run("create_configuration", model.JSON{"create_root_volume": false, "create_nonroot_volumes": false}); err == nil ||
		err.Error() != "Node n1 has empty target RAID configuration after skipping root volume and skipping non-root volumes." {
		t.Fatalf("nothing to create: %v", err)
	}
	if err := run("create_configuration", model.JSON{"create_nonroot_volumes": false}); err != nil {
		t.Fatal(err)
	}
	sent := a.nodes[0]["driver_internal_info"].(map[string]any)["target_raid_config"].(map[string]any)["logical_disks"].([]any)
	if len(sent) != 1 || a.steps[0]["step"] != "create_configuration" || a.steps[0]["interface"] != "raid" {
		t.Fatalf("sent %v %v", sent, a.steps[0])
	}
	lds := n.RaidConfig["logical_disks"].([]any)
	if len(lds) != 1 || n.RaidConfig["last_updated"] != "2026-12-03 03:00:00" || n.Properties["local_gb"] != float64(10) ||
		n.Properties["capabilities"] != "raid_level:1" {
		t.Fatalf("after create: raid_config %v properties %v", n.RaidConfig, n.Properties)
	}
	if err := run("delete_configuration", nil); err != nil {
		t.Fatal(err)
	}
	if len(n.RaidConfig) != 0 || n.Properties["root_device"] != nil || a.steps[1]["step"] != "delete_configuration" {
		t.Fatalf("after delete: %v %v", n.RaidConfig, n.Properties)
	}
	if err := run("create_configuration", model.JSON{"create_root_volume": "yes"}); err == nil || !strings.Contains(err.Error(), "must be a boolean") {
		t.Fatalf("bad arg: %v", err)
	}
}
