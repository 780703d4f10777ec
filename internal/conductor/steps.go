package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
)

// Reserved steps any interface accepts (Ironic's): hold parks the node in
// its hold state until "unhold".
const stepHold = "hold"

// offered returns the steps of kind every interface of the node offers.
func offered(t *task, kind driver.StepKind) []driver.Step {
	var out []driver.Step
	for _, iface := range model.InterfaceNames {
		if s, ok := t.drv.Interface(iface).(driver.Stepper); ok {
			out = append(out, s.Steps(t.node, iface, kind)...)
		}
	}
	return out
}

// resolve matches user steps against the offered ones; it returns the first
// unknown user step when there is one. A step of an interface that learns
// its steps from its agent (driver.StepLearner: custom-agent's in-band
// deploy steps) is taken as asked, as Ironic plans in-band steps it has
// not fetched yet.
func resolve(t *task, kind driver.StepKind, user []map[string]any) ([]driver.Step, map[string]any) {
	avail := offered(t, kind)
	out := make([]driver.Step, 0, len(user))
	for _, u := range user {
		iface, _ := u["interface"].(string)
		name, _ := u["step"].(string)
		args, _ := u["args"].(map[string]any)
		if name == stepHold {
			out = append(out, driver.Step{Interface: iface, Step: name, Args: args})
			continue
		}
		found := false
		for _, s := range avail {
			if s.Interface == iface && s.Step == name {
				s.Args = args
				if p, ok := u["priority"].(float64); ok {
					s.Priority = int(p)
				}
				out = append(out, s)
				found = true
				break
			}
		}
		if !found && learns(t, iface, kind) {
			s := driver.Step{Interface: iface, Step: name, Args: args}
			if p, ok := u["priority"].(float64); ok {
				s.Priority = int(p)
			}
			out, found = append(out, s), true
		}
		if !found {
			return nil, u
		}
	}
	return out, nil
}

// learns reports whether interface iface learns steps of kind from its
// agent (driver.StepLearner): its user steps are planned unseen.
func learns(t *task, iface string, kind driver.StepKind) bool {
	l, ok := t.drv.Interface(iface).(driver.StepLearner)
	return ok && l.LearnsSteps(kind)
}

// stepBook names where a step family keeps its plan and progress.
type stepBook struct {
	kind     driver.StepKind
	listKey  string // driver_internal_info key of the planned steps
	indexKey string // driver_internal_info key of the current step's index
}

func bookOf(kind driver.StepKind) stepBook {
	return stepBook{kind: kind, listKey: string(kind) + "_steps", indexKey: string(kind) + "_step_index"}
}

// current returns the node field holding the running step of kind.
func current(n *model.Node, kind driver.StepKind) *model.JSON {
	switch kind {
	case driver.CleanSteps:
		return &n.CleanStep
	case driver.DeploySteps:
		return &n.DeployStep
	}
	return &n.ServiceStep
}

// plan stores the steps to run in driver_internal_info.
func plan(n *model.Node, kind driver.StepKind, steps []driver.Step) {
	b := bookOf(kind)
	list := make([]any, len(steps))
	for i, s := range steps {
		list[i] = stepJSON(s)
	}
	setInfo(&n.DriverInternalInfo, b.listKey, list)
	delete(n.DriverInternalInfo, b.indexKey)
}

// planned reads the stored plan back.
func planned(n *model.Node, kind driver.StepKind) []driver.Step {
	raw, _ := json.Marshal(n.DriverInternalInfo[bookOf(kind).listKey])
	var steps []driver.Step
	_ = json.Unmarshal(raw, &steps)
	return steps
}

func stepIndex(n *model.Node, kind driver.StepKind) int {
	f, ok := n.DriverInternalInfo[bookOf(kind).indexKey].(float64)
	if !ok {
		if i, ok := n.DriverInternalInfo[bookOf(kind).indexKey].(int); ok {
			return i
		}
		return -1
	}
	return int(f)
}

// stepFailed is Ironic's last_error of a step that failed with why.
func stepFailed(n *model.Node, s driver.Step, why string) string {
	return fmt.Sprintf("Node %s failed step %s: %s", n.UUID, pyRepr(stepJSON(s)), why)
}

