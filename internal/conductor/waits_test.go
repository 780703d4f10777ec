package conductor_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// clock is an injected, manually advanced clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newClockEnv(t *testing.T) (*env, *clock) { return newClockEnvWith(t, nil) }

// newClockEnvWith is newClockEnv with mod applied to the configuration.
func newClockEnvWith(t testing.TB, mod func(*conductor.Config)) (*env, *clock) {
	clk := &clock{now: time.Now().UTC()} // the store stamps conductors with real time
	e := newEnv(t, func(c *conductor.Config) {
		c.Now = clk.Now
		d := 30 * time.Minute
		c.DeployCallbackTimeout, c.CleanCallbackTimeout, c.InspectWaitTimeout = d, d, d
		c.RescueCallbackTimeout, c.ServiceCallbackTimeout = d, d
		c.ForcePowerStateDuringSync = true
		if mod != nil {
			mod(c)
		}
	})
	return e, clk
}

// waitCase parks one operation in its wait state.
type waitCase struct {
	name     string
	wait     string   // fake_wait value
	setup    []string // verbs before the parked one
	verb     string
	mod      []func(*conductor.ProvisionRequest)
	waiting  string // the wait state
	resumed  string // state after a heartbeat
	timedOut string // failure state after the timeout
	message  string // last_error prefix after the timeout
}

func waitCases() []waitCase {
	svc := serviceSteps(model.JSON{"interface": "bios", "step": "factory_reset"})
	return []waitCase{
		{"deploy", "deploy", []string{"manage", "provide"}, "active", nil, fsm.DeployWait, fsm.Active, fsm.DeployFailed, "Timeout reached while waiting for callback for node "},
		{"automated clean", "clean", []string{"manage"}, "provide", nil, fsm.CleanWait, fsm.Available, fsm.CleanFailed, "Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node. Failed on step {'interface': 'deploy', 'step': 'erase_devices_metadata'"},
		{"manual clean", "clean", []string{"manage"}, "clean", []func(*conductor.ProvisionRequest){cleanSteps(model.JSON{"interface": "deploy", "step": "erase_devices"})}, fsm.CleanWait, fsm.Manageable, fsm.CleanFailed, "Timeout reached while cleaning the node."},
		{"inspect", "inspect", []string{"manage"}, "inspect", nil, fsm.InspectWait, fsm.Manageable, fsm.InspectFailed, "Timeout reached while inspecting the node. Please check if the ramdisk responsible for the inspection is running on the node."},
		{"rescue", "rescue", []string{"manage", "provide", "active"}, "rescue", []func(*conductor.ProvisionRequest){password("pw")}, fsm.RescueWait, fsm.Rescue, fsm.RescueFailed, "Timeout reached while waiting for rescue ramdisk callback for node "},
		{"service", "service", []string{"manage", "provide", "active"}, "service", []func(*conductor.ProvisionRequest){svc}, fsm.ServiceWait, fsm.Active, fsm.ServiceFailed, "Timeout reached while servicing the node."},
	}
}

func (e *env) park(tc waitCase) string {
	e.t.Helper()
	id := e.create(model.JSON{}).UUID
	for _, v := range tc.setup {
		e.must(id, v, mustStable(v))
	}
	e.setInfo(id, "fake_wait", tc.wait)
	n := e.must(id, tc.verb, tc.waiting, tc.mod...)
	if n.Reservation != "" {
		e.t.Fatal("lock held while waiting for a callback")
	}
	return id
}

func mustStable(verb string) string {
	return map[string]string{"manage": fsm.Manageable, "provide": fsm.Available, "active": fsm.Active}[verb]
}

func TestWaitStatesResumeOnHeartbeat(t *testing.T) {
	for _, tc := range waitCases() {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newClockEnv(t)
			id := e.park(tc)
			clk.Advance(29 * time.Minute)
			if err := e.c.CheckTimeouts(e.ctx); err != nil {
				t.Fatal(err)
			}
			if s := e.get(id).ProvisionState; s != tc.waiting {
				t.Fatalf("timed out early: %s", s)
			}
			if err := e.c.Agents().Heartbeat(e.ctx, id, ipa.Heartbeat{}); err != nil {
				t.Fatal(err)
			}
			e.c.WaitIdle()
			n := e.get(id)
			if n.ProvisionState != tc.resumed || n.Reservation != "" || n.LastError != "" {
				t.Fatalf("after heartbeat: %s/%s resv %q err %q", n.ProvisionState, n.TargetProvisionState, n.Reservation, n.LastError)
			}
		})
	}
}

