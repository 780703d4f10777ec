package direct

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// TestCustomAgentLearnsAgentSteps: once the agent heartbeats in the deploy
// step, custom-agent asks it for its deploy steps (a stock IPA with a
// custom hardware manager, as Metal3 runs, offers install_coreos), offers
// them (priority 0: run only when named), sends a named one with
// deploy.execute_deploy_step, and refuses a step the agent lacks with the
// list it has.
func TestCustomAgentLearnsAgentSteps(t *testing.T) {
	var mu sync.Mutex
	var cmds []string
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ipa.CommandRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		cmds = append(cmds, req.Name)
		mu.Unlock()
		res := ipa.CommandResult{ID: "c", Status: ipa.StatusSucceeded}
		switch req.Name {
		case ipa.CmdGetDeploySteps:
			res.Result = map[string]any{"deploy_steps": map[string]any{
				"GenericHardwareManager": []any{map[string]any{"step": "write_image", "priority": 0, "interface": "deploy"}},
				"CoreOSManager":          []any{map[string]any{"step": "install_coreos", "priority": 0, "interface": "deploy"}},
			}}
		case ipa.CmdExecuteDeployStep:
			step, _ := req.Params["step"].(map[string]any)
			if step["step"] != "install_coreos" || step["priority"] != 80.0 {
				t.Errorf("execute_deploy_step %v", step)
			}
			res.Result = map[string]any{"deploy_result": nil, "deploy_step": step}
		default:
			t.Errorf("unexpected command %s", req.Name)
		}
		_ = json.NewEncoder(w).Encode(res)
	}))
	defer agent.Close()
	c := New(Config{}).CustomAgent()
	n := &model.Node{UUID: "n1", DeployStep: model.JSON{"interface": "deploy", "step": "deploy", "priority": 100},
		DriverInternalInfo: model.JSON{ipa.KeyURL: agent.URL, ipa.KeyToken: "tok"}}
	task := &driver.Task{Node: n}
	ctx := context.Background()
	if res, err := c.Continue(ctx, task, string(driver.DeploySteps)); res != driver.Done || err != nil {
		t.Fatalf("Continue in deploy.deploy: %v %v", res, err)
	}
	// the cache survives the node's save (JSON)
	b, _ := json.Marshal(n.DriverInternalInfo)
	n.DriverInternalInfo = model.JSON{}
	_ = json.Unmarshal(b, &n.DriverInternalInfo)
	var offered []string
	for _, s := range c.Steps(n, "deploy", driver.DeploySteps) {
		offered = append(offered, s.Step)
		if s.Step == "install_coreos" && s.Priority != 0 {
			t.Errorf("in-band step offered at priority %d", s.Priority)
		}
	}
	if got := strings.Join(offered, ","); !strings.Contains(got, "install_coreos") || !strings.HasPrefix(got, "deploy,prepare_instance_boot,tear_down_agent,boot_instance") {
		t.Errorf("offered %s", got)
	}
	step := driver.Step{Interface: "deploy", Step: "install_coreos", Priority: 80}
	if res, err := c.ExecuteStep(ctx, task, driver.DeploySteps, step); res != driver.Wait || err != nil {
		t.Fatalf("ExecuteStep install_coreos: %v %v", res, err)
	}
	n.DeployStep = model.JSON{"interface": "deploy", "step": "install_coreos", "priority": 80, "args": map[string]any{}}
	if res, err := c.Continue(ctx, task, string(driver.DeploySteps)); res != driver.Done || err != nil {
		t.Fatalf("Continue in install_coreos: %v %v", res, err)
	}
	_, err := c.ExecuteStep(ctx, task, driver.DeploySteps, driver.Step{Interface: "deploy", Step: "install_windows", Priority: 80})
	if err == nil || !strings.Contains(err.Error(), "Deploy step install_windows has not been found") || !strings.Contains(err.Error(), "install_coreos") {
		t.Errorf("unknown step: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(cmds, ","); got != ipa.CmdGetDeploySteps+","+ipa.CmdExecuteDeployStep {
		t.Errorf("agent commands %s", got)
	}
}
