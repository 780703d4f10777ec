package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

var timeZero time.Time

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
// unknown user step when there is one.
func resolve(t *task, kind driver.StepKind, user []map[string]any) ([]driver.Step, map[string]any) {
	avail := offered(t, kind)
	out := make([]driver.Step, 0, len(user))
	for _, u := range user {
		iface, _ := u["interface"].(string)
		name, _ := u["step"].(string)
		found := false
		for _, s := range avail {
			if s.Interface == iface && s.Step == name {
				s.Args, _ = u["args"].(map[string]any)
				if p, ok := u["priority"].(float64); ok {
					s.Priority = int(p)
				}
				out = append(out, s)
				found = true
				break
			}
		}
		if !found {
			return nil, u
		}
	}
	return out, nil
}

// cleanFlow runs automated cleaning (the offered steps with a priority, highest
// first; none when automated_clean is off) or the user's manual steps, ending
// in available (automated) or manageable (manual), or clean failed.
func (c *Conductor) cleanFlow(manual bool, user []map[string]any) flow {
	return func(ctx context.Context, t *task) {
		n := t.node
		target := ""
		if manual {
			target = fsm.Manageable
		}
		var steps []driver.Step
		if manual {
			var unknown map[string]any
			if steps, unknown = resolve(t, driver.CleanSteps, user); unknown != nil {
				t.failWith(fmt.Sprintf("Cannot clean node %s: node does not support this clean step: %s", n.UUID, pyRepr(unknown)), target)
				return
			}
		} else if c.automatedClean(n) {
			for _, s := range offered(t, driver.CleanSteps) {
				if s.Priority > 0 {
					steps = append(steps, s)
				}
			}
			sort.SliceStable(steps, func(i, j int) bool { return steps[i].Priority > steps[j].Priority })
		}
		for _, s := range steps {
			n.CleanStep = stepJSON(s)
			res, err := c.execStep(ctx, t, driver.CleanSteps, s)
			if err != nil {
				msg := fmt.Sprintf("Node %s failed step %s: %v", n.UUID, pyRepr(n.CleanStep), err)
				// Ironic puts a node whose clean step failed into maintenance.
				n.Maintenance, n.Fault, n.MaintenanceReason = true, "clean failure", msg
				n.CleanStep = nil
				t.failWith(msg, target)
				return
			}
			if res == driver.Wait {
				_ = t.fire(fsm.EvWait, target, false)
				return
			}
		}
		n.CleanStep = nil
		if manual {
			_ = t.fire(fsm.EvManage, "", false)
			return
		}
		_ = t.fire(fsm.EvDone, "", false)
	}
}

func (c *Conductor) automatedClean(n *model.Node) bool {
	if n.AutomatedClean != nil {
		return *n.AutomatedClean
	}
	return c.cfg.AutomatedClean
}

// runUserSteps executes deploy or service steps a user asked for; false means
// the node failed (or parked) and the flow must stop.
func (c *Conductor) runUserSteps(ctx context.Context, t *task, kind driver.StepKind, user []map[string]any) bool {
	if len(user) == 0 {
		return true
	}
	n := t.node
	steps, unknown := resolve(t, kind, user)
	if unknown != nil {
		t.failWith(fmt.Sprintf("Node %s does not support this %s step: %s", n.UUID, kind, pyRepr(unknown)), "")
		return false
	}
	for _, s := range steps {
		cur := stepJSON(s)
		if kind == driver.ServiceSteps {
			n.ServiceStep = cur
		} else {
			n.DeployStep = cur
		}
		res, err := c.execStep(ctx, t, kind, s)
		if err != nil {
			t.failWith(fmt.Sprintf("Node %s failed step %s: %v", n.UUID, pyRepr(cur), err), "")
			return false
		}
		if res == driver.Wait {
			_ = t.fire(fsm.EvWait, "", false)
			return false
		}
	}
	return true
}

func (c *Conductor) execStep(ctx context.Context, t *task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	st, ok := t.drv.Interface(s.Interface).(driver.Stepper)
	if !ok {
		return driver.Done, fmt.Errorf("interface %s offers no steps", s.Interface)
	}
	return st.ExecuteStep(ctx, t.driverTask(ctx), kind, s)
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
// {'interface': 'deploy', 'step': 'no_such_step'}.
func pyRepr(m map[string]any) string {
	order := []string{"interface", "step", "args", "priority"}
	var parts []string
	for _, k := range order {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("'%s': %s", k, pyValue(v)))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func pyValue(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + x + "'"
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return fmt.Sprint(x)
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprint(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("'%s': %s", k, pyValue(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