// A heartbeat that finds the step still running (the agent's command not
// finished) leaves the node in its wait state with no history entry, and
// restarts the callback timeout (Ironic's touch_provisioning); a step the
// agent failed fails the node from its wait state.
func TestStepWaitStatesPolledOnHeartbeat(t *testing.T) {
	for _, tc := range waitCases() {
		if !strings.Contains(tc.waiting, "wait") || tc.waiting == fsm.InspectWait || tc.waiting == fsm.RescueWait {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			saved := &savedStates{}
			e, clk := newClockEnvWith(t, func(c *conductor.Config) {
				saved.NodeStore = c.Store.Nodes()
				c.Store = savingStore{c.Store, saved}
			})
			id := e.create(model.JSON{"fake_finish": tc.wait}).UUID
			e.setInfo(id, "fake_running", 2)
			for _, v := range tc.setup {
				e.must(id, v, mustStable(v))
			}
			e.setInfo(id, "fake_wait", tc.wait)
			e.must(id, tc.verb, tc.waiting, tc.mod...)
			hist := func() int {
				h, err := e.st.Nodes().ListHistory(e.ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return len(h)
			}
			before := hist()
			for range 2 {
				clk.Advance(20 * time.Minute)
				if err := e.c.Agents().Heartbeat(e.ctx, id, ipa.Heartbeat{}); err != nil {
					t.Fatal(err)
				}
				e.c.WaitIdle()
				if err := e.c.CheckTimeouts(e.ctx); err != nil {
					t.Fatal(err)
				}
				n := e.get(id)
				if n.ProvisionState != tc.waiting || n.Reservation != "" || !n.ProvisionUpdatedAt.Equal(clk.Now().UTC().Truncate(time.Microsecond)) {
					t.Fatalf("after a still-running heartbeat: %s resv %q provision_updated_at %v (now %v)",
						n.ProvisionState, n.Reservation, n.ProvisionUpdatedAt, clk.Now())
				}
			}
			if got := hist(); got != before {
				t.Errorf("still-running heartbeats wrote %d history entries", got-before)
			}
			target := e.get(id).TargetProvisionState
			mark := saved.count()
			if err := e.c.Agents().Heartbeat(e.ctx, id, ipa.Heartbeat{}); err != nil {
				t.Fatal(err)
			}
			e.c.WaitIdle()
			if n := e.get(id); n.ProvisionState != tc.resumed || n.LastError != "" {
				t.Fatalf("after the step finished: %s err %q", n.ProvisionState, n.LastError)
			}
			// The resume is saved before the rest of the plan runs (a
			// take-over then finds the node in its operation's state).
			// The step's interface finishes it (driver.StepFinisher) only
			// after that save.
			running, _, _ := fsm.Next(tc.waiting, fsm.EvResume, target)
			if after := saved.since(mark); len(after) < 2 || after[0] != running || after[len(after)-1] != tc.resumed+" finished" {
				t.Errorf("states saved after the finishing heartbeat: %q, want %q first, %q last", after, running, tc.resumed+" finished")
			}
		})
	}
	t.Run("failed step", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(model.JSON{"fake_fail": "continue"}).UUID
		e.must(id, "manage", fsm.Manageable)
		e.setInfo(id, "fake_wait", "clean")
		e.must(id, "clean", fsm.CleanWait, cleanSteps(model.JSON{"interface": "deploy", "step": "erase_devices"}))
		if err := e.c.Agents().Heartbeat(e.ctx, id, ipa.Heartbeat{}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitIdle()
		n := e.get(id)
		want := "Node " + id + " failed step {'interface': 'deploy', 'step': 'erase_devices'"
		if n.ProvisionState != fsm.CleanFailed || !strings.HasPrefix(n.LastError, want) || !strings.Contains(n.LastError, "fake clean failed on the agent") {
			t.Fatalf("after a heartbeat finding the step failed: %s last_error %q", n.ProvisionState, n.LastError)
		}
		h, err := e.st.Nodes().ListHistory(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(h, func(ev *model.HistoryEvent) bool {
			return ev.FromState == fsm.CleanWait && ev.ToState == fsm.CleanFailed
		}) {
			t.Errorf("no clean wait → clean failed in the history")
		}
	})
}

// TestStepFinishFails: a step found done whose finish fails fails the
// node from its running state, with the step named.
func TestStepFinishFails(t *testing.T) {
	e, _ := newClockEnv(t)
	id := e.create(model.JSON{"fake_fail": "finish"}).UUID
	e.must(id, "manage", fsm.Manageable)
	e.setInfo(id, "fake_wait", "clean")
	e.must(id, "clean", fsm.CleanWait, cleanSteps(model.JSON{"interface": "deploy", "step": "erase_devices"}))
	if err := e.c.Agents().Heartbeat(e.ctx, id, ipa.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	n := e.get(id)
	if n.ProvisionState != fsm.CleanFailed || !strings.Contains(n.LastError, "'step': 'erase_devices'") ||
		!strings.Contains(n.LastError, "fake clean failed to finish") {
		t.Fatalf("after a heartbeat whose step's finish failed: %s last_error %q", n.ProvisionState, n.LastError)
	}
	h, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(h, func(ev *model.HistoryEvent) bool {
		return ev.FromState == fsm.Cleaning && ev.ToState == fsm.CleanFailed
	}) {
		t.Errorf("no cleaning → clean failed in the history")
	}
}

func TestWaitStatesTimeOut(t *testing.T) {
	for _, tc := range waitCases() {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newClockEnv(t)
			id := e.park(tc)
			e.fake.SetPower(id, fsm.PowerOn)
			clk.Advance(30*time.Minute + time.Second)
			if err := e.c.CheckTimeouts(e.ctx); err != nil {
				t.Fatal(err)
			}
			n := e.get(id)
			if n.ProvisionState != tc.timedOut || !strings.HasPrefix(n.LastError, tc.message) || n.Reservation != "" {
				t.Fatalf("after timeout: %s resv %q last_error %q", n.ProvisionState, n.Reservation, n.LastError)
			}
			if tc.waiting == fsm.DeployWait && n.PowerState != fsm.PowerOff {
				t.Fatalf("timed-out deploy left power %q, want power off", n.PowerState)
			}
			d := diagnosisOf(t, e, id)
			if d.Class != "callback-timeout" || d.ProvisionState != tc.timedOut || d.FromState != tc.waiting || d.LastError != n.LastError {
				t.Fatalf("diagnosis %s from %s: class %q, last_error %q", d.ProvisionState, d.FromState, d.Class, d.LastError)
			}
		})
	}
}

