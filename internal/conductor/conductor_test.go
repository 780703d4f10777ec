package conductor_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

// The storage contract satisfies the conductor's Store.
var _ conductor.Store = store.Store(nil)

type env struct {
	t    testing.TB
	ctx  context.Context
	st   store.Store
	c    *conductor.Conductor
	fake *fake.Hardware
}

func newEnv(t testing.TB, mod func(*conductor.Config)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fk := fake.New()
	reg := driver.NewRegistry()
	fk.Register(reg)
	cfg := conductor.Config{Store: st, Drivers: reg, Host: "test-conductor", AutomatedClean: true,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), LockRetries: 0}
	if mod != nil {
		mod(&cfg)
	}
	c, err := conductor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := c.Start(cctx); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, st: st, c: c, fake: fk}
}

func (e *env) create(info model.JSON) *model.Node {
	e.t.Helper()
	n := &model.Node{Driver: "fake-hardware", DriverInfo: info}
	if err := e.c.Nodes().CreateNode(e.ctx, n, false); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// do runs a verb and waits for the worker to finish.
func (e *env) do(uuid, target string, mod ...func(*conductor.ProvisionRequest)) error {
	e.t.Helper()
	req := conductor.ProvisionRequest{Target: target, Minor: 89}
	for _, m := range mod {
		m(&req)
	}
	err := e.c.Provision(e.ctx, uuid, req)
	e.c.WaitIdle()
	return err
}

func (e *env) must(uuid, target string, want string, mod ...func(*conductor.ProvisionRequest)) *model.Node {
	e.t.Helper()
	if err := e.do(uuid, target, mod...); err != nil {
		e.t.Fatalf("%s: %v", target, err)
	}
	n := e.get(uuid)
	if n.ProvisionState != want {
		e.t.Fatalf("%s: state %q (target %q, last_error %q), want %q", target, n.ProvisionState, n.TargetProvisionState, n.LastError, want)
	}
	if n.Reservation != "" {
		e.t.Fatalf("%s: reservation %q left behind", target, n.Reservation)
	}
	return n
}

func (e *env) get(uuid string) *model.Node {
	e.t.Helper()
	n, err := e.st.Nodes().GetNode(e.ctx, uuid)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) setInfo(uuid, k string, v any) {
	e.t.Helper()
	_, err := e.c.Nodes().UpdateNode(e.ctx, uuid, func(n *model.Node) error {
		if n.DriverInfo == nil {
			n.DriverInfo = model.JSON{}
		}
		if v == nil {
			delete(n.DriverInfo, k)
		} else {
			n.DriverInfo[k] = v
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func cleanSteps(steps ...model.JSON) func(*conductor.ProvisionRequest) {
	return func(r *conductor.ProvisionRequest) { r.CleanSteps = steps }
}

func password(p string) func(*conductor.ProvisionRequest) {
	return func(r *conductor.ProvisionRequest) { r.RescuePassword = &p }
}

func serviceSteps(steps ...model.JSON) func(*conductor.ProvisionRequest) {
	return func(r *conductor.ProvisionRequest) { r.ServiceSteps = steps }
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	n := e.create(model.JSON{})
	if n.ProvisionState != fsm.Enroll || n.Interfaces.Deploy != "fake" || n.Interfaces.Network != "noop" {
		t.Fatalf("new node: state %q deploy %q network %q", n.ProvisionState, n.Interfaces.Deploy, n.Interfaces.Network)
	}
	id := n.UUID
	e.must(id, "manage", fsm.Manageable)
	e.must(id, "inspect", fsm.Manageable)
	got := e.must(id, "clean", fsm.Manageable, cleanSteps(model.JSON{"interface": "deploy", "step": "erase_devices"}))
	if got.TargetProvisionState != "" || got.CleanStep != nil {
		t.Fatalf("after manual clean: target %q clean_step %v", got.TargetProvisionState, got.CleanStep)
	}
	e.must(id, "provide", fsm.Available)
	e.must(id, "active", fsm.Active)
	e.must(id, "rescue", fsm.Rescue, password("s3cret"))
	if p := e.get(id).InstanceInfo["rescue_password"]; p != "s3cret" {
		t.Fatalf("rescue password not kept for the rescue interface: %v", p)
	}
	e.must(id, "unrescue", fsm.Active)
	e.must(id, "rebuild", fsm.Active)
	e.must(id, "service", fsm.Active, serviceSteps(model.JSON{"interface": "bios", "step": "factory_reset"}))
	e.must(id, "undeploy", fsm.Available)
	e.must(id, "manage", fsm.Manageable)
	e.must(id, "adopt", fsm.Active)

	hist, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	transitions := 0
	for _, h := range hist {
		if h.FromState == "" {
			continue
		}
		transitions++
		if to, _, ok := fsm.Next(h.FromState, h.Trigger, ""); !ok || to != h.ToState {
			t.Errorf("history has a transition the table forbids: %s --%s--> %s", h.FromState, h.Trigger, h.ToState)
		}
	}
	if transitions < 20 {
		t.Errorf("history recorded %d transitions, want the whole lifecycle", transitions)
	}
}

func TestManualCleanUnknownStep(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(nil).UUID
	e.must(id, "manage", fsm.Manageable)
	n := e.must(id, "clean", fsm.CleanFailed, cleanSteps(model.JSON{"interface": "deploy", "step": "no_such_step"}))
	want := "Cannot clean node " + id + ": node does not support this clean step: {'interface': 'deploy', 'step': 'no_such_step'}"
	if n.LastError != want || n.TargetProvisionState != fsm.Manageable {
		t.Fatalf("last_error %q target %q", n.LastError, n.TargetProvisionState)
	}
	if n := e.must(id, "manage", fsm.Manageable); n.LastError != want {
		t.Fatalf("manage out of clean failed changed last_error to %q; Ironic keeps it until new work starts", n.LastError)
	}
	if n := e.must(id, "provide", fsm.Available); n.LastError != "" {
		t.Fatalf("last_error %q not cleared when new work started", n.LastError)
	}
}

// Every failure state is reachable with fake_fail and left by a verb Ironic allows.
func TestFailureStates(t *testing.T) {
	svc := serviceSteps(model.JSON{"interface": "bios", "step": "factory_reset"})
	cases := []struct {
		name     string
		fail     string
		setup    []string // verbs run before fake_fail is set
		verb     string
		mod      []func(*conductor.ProvisionRequest)
		want     string
		recover  string // verb that leaves the failure state once fake_fail is gone
		recovMod []func(*conductor.ProvisionRequest)
		after    string
	}{
		{"verify fails back to enroll", "verify", nil, "manage", nil, fsm.Enroll, "manage", nil, fsm.Manageable},
		{"deploy failed", "deploy", []string{"manage", "provide"}, "active", nil, fsm.DeployFailed, "active", nil, fsm.Active},
		{"deploy failed then undeploy", "deploy", []string{"manage", "provide"}, "active", nil, fsm.DeployFailed, "deleted", nil, fsm.Available},
		{"clean failed", "clean", []string{"manage"}, "provide", nil, fsm.CleanFailed, "manage", nil, fsm.Manageable},
		{"inspect failed", "inspect", []string{"manage"}, "inspect", nil, fsm.InspectFailed, "manage", nil, fsm.Manageable},
		{"inspect failed, inspect again", "inspect", []string{"manage"}, "inspect", nil, fsm.InspectFailed, "inspect", nil, fsm.Manageable},
		{"rescue failed", "rescue", []string{"manage", "provide", "active"}, "rescue", []func(*conductor.ProvisionRequest){password("x")}, fsm.RescueFailed, "unrescue", nil, fsm.Active},
		{"unrescue failed", "unrescue", []string{"manage", "provide", "active", "rescue"}, "unrescue", nil, fsm.UnrescueFailed, "unrescue", nil, fsm.Active},
		{"adopt failed", "adopt", []string{"manage"}, "adopt", nil, fsm.AdoptFailed, "manage", nil, fsm.Manageable},
		{"adopt failed, adopt again", "adopt", []string{"manage"}, "adopt", nil, fsm.AdoptFailed, "adopt", nil, fsm.Active},
		{"error from a failed tear down", "undeploy", []string{"manage", "provide", "active"}, "deleted", nil, fsm.Error, "deleted", nil, fsm.Available},
		{"error, rebuild", "undeploy", []string{"manage", "provide", "active"}, "deleted", nil, fsm.Error, "rebuild", nil, fsm.Active},
		{"service failed", "service", []string{"manage", "provide", "active"}, "service", []func(*conductor.ProvisionRequest){svc}, fsm.ServiceFailed, "abort", nil, fsm.Active},
		{"service failed, service again", "service", []string{"manage", "provide", "active"}, "service", []func(*conductor.ProvisionRequest){svc}, fsm.ServiceFailed, "service", []func(*conductor.ProvisionRequest){svc}, fsm.Active},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.create(model.JSON{}).UUID
			for _, v := range tc.setup {
				mod := []func(*conductor.ProvisionRequest){}
				if v == "rescue" {
					mod = append(mod, password("x"))
				}
				if err := e.do(id, v, mod...); err != nil {
					t.Fatalf("setup %s: %v", v, err)
				}
			}
			e.setInfo(id, "fake_fail", tc.fail)
			n := e.must(id, tc.verb, tc.want, tc.mod...)
			if n.LastError == "" {
				t.Fatal("last_error is empty in a failure state")
			}
			if d := diagnosisOf(t, e, id); d.ProvisionState != tc.want || d.LastError != n.LastError || d.Class == "" || d.Hint == "" {
				t.Fatalf("diagnosis %+v", d)
			}
			e.setInfo(id, "fake_fail", nil)
			if n.Maintenance {
				if err := e.c.Nodes().SetMaintenance(e.ctx, id, false, ""); err != nil {
					t.Fatal(err)
				}
			}
			e.must(id, tc.recover, tc.after, tc.recovMod...)
		})
	}
}

func TestCleanStepFailureSetsMaintenance(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(model.JSON{"fake_fail": "clean"}).UUID
	e.must(id, "manage", fsm.Manageable)
	n := e.must(id, "provide", fsm.CleanFailed)
	if !n.Maintenance || n.Fault != "clean failure" {
		t.Fatalf("maintenance %v fault %q", n.Maintenance, n.Fault)
	}
}

func TestInvalidTransitionAndArguments(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(nil).UUID
	cases := []struct {
		name   string
		target string
		mod    []func(*conductor.ProvisionRequest)
		kind   fault.Kind
		msg    string
	}{
		{"deploy from enroll", "active", nil, fault.Invalid, `The requested action "active" can not be performed on node "` + id + `" while it is in state "enroll".`},
		{"unknown verb", "bogus", nil, fault.Invalid, `The requested action "bogus" can not be performed on node "` + id + `" while it is in state "enroll".`},
		{"provide from enroll", "provide", nil, fault.Invalid, `The requested action "provide" can not be performed on node "` + id + `" while it is in state "enroll".`},
		// A verb newer than the request's version is the API's 406
		// (internal/api TestNodeProvision "manage at 1.3").
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := e.do(id, tc.target, tc.mod...)
			f, ok := fault.As(err)
			if !ok || f.Kind != tc.kind || f.Msg != tc.msg {
				t.Fatalf("got %v, want kind %d %q", err, tc.kind, tc.msg)
			}
		})
	}
	e.must(id, "manage", fsm.Manageable)
	err := e.do(id, "clean")
	if f, ok := fault.As(err); !ok || f.Msg != `"clean_steps" is required when setting target provision state to clean` {
		t.Fatalf("clean without steps: %v", err)
	}
	e.must(id, "provide", fsm.Available)
	e.must(id, "active", fsm.Active)
	if err := e.do(id, "rescue"); err == nil {
		t.Fatal("rescue without password accepted")
	}
	if err := e.c.Nodes().DeleteNode(e.ctx, id); fault.KindOf(err) != fault.Conflict {
		t.Fatalf("delete active node: %v", err)
	}
	if err := e.c.Nodes().SetMaintenance(e.ctx, id, true, "disk swap"); err != nil {
		t.Fatal(err)
	}
	if err := e.do(id, "rebuild"); fault.KindOf(err) != fault.Invalid {
		t.Fatalf("rebuild in maintenance: %v", err)
	}
	if err := e.c.Nodes().DeleteNode(e.ctx, id); err != nil {
		t.Fatalf("delete in maintenance: %v", err)
	}
	if _, err := e.st.Nodes().GetNode(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("node still there: %v", err)
	}
}

func TestLockedAndNoFreeWorker(t *testing.T) {
	e := newEnv(t, func(c *conductor.Config) { c.Workers = 1 })
	slow := e.create(model.JSON{"fake_verify_delay": "0.3"}).UUID
	other := e.create(nil).UUID
	if err := e.c.Provision(e.ctx, slow, conductor.ProvisionRequest{Target: "manage", Minor: 89}); err != nil {
		t.Fatal(err)
	}
	n := e.get(slow)
	if n.ProvisionState != fsm.Verifying || n.TargetProvisionState != fsm.Manageable || n.Reservation != "test-conductor" {
		t.Fatalf("saved before answering: %q/%q resv %q", n.ProvisionState, n.TargetProvisionState, n.Reservation)
	}
	err := e.c.Nodes().SetMaintenance(e.ctx, slow, true, "x")
	if f, ok := fault.As(err); !ok || f.Msg != "Node "+slow+" is locked by host test-conductor, please retry after the current operation is completed." {
		t.Fatalf("locked: %v", err)
	}
	// A forbidden verb on a locked node is 409 too (Ironic's API rule).
	if err := e.c.Provision(e.ctx, slow, conductor.ProvisionRequest{Target: "active", Minor: 89}); fault.KindOf(err) != fault.Conflict {
		t.Fatalf("forbidden verb while locked: %v", err)
	}
	err = e.c.Provision(e.ctx, other, conductor.ProvisionRequest{Target: "manage", Minor: 89})
	if fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("second job with one worker: %v", err)
	}
	if n := e.get(other); n.ProvisionState != fsm.Enroll || n.Reservation != "" {
		t.Fatalf("503 changed the node: %q resv %q", n.ProvisionState, n.Reservation)
	}
	e.c.WaitIdle()
	if n := e.get(slow); n.ProvisionState != fsm.Manageable || n.Reservation != "" {
		t.Fatalf("after work: %q resv %q", n.ProvisionState, n.Reservation)
	}
}

