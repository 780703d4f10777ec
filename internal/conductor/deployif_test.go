package conductor_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// learner is a deploy interface that learns its deploy steps from its
// agent (driver.StepLearner), as custom-agent does: it offers only
// deploy.deploy and runs whatever step it is given.
type learner struct {
	mu  sync.Mutex
	ran []string
}

func (l *learner) Validate(*driver.Task) error { return nil }
func (l *learner) Deploy(context.Context, *driver.Task) (driver.Result, error) {
	return driver.Done, nil
}
func (l *learner) TearDown(context.Context, *driver.Task) error { return nil }
func (l *learner) Steps(_ *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface == "deploy" && kind == driver.DeploySteps {
		return []driver.Step{{Interface: "deploy", Step: "deploy", Priority: 100}}
	}
	return nil
}
func (l *learner) ExecuteStep(_ context.Context, _ *driver.Task, _ driver.StepKind, s driver.Step) (driver.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ran = append(l.ran, s.Step)
	return driver.Done, nil
}
func (l *learner) LearnsSteps(kind driver.StepKind) bool { return kind == driver.DeploySteps }

// TestDeployStepsLearntFromTheAgent: a user's deploy step that the deploy
// interface does not list yet is planned as asked when the interface
// learns its steps from its agent (Metal3's custom deploy method on
// custom-agent), in priority order after deploy.deploy; an interface that
// does not learn refuses it, as before.
func TestDeployStepsLearntFromTheAgent(t *testing.T) {
	l := &learner{}
	e := newEnv(t, func(c *conductor.Config) { c.Drivers.AddInterface("deploy", "learner", l) })
	user := []model.JSON{{"interface": "deploy", "step": "install_coreos", "args": map[string]any{}, "priority": 80.0}}
	for _, tc := range []struct {
		deploy, want string
	}{{"learner", fsm.Active}, {"fake", fsm.DeployFailed}} {
		n := &model.Node{Driver: "fake-hardware"}
		n.Interfaces.Set("deploy", tc.deploy)
		if err := e.c.Nodes().CreateNode(e.ctx, n, false); err != nil {
			t.Fatal(err)
		}
		e.must(n.UUID, "manage", fsm.Manageable)
		e.must(n.UUID, "provide", fsm.Available)
		got := e.must(n.UUID, "active", tc.want, func(r *conductor.ProvisionRequest) { r.DeploySteps = user })
		if tc.want == fsm.DeployFailed && !strings.Contains(got.LastError, "does not support this deploy step") {
			t.Errorf("%s: last_error %q", tc.deploy, got.LastError)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Join(l.ran, ",") != "deploy,install_coreos" {
		t.Errorf("steps run %v, want deploy, install_coreos", l.ran)
	}
}