// TestTimedOutDeployKeepsPowerWithDisablePowerOff: Ironic never powers off
// a node with disable_power_off, not even after a deploy timeout.
func TestTimedOutDeployKeepsPowerWithDisablePowerOff(t *testing.T) {
	tc := waitCases()[0]
	e, clk := newClockEnv(t)
	id := e.park(tc)
	parked := e.get(id) // set behind the API's back: a waiting node takes no updates
	parked.DisablePowerOff = true
	if err := e.st.Nodes().UpdateNode(e.ctx, parked); err != nil {
		t.Fatal(err)
	}
	e.fake.SetPower(id, fsm.PowerOn)
	clk.Advance(30*time.Minute + time.Second)
	if err := e.c.CheckTimeouts(e.ctx); err != nil {
		t.Fatal(err)
	}
	n := e.get(id)
	dt, _ := e.fake.PowerState(e.ctx, driverTask(n))
	if n.ProvisionState != tc.timedOut || dt != fsm.PowerOn {
		t.Fatalf("after timeout: %s, hardware %q, want %s and power on", n.ProvisionState, dt, tc.timedOut)
	}
}

func TestAbortFromEveryAllowedState(t *testing.T) {
	cases := []struct {
		name  string
		park  waitCase
		want  string
		minor int
	}{
		{"clean wait", waitCases()[1], fsm.CleanFailed, 89},
		{"inspect wait", waitCases()[3], fsm.InspectFailed, 89},
		{"rescue wait", waitCases()[4], fsm.RescueFailed, 89},
		{"service wait", waitCases()[5], fsm.ServiceFailed, 89},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newClockEnv(t)
			id := e.park(tc.park)
			n := e.must(id, "abort", tc.want)
			if n.LastError == "" {
				t.Fatal("abort left no last_error")
			}
		})
	}
	t.Run("wait call-back needs 1.110", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.park(waitCases()[0])
		if err := e.do(id, "abort"); fault.KindOf(err) != fault.NotAcceptable {
			t.Fatalf("abort from wait call-back at 1.89: %v", err)
		}
		e.must(id, "abort", fsm.DeployFailed, func(r *conductor.ProvisionRequest) { r.Minor = 110 })
	})
	t.Run("rejected from stable states", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(nil).UUID
		for _, s := range []string{"", "manage", "provide", "active"} {
			if s != "" {
				e.must(id, s, mustStable(s))
			}
			if err := e.do(id, "abort"); fault.KindOf(err) != fault.Invalid {
				t.Fatalf("abort in %s: %v", e.get(id).ProvisionState, err)
			}
		}
	})
}

