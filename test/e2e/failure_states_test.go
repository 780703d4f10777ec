package e2e

import (
	"context"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// move is one provision request and the state it must settle in.
type move struct {
	opts nodes.ProvisionStateOpts
	want string
}

func to(tp nodes.TargetProvisionState, want string) move {
	return move{opts: nodes.ProvisionStateOpts{Target: tp}, want: want}
}

var (
	rescueOpts = nodes.ProvisionStateOpts{Target: nodes.TargetRescue, RescuePassword: "fail-test-pw"}
	cleanOpts  = nodes.ProvisionStateOpts{Target: nodes.TargetClean, CleanSteps: []nodes.CleanStep{
		{Interface: nodes.InterfaceDeploy, Step: "erase_devices"},
	}}
	serviceOpts = nodes.ProvisionStateOpts{Target: nodes.TargetService, ServiceSteps: []nodes.ServiceStep{
		{Interface: nodes.InterfaceBIOS, Step: "apply_configuration", Args: map[string]any{
			"settings": []any{map[string]any{"name": "LogicalProc", "value": "Enabled"}},
		}},
	}}
	toActive = []move{
		to(nodes.TargetManage, "manageable"),
		to(nodes.TargetProvide, "available"),
		to(nodes.TargetActive, "active"),
	}
)

// failCase reaches one failure state with fake-hardware's fake_fail knob and
// leaves it again with a verb Ironic allows there.
type failCase struct {
	name   string
	fail   string // driver_info fake_fail
	setup  []move // to the state the failing verb starts from
	failOn nodes.ProvisionStateOpts
	state  string // the failure state
	target any    // its target_provision_state (nil for error)
	// fault is the fault a failed step leaves, with maintenance on ("" =
	// no fault, maintenance stays off).
	fault string
	// refused are verbs Ironic's state machine forbids in the failure state
	// (400), among them the guide's "manage" recovery where it does not apply.
	refused []nodes.TargetProvisionState
	recover []move
}

func failCases() []failCase {
	return []failCase{
		{
			name: "deploy failed", fail: "deploy",
			setup:  toActive[:2],
			failOn: nodes.ProvisionStateOpts{Target: nodes.TargetActive}, state: "deploy failed", target: "active",
			refused: []nodes.TargetProvisionState{nodes.TargetManage, nodes.TargetProvide},
			recover: []move{to(nodes.TargetDeleted, "available"), to(nodes.TargetActive, "active")},
		},
		{
			name: "clean failed (manual)", fail: "clean",
			setup:  toActive[:1],
			failOn: cleanOpts, state: "clean failed", target: "manageable", fault: "clean failure",
			refused: []nodes.TargetProvisionState{nodes.TargetClean, nodes.TargetProvide},
			recover: []move{to(nodes.TargetManage, "manageable"), to(nodes.TargetProvide, "available")},
		},
		{
			name: "clean failed (automated)", fail: "clean",
			setup:  toActive[:1],
			failOn: nodes.ProvisionStateOpts{Target: nodes.TargetProvide}, state: "clean failed", target: "available", fault: "clean failure",
			refused: []nodes.TargetProvisionState{nodes.TargetProvide, nodes.TargetInspect},
			recover: []move{to(nodes.TargetManage, "manageable"), to(nodes.TargetProvide, "available")},
		},
		{
			name: "inspect failed", fail: "inspect",
			setup:  toActive[:1],
			failOn: nodes.ProvisionStateOpts{Target: nodes.TargetInspect}, state: "inspect failed", target: "manageable",
			refused: []nodes.TargetProvisionState{nodes.TargetProvide},
			recover: []move{to(nodes.TargetInspect, "manageable"), to(nodes.TargetProvide, "available")},
		},
		{
			name: "adopt failed", fail: "adopt",
			setup:  toActive[:1],
			failOn: nodes.ProvisionStateOpts{Target: nodes.TargetAdopt}, state: "adopt failed", target: "active",
			refused: []nodes.TargetProvisionState{nodes.TargetProvide},
			recover: []move{to(nodes.TargetAdopt, "active")},
		},
		{
			name: "rescue failed", fail: "rescue",
			setup:  toActive,
			failOn: rescueOpts, state: "rescue failed", target: "rescue",
			refused: []nodes.TargetProvisionState{nodes.TargetManage},
			recover: []move{to(nodes.TargetUnrescue, "active")},
		},
		{
			name: "unrescue failed", fail: "unrescue",
			setup:  append(append([]move{}, toActive...), move{opts: rescueOpts, want: "rescue"}),
			failOn: nodes.ProvisionStateOpts{Target: nodes.TargetUnrescue}, state: "unrescue failed", target: "active",
			refused: []nodes.TargetProvisionState{nodes.TargetManage},
			recover: []move{to(nodes.TargetUnrescue, "active")},
		},
		{
			name: "error", fail: "undeploy",
			setup:  toActive,
			failOn: nodes.ProvisionStateOpts{Target: nodes.TargetDeleted}, state: "error", target: nil,
			refused: []nodes.TargetProvisionState{nodes.TargetManage, nodes.TargetProvide},
			recover: []move{to(nodes.TargetDeleted, "available")},
		},
		{
			name: "service failed", fail: "service",
			setup:  toActive,
			failOn: serviceOpts, state: "service failed", target: "active", fault: "service failure",
			refused: []nodes.TargetProvisionState{nodes.TargetManage},
			recover: []move{{opts: serviceOpts, want: "active"}},
		},
	}
}

// TestFailureStates reaches every failure state through the API, checks what
// Ironic records there (last_error, target, maintenance and fault) and leaves
// it again once the fault is removed from driver_info.
func TestFailureStates(t *testing.T) {
	t.Parallel()
	base := startServer(t)
	for _, tc := range failCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			c := newGopherClient(t, base, gcVersion)
			n := createNode(ctx, t, c, nodes.CreateOpts{DriverInfo: map[string]any{"fake_fail": tc.fail}})
			id := n.UUID
			run(ctx, t, c, base, id, tc.setup)

			provision(ctx, t, c, id, tc.failOn)
			failed := waitState(t, base, id, tc.state)
			if le, _ := failed["last_error"].(string); le == "" {
				t.Errorf("%s: last_error is empty", tc.state)
			}
			if failed["target_provision_state"] != tc.target {
				t.Errorf("%s: target_provision_state = %v, want %v", tc.state, failed["target_provision_state"], tc.target)
			}
			wantMaint := tc.fault != ""
			var wantFaultField any
			if wantMaint {
				wantFaultField = tc.fault
			}
			if failed["maintenance"] != wantMaint || failed["fault"] != wantFaultField {
				t.Errorf("%s: maintenance %v fault %v, want %v %v", tc.state, failed["maintenance"], failed["fault"], wantMaint, wantFaultField)
			}
			if reason, _ := failed["maintenance_reason"].(string); wantMaint && reason == "" {
				t.Errorf("%s: maintenance_reason is empty, want the step's error", tc.state)
			}
			for _, verb := range tc.refused {
				err := nodes.ChangeProvisionState(ctx, c, id, nodes.ProvisionStateOpts{Target: verb}).ExtractErr()
				wantFault(t, string(verb)+" from "+tc.state, err, 400, invalidState(string(verb), id, tc.state))
			}

			// Remove the fault, leave maintenance, recover.
			if _, err := nodes.Update(ctx, c, id, nodes.UpdateOpts{
				nodes.UpdateOperation{Op: nodes.RemoveOp, Path: "/driver_info/fake_fail"},
			}).Extract(); err != nil {
				t.Fatalf("remove fake_fail in %s: %v", tc.state, err)
			}
			if wantMaint {
				if err := nodes.UnsetMaintenance(ctx, c, id).ExtractErr(); err != nil {
					t.Fatalf("unset maintenance in %s: %v", tc.state, err)
				}
				if got := getNode(t, base, id); got["maintenance"] != false || got["fault"] != nil || got["maintenance_reason"] != nil {
					t.Errorf("after maintenance unset: maintenance %v fault %v reason %v, want false/null/null",
						got["maintenance"], got["fault"], got["maintenance_reason"])
				}
			}
			final := run(ctx, t, c, base, id, tc.recover)
			if final["last_error"] != nil {
				t.Errorf("after recovering from %s: last_error = %v, want null", tc.state, final["last_error"])
			}
		})
	}
}

// run applies moves in order, waiting for each to settle; it returns the
// node as the last move left it.
func run(ctx context.Context, t *testing.T, c *gophercloud.ServiceClient, base, id string, moves []move) map[string]any {
	t.Helper()
	var n map[string]any
	for _, m := range moves {
		provision(ctx, t, c, id, m.opts)
		n = waitState(t, base, id, m.want)
	}
	return n
}