func TestPower(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(nil).UUID
	for _, tc := range []struct{ target, want string }{
		{"power on", fsm.PowerOn}, {"power off", fsm.PowerOff}, {"rebooting", fsm.PowerOn},
		{"soft power off", fsm.PowerOff}, {"soft rebooting", fsm.PowerOn},
	} {
		if err := e.c.SetPower(e.ctx, id, conductor.PowerRequest{Target: tc.target}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitIdle()
		n := e.get(id)
		if n.PowerState != tc.want || n.TargetPowerState != "" || n.Reservation != "" {
			t.Fatalf("%s: power %q target %q resv %q", tc.target, n.PowerState, n.TargetPowerState, n.Reservation)
		}
	}
	err := e.c.SetPower(e.ctx, id, conductor.PowerRequest{Target: "bogus"})
	if f, ok := fault.As(err); !ok || f.Msg != `The requested action "bogus" can not be performed on node "`+id+`" while it is in state "power on".` {
		t.Fatalf("bogus power target: %v", err)
	}
	e.setInfo(id, "fake_fail", "power")
	if err := e.c.SetPower(e.ctx, id, conductor.PowerRequest{Target: "power off"}); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if n := e.get(id); n.PowerState != fsm.PowerOn || n.LastError == "" || n.TargetPowerState != "" {
		t.Fatalf("failed power action: power %q last_error %q", n.PowerState, n.LastError)
	}
}

func TestShutdownInterruptsAndReleases(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(model.JSON{"fake_verify_delay": "30"}).UUID
	if err := e.c.Provision(e.ctx, id, conductor.ProvisionRequest{Target: "manage", Minor: 89}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	if err := e.c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	n := e.get(id)
	if n.Reservation != "" || n.ProvisionState != fsm.Enroll || n.LastError == "" {
		t.Fatalf("after shutdown: state %q resv %q last_error %q", n.ProvisionState, n.Reservation, n.LastError)
	}
	if err := e.c.Provision(e.ctx, id, conductor.ProvisionRequest{Target: "manage", Minor: 89}); fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("work accepted after shutdown: %v", err)
	}
}

func TestInspectionCreatesPorts(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(model.JSON{"fake_inspect_macs": "52:54:00:AA:00:01, 52:54:00:aa:00:02"}).UUID
	e.must(id, "manage", fsm.Manageable)
	other := e.create(nil).UUID
	if err := e.c.NodeRecords().CreatePort(e.ctx, &model.Port{UUID: "6d85703a-565d-469a-96ce-30b6de53079d", NodeUUID: other, Address: "52:54:00:aa:00:02"}); err != nil {
		t.Fatal(err)
	}
	n := e.must(id, "inspect", fsm.Manageable)
	if n.InspectionFinishedAt.IsZero() {
		t.Fatal("inspection_finished_at not set")
	}
	ports, err := e.st.Ports().ListPorts(e.ctx, store.PortQuery{NodeUUID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 1 || ports[0].Address != "52:54:00:aa:00:01" || !ports[0].PXEEnabled {
		t.Fatalf("ports after inspection: %+v (the MAC already used by another node must be skipped)", ports)
	}
	assertHistory(t, e, id, "Port 52:54:00:aa:00:01 created by inspection")
}

// A power off or reboot forgets the running agent, as Ironic's
// wipe_internal_info_on_power_off: the agent that boots next is issued a
// new token by its lookup. It is the way out for an agent that never
// received its lookup answer (every later lookup gets the token masked);
// a power on keeps the agent.
func TestPowerOffForgetsTheAgent(t *testing.T) {
	e := newEnv(t, nil)
	n := e.create(nil)
	n.ProvisionState = fsm.CleanWait
	n.DriverInternalInfo = model.JSON{ipa.KeyURL: "http://127.0.0.1:9999", ipa.KeyVerifyCA: "PEM", ipa.KeyCachedDeploySteps: map[string]any{}}
	if err := e.st.Nodes().UpdateNode(e.ctx, n); err != nil {
		t.Fatal(err)
	}
	lookup := func() string {
		t.Helper()
		_, tok, err := e.c.Agents().Lookup(e.ctx, nil, n.UUID)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := lookup()
	if first == ipa.MaskedToken || lookup() != ipa.MaskedToken {
		t.Fatal("the token was not issued once")
	}
	power := func(target string) {
		t.Helper()
		if err := e.c.SetPower(e.ctx, n.UUID, conductor.PowerRequest{Target: target}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitIdle()
	}
	power(fsm.PowerOn)
	if lookup() != ipa.MaskedToken {
		t.Fatal("a power on forgot the agent's token")
	}
	for _, target := range []string{fsm.Rebooting, fsm.PowerOff, fsm.SoftRebooting, fsm.SoftPowerOff} {
		power(target)
		info := e.get(n.UUID).DriverInternalInfo
		for _, k := range []string{ipa.KeyURL, ipa.KeyVerifyCA, ipa.KeyCachedDeploySteps, ipa.KeyToken} {
			if _, ok := info[k]; ok {
				t.Errorf("%s kept %s", target, k)
			}
		}
		if tok := lookup(); tok == ipa.MaskedToken || tok == first {
			t.Fatalf("after %s the next agent's lookup got %q, want a new token", target, tok)
		}
	}
}