func TestHoldAndUnhold(t *testing.T) {
	hold := model.JSON{"interface": "deploy", "step": "hold"}
	erase := model.JSON{"interface": "deploy", "step": "erase_devices"}
	cases := []struct {
		name  string
		setup []string
		verb  string
		mod   func(*conductor.ProvisionRequest)
		held  string
		after string
	}{
		{"clean hold", []string{"manage"}, "clean", cleanSteps(hold, erase), fsm.CleanHold, fsm.Manageable},
		{"deploy hold", []string{"manage", "provide"}, "active", func(r *conductor.ProvisionRequest) { r.DeploySteps = []model.JSON{hold} }, fsm.DeployHold, fsm.Active},
		{"service hold", []string{"manage", "provide", "active"}, "service", serviceSteps(hold, model.JSON{"interface": "bios", "step": "factory_reset"}), fsm.ServiceHold, fsm.Active},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newClockEnv(t)
			id := e.create(nil).UUID
			for _, v := range tc.setup {
				e.must(id, v, mustStable(v))
			}
			e.must(id, tc.verb, tc.held, tc.mod)
			// unhold below 1.85 is the API's 406 (internal/api TestNodeProvision).
			e.must(id, "unhold", tc.after)
		})
	}
	t.Run("unhold rejected outside hold", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(nil).UUID
		if err := e.do(id, "unhold"); fault.KindOf(err) != fault.Invalid {
			t.Fatalf("unhold in enroll: %v", err)
		}
	})
	for _, tc := range cases {
		t.Run("abort from "+tc.name, func(t *testing.T) {
			e, _ := newClockEnv(t)
			id := e.create(nil).UUID
			for _, v := range tc.setup {
				e.must(id, v, mustStable(v))
			}
			e.must(id, tc.verb, tc.held, tc.mod)
			want := map[string]string{fsm.CleanHold: fsm.CleanFailed, fsm.DeployHold: fsm.DeployFailed, fsm.ServiceHold: fsm.ServiceFailed}[tc.held]
			if n := e.must(id, "abort", want); n.LastError == "" {
				t.Fatal("abort left no last_error")
			}
		})
	}
	t.Run("abort from service failed returns to active", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(nil).UUID
		for _, v := range []string{"manage", "provide", "active"} {
			e.must(id, v, mustStable(v))
		}
		e.setInfo(id, "fake_fail", "service")
		e.must(id, "service", fsm.ServiceFailed, serviceSteps(model.JSON{"interface": "bios", "step": "factory_reset"}))
		e.must(id, "abort", fsm.Active)
	})
}

