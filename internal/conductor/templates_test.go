package conductor_test

import (
	"errors"
	"testing"

	"github.com/anvil-metal/anvil/internal/records"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

func (e *env) template(name string, steps ...model.DeployStep) {
	e.t.Helper()
	if err := records.New(e.st, nil, nil).CreateDeployTemplate(e.ctx, &model.DeployTemplate{Name: name, Steps: steps}); err != nil {
		e.t.Fatal(err)
	}
}

// availableWithTraits is an available fake node whose every deploy step
// fails (fake_fail=deploy), so last_error names the first step that ran,
// and whose instance asks for traits.
func (e *env) availableWithTraits(traits ...any) string {
	e.t.Helper()
	id := e.create(model.JSON{"fake_fail": "deploy"}).UUID
	e.must(id, "manage", fsm.Manageable)
	e.must(id, "provide", fsm.Available)
	if _, err := e.c.Nodes().UpdateNode(e.ctx, id, func(n *model.Node) error {
		n.InstanceInfo = model.JSON{"image_source": "http://127.0.0.1/img", "traits": traits}
		n.Traits = nil
		for _, tr := range traits {
			n.Traits = append(n.Traits, tr.(string))
		}
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

const failedByFake = ": fake deploy failure requested by driver_info fake_fail"

// The steps of the deploy templates named by instance_info.traits join the
// deploy in priority order (Ironic's _get_all_deployment_steps); user
// deploy_steps override them; bad template steps fail the deploy with
// Ironic's text.
func TestDeployTemplatesJoinTheDeploy(t *testing.T) {
	e := newEnv(t, nil)
	raidArgs := model.JSON{"raid_config": map[string]any{"logical_disks": []any{}}}
	e.template("CUSTOM_RAID", model.DeployStep{Interface: "raid", Step: "apply_configuration", Args: raidArgs, Priority: 150})
	e.template("CUSTOM_LATE", model.DeployStep{Interface: "raid", Step: "apply_configuration", Args: model.JSON{}, Priority: 50})
	e.template("CUSTOM_BIOS", model.DeployStep{Interface: "bios", Step: "apply_configuration",
		Args: model.JSON{"settings": []any{}}, Priority: 10})

	deployStep := "{'interface': 'deploy', 'step': 'deploy', 'args': {}, 'priority': 100}"
	raidStep := "{'interface': 'raid', 'step': 'apply_configuration', 'args': {'raid_config': {'logical_disks': []}}, 'priority': 150}"
	cases := []struct {
		name   string
		traits []any
		user   []model.JSON
		want   string // last_error after the node's id
	}{
		{"no traits: the driver's steps", nil, nil, " failed step " + deployStep + failedByFake},
		{"unmatched traits", []any{"CUSTOM_NONE"}, nil, " failed step " + deployStep + failedByFake},
		{"template step first by priority", []any{"CUSTOM_NONE", "CUSTOM_RAID"}, nil, " failed step " + raidStep + failedByFake},
		{"template step after deploy.deploy", []any{"CUSTOM_LATE"}, nil, " failed step " + deployStep + failedByFake},
		{"user step disables the template's", []any{"CUSTOM_RAID"},
			[]model.JSON{{"interface": "raid", "step": "apply_configuration", "args": map[string]any{}, "priority": 0.0}},
			" failed step " + deployStep + failedByFake},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := e.availableWithTraits(tc.traits...)
			n := e.must(id, "active", fsm.DeployFailed, func(r *conductor.ProvisionRequest) { r.DeploySteps = tc.user })
			if n.LastError != "Node "+id+tc.want {
				t.Fatalf("last_error %q\nwant       %q", n.LastError, "Node "+id+tc.want)
			}
		})
	}

	t.Run("a step the driver does not offer", func(t *testing.T) {
		id := e.availableWithTraits("CUSTOM_BIOS", "CUSTOM_RAID")
		n := e.must(id, "active", fsm.DeployFailed)
		want := "Validation of deploy steps from deploy templates matching this node's instance traits failed. " +
			"Matching deploy templates: CUSTOM_BIOS,CUSTOM_RAID. Errors: node does not support this deploy step: " +
			"{'interface': 'bios', 'step': 'apply_configuration', 'args': {'settings': []}, 'priority': 10}"
		if n.LastError != want {
			t.Fatalf("last_error %q\nwant       %q", n.LastError, want)
		}
	})
	// Known steps are validated when the deploy is asked for (Ironic's
	// start_deploy, skip_missing): the request fails, the node stays.
	t.Run("two templates with one step", func(t *testing.T) {
		id := e.availableWithTraits("CUSTOM_RAID", "CUSTOM_LATE")
		err := e.do(id, "active")
		want := "Failed to validate deploy or power info for node " + id + ": Validation of deploy steps from deploy templates " +
			"matching this node's instance traits failed. Matching deploy templates: CUSTOM_LATE,CUSTOM_RAID. Errors: deploy steps " +
			"from all deploy templates matching this node's instance traits cannot have the same interface and step. " +
			"Duplicate deploy steps for raid.apply_configuration"
		var f *fault.Error
		if !errors.As(err, &f) || f.Kind != fault.Invalid || err.Error() != want {
			t.Fatalf("deploy: %v\nwant Invalid %q", err, want)
		}
		if n := e.get(id); n.ProvisionState != fsm.Available {
			t.Fatalf("state %q after a refused deploy", n.ProvisionState)
		}
	})
	t.Run("instance traits the node lacks", func(t *testing.T) {
		id := e.availableWithTraits("CUSTOM_RAID")
		if _, err := e.c.Nodes().SetTraits(e.ctx, id, func([]string) ([]string, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		err := e.do(id, "active")
		want := "Failed to validate deploy or power info for node " + id +
			": Cannot specify instance traits that are not also set on the node. Node " + id + " is missing traits CUSTOM_RAID"
		if err == nil || err.Error() != want {
			t.Fatalf("deploy: %v\nwant %q", err, want)
		}
	})
	t.Run("a template deleted no longer applies", func(t *testing.T) {
		if err := records.New(e.st, nil, nil).DeleteDeployTemplate(e.ctx, "CUSTOM_RAID"); err != nil {
			t.Fatal(err)
		}
		id := e.availableWithTraits("CUSTOM_RAID")
		if n := e.must(id, "active", fsm.DeployFailed); n.LastError != "Node "+id+" failed step "+deployStep+failedByFake {
			t.Fatalf("last_error %q", n.LastError)
		}
	})
}