// runSteps executes the planned steps of kind from index start. It ends the
// flow: done (or manage for a manual clean), fail, wait (a step awaits a
// callback) or hold.
func (c *Conductor) runSteps(ctx context.Context, t *task, kind driver.StepKind, start int) {
	n := t.node
	steps := planned(n, kind)
	for i := start; i < len(steps); i++ {
		s := steps[i]
		setInfo(&n.DriverInternalInfo, bookOf(kind).indexKey, i)
		*current(n, kind) = stepJSON(s)
		if s.Step == stepHold {
			t.advance(fsm.EvHold)
			return
		}
		res, err := t.execStep(ctx, kind, s)
		if err != nil {
			c.failStep(ctx, t, kind, stepFailed(n, s, t.c.errorText(err)))
			return
		}
		if res == driver.Wait {
			t.advance(fsm.EvWait)
			return
		}
	}
	c.stepsDone(ctx, t, kind, len(steps) > 0)
}

func (c *Conductor) stepsDone(ctx context.Context, t *task, kind driver.StepKind, ran bool) {
	n := t.node
	if f, ok := t.drv.Deploy.(driver.CleanFinisher); ok && kind == driver.CleanSteps && ran {
		if err := f.FinishCleaning(ctx, t.driverTask(ctx)); err != nil {
			t.stepFailed(kind, fmt.Sprintf("Failed to tear down cleaning on node %s: %s", n.UUID, t.c.errorText(err)))
			return
		}
	}
	*current(n, kind) = nil
	b := bookOf(kind)
	delete(n.DriverInternalInfo, b.listKey)
	delete(n.DriverInternalInfo, b.indexKey)
	// done, or manage at the end of a manual clean: the state machine knows.
	event, _ := fsm.Finish(n.ProvisionState, n.TargetProvisionState)
	t.advance(event)
}

// stepFailed records a failed step; a failed clean or service step also puts
// the node into maintenance with fault "clean failure" / "service failure", as
// Ironic does.
func (t *task) stepFailed(kind driver.StepKind, msg string) {
	n := t.node
	// Ironic puts a node whose clean or service step failed into maintenance
	// (keeping an existing maintenance_reason).
	if cur := *current(n, kind); len(cur) > 0 && kind != driver.DeploySteps {
		n.Maintenance, n.Fault = true, string(kind)+" failure"
		if n.MaintenanceReason == "" {
			n.MaintenanceReason = msg
		}
	}
	*current(n, kind) = nil
	b := bookOf(kind)
	delete(n.DriverInternalInfo, b.listKey)
	delete(n.DriverInternalInfo, b.indexKey)
	t.failWith(msg)
}

// cleanFlow plans automated cleaning (the offered steps with a priority,
// highest first; none when automated_clean is off) or the user's manual
// steps, and runs them.
func (c *Conductor) cleanFlow(manual bool, user []map[string]any) flow {
	return func(ctx context.Context, t *task) {
		n := t.node
		var steps []driver.Step
		if manual {
			var unknown map[string]any
			if steps, unknown = resolve(t, driver.CleanSteps, user); unknown != nil {
				t.failWith(fmt.Sprintf("Cannot clean node %s: node does not support this clean step: %s", n.UUID, pyRepr(unknown)))
				return
			}
			if msg := argsErrors(driver.CleanSteps, steps, user); msg != "" {
				t.failWith(fmt.Sprintf("Cannot clean node %s: %s", n.UUID, msg))
				return
			}
		} else if c.cfg.automatedClean(n) {
			for _, s := range offered(t, driver.CleanSteps) {
				if s.Priority > 0 {
					steps = append(steps, s)
				}
			}
			sort.SliceStable(steps, func(i, j int) bool { return steps[i].Priority > steps[j].Priority })
		}
		plan(n, driver.CleanSteps, steps)
		t.cacheSettings(ctx)
		c.runSteps(ctx, t, driver.CleanSteps, 0)
	}
}

func (cfg *Config) automatedClean(n *model.Node) bool {
	if n.AutomatedClean != nil {
		return *n.AutomatedClean
	}
	return cfg.AutomatedClean
}