func TestPowerSync(t *testing.T) {
	t.Run("every node of several pages", func(t *testing.T) {
		e, _ := newClockEnv(t)
		ids := make([]string, conductor.SyncPage+5)
		for i := range ids {
			ids[i] = e.create(nil).UUID
			e.fake.SetPower(ids[i], fsm.PowerOn)
		}
		if err := e.c.PowerSync().SyncPowerStates(e.ctx); err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, conductor.SyncPage - 1, conductor.SyncPage, len(ids) - 1} {
			if n := e.get(ids[i]); n.PowerState != fsm.PowerOn {
				t.Errorf("node %d of %d: power %q, want the hardware's power on", i, len(ids), n.PowerState)
			}
		}
	})
	t.Run("force back to the recorded state", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(nil).UUID
		if err := e.c.SetPower(e.ctx, id, conductor.PowerRequest{Target: fsm.PowerOn}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitIdle()
		e.fake.SetPower(id, fsm.PowerOff) // behind the conductor's back
		if err := e.c.PowerSync().SyncPowerStates(e.ctx); err != nil {
			t.Fatal(err)
		}
		n := e.get(id)
		dt, _ := e.fake.PowerState(e.ctx, driverTask(n))
		if n.PowerState != fsm.PowerOn || dt != fsm.PowerOn {
			t.Fatalf("db %q hardware %q, want both power on", n.PowerState, dt)
		}
		assertHistory(t, e, id, "forced the hardware back to power on")
	})
	t.Run("disable_power_off is never forced", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(nil).UUID
		if err := e.c.SetPower(e.ctx, id, conductor.PowerRequest{Target: fsm.PowerOff}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitIdle()
		if _, err := e.c.Nodes().UpdateNode(e.ctx, id, func(n *model.Node) error { n.DisablePowerOff = true; return nil }); err != nil {
			t.Fatal(err)
		}
		e.fake.SetPower(id, fsm.PowerOn)
		if err := e.c.PowerSync().SyncPowerStates(e.ctx); err != nil {
			t.Fatal(err)
		}
		n := e.get(id)
		dt, _ := e.fake.PowerState(e.ctx, driverTask(n))
		if n.PowerState != fsm.PowerOn || dt != fsm.PowerOn {
			t.Fatalf("db %q hardware %q, want both power on (the hardware's)", n.PowerState, dt)
		}
		assertHistory(t, e, id, "updated the database")
	})
	t.Run("record the hardware state", func(t *testing.T) {
		e := newEnv(t, func(c *conductor.Config) { c.ForcePowerStateDuringSync = false })
		id := e.create(nil).UUID
		if err := e.c.SetPower(e.ctx, id, conductor.PowerRequest{Target: fsm.PowerOn}); err != nil {
			t.Fatal(err)
		}
		e.c.WaitIdle()
		e.fake.SetPower(id, fsm.PowerOff)
		if err := e.c.PowerSync().SyncPowerStates(e.ctx); err != nil {
			t.Fatal(err)
		}
		if n := e.get(id); n.PowerState != fsm.PowerOff {
			t.Fatalf("db %q, want the hardware's power off", n.PowerState)
		}
		assertHistory(t, e, id, "updated the database")
	})
	t.Run("three failed reads mean maintenance, recovery lifts it", func(t *testing.T) {
		e, clk := newClockEnv(t)
		id := e.create(model.JSON{"fake_fail": "power_state"}).UUID
		for i := 0; i < 3; i++ {
			if n := e.get(id); n.Maintenance {
				t.Fatalf("maintenance after %d failed reads", i)
			}
			_ = e.c.PowerSync().SyncPowerStates(e.ctx)
		}
		n := e.get(id)
		if !n.Maintenance || n.Fault != "power failure" {
			t.Fatalf("after 3 failed reads: maintenance %v fault %q", n.Maintenance, n.Fault)
		}
		if _, err := e.c.Nodes().UpdateNode(e.ctx, id, func(n *model.Node) error { delete(n.DriverInfo, "fake_fail"); return nil }); err != nil {
			t.Fatal(err)
		}
		_ = e.c.PowerSync().SyncPowerStates(e.ctx)
		if n := e.get(id); !n.Maintenance {
			t.Fatal("a node power sync put into maintenance was read again before power_failure_recovery_interval")
		}
		if r := e.c.PowerSync().Report(); r.Sweeps != 4 || r.FailedReads != 3 || r.LastNodes != 0 {
			t.Fatalf("power sync report %+v, want 4 sweeps, 3 failed reads, the last reading nothing", r)
		}
		clk.Advance(5 * time.Minute)
		_ = e.c.PowerSync().SyncPowerStates(e.ctx)
		if n := e.get(id); n.Maintenance || n.Fault != "" {
			t.Fatalf("after recovery: maintenance %v fault %q", n.Maintenance, n.Fault)
		}
	})
	t.Run("operator maintenance is not lifted", func(t *testing.T) {
		e, _ := newClockEnv(t)
		id := e.create(nil).UUID
		if err := e.c.Nodes().SetMaintenance(e.ctx, id, true, "mine"); err != nil {
			t.Fatal(err)
		}
		_ = e.c.PowerSync().SyncPowerStates(e.ctx)
		if n := e.get(id); !n.Maintenance || n.MaintenanceReason != "mine" {
			t.Fatal("power sync lifted an operator's maintenance")
		}
	})
}