// planUser resolves user deploy or service steps and plans them. For a
// deploy, the steps of the deploy templates named by the instance traits
// join the user's (which override them), and the driver's enabled steps
// not overridden come along, all in Ironic's order (mergeDeploySteps).
func (c *Conductor) planUser(ctx context.Context, t *task, kind driver.StepKind, user []map[string]any) bool {
	us, unknown := resolve(t, kind, user)
	if unknown != nil {
		t.failWith(fmt.Sprintf("Node %s does not support this %s step: %s", t.node.UUID, kind, pyRepr(unknown)))
		return false
	}
	if msg := argsErrors(kind, us, user); msg != "" {
		t.failWith(fmt.Sprintf("Cannot %s node %s: %s", kind, t.node.UUID, msg))
		return false
	}
	if kind != driver.DeploySteps {
		plan(t.node, kind, us)
		return true
	}
	ts, ok := t.templatePlan(ctx)
	if !ok {
		return false
	}
	have, disabled := map[[2]string]bool{}, map[[2]string]bool{}
	for i, s := range us {
		have[[2]string{s.Interface, s.Step}] = true
		if p, ok := user[i]["priority"].(float64); ok && p == 0 {
			disabled[[2]string{s.Interface, s.Step}] = true
		}
	}
	for _, s := range ts {
		if !have[[2]string{s.Interface, s.Step}] {
			us = append(us, s)
			if s.Priority == 0 {
				disabled[[2]string{s.Interface, s.Step}] = true
			}
		}
	}
	var drv []driver.Step
	for _, s := range offered(t, kind) {
		if s.Priority > 0 {
			drv = append(drv, s)
		}
	}
	plan(t.node, kind, mergeDeploySteps(drv, us, disabled))
	return true
}

// templatePlan resolves the steps of the deploy templates matching the
// node's instance traits, failing the deploy with Ironic's text when one is
// unknown, has bad arguments, or two templates name the same step.
func (t *task) templatePlan(ctx context.Context) ([]driver.Step, bool) {
	c := t.c
	steps, msg, err := t.templateSteps(ctx, false)
	if err != nil {
		t.failWith(fmt.Sprintf("Failed to get deploy steps for node %s: %s", t.node.UUID, c.errorText(err)))
		return nil, false
	}
	if msg != "" {
		t.failWith(msg)
		return nil, false
	}
	return steps, true
}

// templateSteps resolves the steps of the deploy templates matching the
// node's instance traits (Ironic's _get_validated_steps_from_templates):
// msg is Ironic's validation error text, or "". skipMissing passes over
// steps the driver does not offer (yet), as Ironic does when a deploy is
// requested.
func (t *task) templateSteps(ctx context.Context, skipMissing bool) ([]driver.Step, string, error) {
	c := t.c
	names, user, err := deployTemplateSteps(ctx, c.store, t.node)
	if err != nil || len(user) == 0 {
		return nil, "", err
	}
	var errs []string
	var steps []driver.Step
	for _, u := range user {
		one, unknown := resolve(t, driver.DeploySteps, []map[string]any{u})
		if unknown != nil {
			if !skipMissing {
				errs = append(errs, "node does not support this deploy step: "+pyRepr(unknown))
			}
			continue
		}
		if msg := argsErrors(driver.DeploySteps, one, []map[string]any{u}); msg != "" {
			errs = append(errs, msg)
		}
		steps = append(steps, one...)
	}
	if msg := duplicateTemplateSteps(steps); msg != "" {
		errs = append(errs, msg)
	}
	if len(errs) > 0 {
		return nil, fmt.Sprintf("Validation of deploy steps from deploy templates matching this node's instance traits failed. "+
			"Matching deploy templates: %s. Errors: %s", strings.Join(names, ","), strings.Join(errs, "; ")), nil
	}
	return steps, "", nil
}

func (t *task) execStep(ctx context.Context, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if kind == driver.DeploySteps && s.Interface == "deploy" && s.Step == "deploy" && t.drv.Deploy != nil {
		if _, ok := t.drv.Deploy.(driver.Stepper); !ok {
			return t.drv.Deploy.Deploy(ctx, t.driverTask(ctx))
		}
	}
	st, ok := t.drv.Interface(s.Interface).(driver.Stepper)
	if !ok {
		return driver.Done, fmt.Errorf("interface %s offers no steps", s.Interface)
	}
	dt := t.driverTask(ctx)
	res, err := st.ExecuteStep(ctx, dt, kind, s)
	t.saveSettings(ctx, dt)
	return res, err
}

func stepJSON(s driver.Step) model.JSON {
	m := model.JSON{"interface": s.Interface, "step": s.Step, "priority": s.Priority}
	if s.Args != nil {
		m["args"] = s.Args
	} else {
		m["args"] = model.JSON{}
	}
	return m
}

// pyRepr renders a step as Ironic prints it, e.g.
// {'interface': 'deploy', 'step': 'erase_devices', 'args': {}, 'priority': 10}.
// Secret arguments are masked: the text goes to last_error and history.
func pyRepr(m map[string]any) string {
	d := pyrepr.Dict{Values: secret.Value(map[string]any(m)).(map[string]any)}
	for _, k := range []string{"interface", "step", "args", "priority"} {
		if _, ok := m[k]; ok {
			d.Keys = append(d.Keys, k)
		}
	}
	return pyrepr.Repr(d)
}