func TestDeadConductorLocksAreBroken(t *testing.T) {
	e, clk := newClockEnv(t)
	id := e.create(nil).UUID
	// Another conductor takes the lock mid-verify, then dies.
	if err := e.st.Conductors().RegisterConductor(e.ctx, &model.Conductor{Hostname: "dead-one"}); err != nil {
		t.Fatal(err)
	}
	n, err := e.st.Nodes().ReserveNode(e.ctx, id, "dead-one")
	if err != nil {
		t.Fatal(err)
	}
	n.ProvisionState = fsm.Verifying
	if err := e.st.Nodes().UpdateNode(e.ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := e.c.BreakDeadLocks(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.get(id).Reservation != "dead-one" {
		t.Fatal("lock of a live conductor broken")
	}
	clk.Advance(2 * time.Hour)
	if err := e.c.BreakDeadLocks(context.Background()); err != nil {
		t.Fatal(err)
	}
	n = e.get(id)
	if n.Reservation != "" || n.ProvisionState != fsm.Enroll || !strings.Contains(n.LastError, "dead-one") {
		t.Fatalf("after take over: resv %q state %q err %q", n.Reservation, n.ProvisionState, n.LastError)
	}
	assertHistory(t, e, id, "Lock held by dead conductor dead-one broken")
}

func TestConcurrencyLimits(t *testing.T) {
	e := newEnv(t, func(c *conductor.Config) { c.MaxConcurrentDeploy = 1 })
	a, b := e.create(nil).UUID, e.create(nil).UUID
	for _, id := range []string{a, b} {
		e.must(id, "manage", fsm.Manageable)
		e.must(id, "provide", fsm.Available)
	}
	e.setInfo(a, "fake_wait", "deploy")
	e.must(a, "active", fsm.DeployWait)
	err := e.do(b, "active")
	if f, ok := fault.As(err); !ok || f.Kind != fault.Unavailable || !strings.Contains(f.Msg, "max_concurrent_deploy") {
		t.Fatalf("second deploy over the cap: %v", err)
	}
	if s := e.get(b).ProvisionState; s != fsm.Available {
		t.Fatalf("rejected deploy changed the node: %s", s)
	}
}

func assertHistory(t *testing.T, e *env, id, substr string) {
	t.Helper()
	hist, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if strings.Contains(h.Event, substr) {
			return
		}
	}
	t.Fatalf("no history entry contains %q", substr)
}

func driverTask(n *model.Node) *driver.Task { return &driver.Task{Node: n} }

// savedStates records the provision state of every node write, with
// " finished" once the fake driver's FinishStep has marked the node.
type savedStates struct {
	store.NodeStore
	mu     sync.Mutex
	states []string
}

func (s *savedStates) UpdateNode(ctx context.Context, n *model.Node) error {
	state := n.ProvisionState
	if n.DriverInternalInfo["fake_finished"] != nil {
		state += " finished"
	}
	s.mu.Lock()
	s.states = append(s.states, state)
	s.mu.Unlock()
	return s.NodeStore.UpdateNode(ctx, n)
}

func (s *savedStates) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.states) }

func (s *savedStates) since(i int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.states[i:])
}

// savingStore is a conductor store whose node writes savedStates records.
type savingStore struct {
	conductor.Store
	nodes *savedStates
}

func (s savingStore) Nodes() store.NodeStore { return s.nodes }
