package conductor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Deploy templates (Ironic's deploy_template, API 1.55) are not tied to a
// node, so they change without a node lock; a deploy reads them when it
// plans its steps (deployTemplateSteps).

// instanceTraits are the traits a deploy asks for: instance_info.traits
// (set by Nova, or from the node's allocation when it was allocated).
func instanceTraits(n *model.Node) []string {
	list, _ := n.InstanceInfo["traits"].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		if ss, ok := n.InstanceInfo["traits"].([]string); ok {
			out = append(out, ss...)
		}
	}
	return out
}

// instanceTraitsError is Ironic's validate_instance_info_traits: the
// instance traits are a list of strings, each one of the node's traits.
// It answers the error text, or "".
func instanceTraitsError(n *model.Node) string {
	raw, ok := n.InstanceInfo["traits"]
	if !ok || raw == nil {
		return ""
	}
	list, isList := raw.([]any)
	if !isList {
		if ss, isStrings := raw.([]string); isStrings {
			list = make([]any, len(ss))
			for i, s := range ss {
				list[i] = s
			}
		} else if isEmpty(raw) {
			return ""
		} else {
			return fmt.Sprintf("Error parsing traits from Node %s instance_info field. A list of strings is expected.", n.UUID)
		}
	}
	var missing []string
	for _, v := range list {
		s, isStr := v.(string)
		if !isStr {
			return fmt.Sprintf("Error parsing traits from Node %s instance_info field. A list of strings is expected.", n.UUID)
		}
		if !slices.Contains(n.Traits, s) && !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("Cannot specify instance traits that are not also set on the node. Node %s is missing traits %s",
		n.UUID, strings.Join(missing, ", "))
}

// isEmpty is Python's falsiness of a JSON value that is not a list.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// deployTemplateSteps returns the steps of the deploy templates named by the
// node's instance traits, as user steps (Ironic's _get_deployment_templates
// and _get_steps_from_deployment_templates), templates in name order.
func deployTemplateSteps(ctx context.Context, st Store, n *model.Node) (names []string, steps []map[string]any, err error) {
	traits := instanceTraits(n)
	if len(traits) == 0 {
		return nil, nil, nil
	}
	ts, err := st.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{Names: traits, SortKey: "name"})
	if err != nil {
		return nil, nil, fmt.Errorf("deploy templates of node %s: %w", n.UUID, err)
	}
	var out []map[string]any
	for _, t := range ts {
		names = append(names, t.Name)
		for _, s := range t.Steps {
			args := map[string]any(s.Args)
			if args == nil {
				args = map[string]any{}
			}
			out = append(out, map[string]any{"interface": s.Interface, "step": s.Step,
				"args": args, "priority": float64(s.Priority)})
		}
	}
	return names, out, nil
}

// duplicateTemplateSteps is Ironic's _validate_deploy_steps_unique: the
// steps of the matching templates name no interface.step twice. It answers
// the error text, or "".
func duplicateTemplateSteps(steps []driver.Step) string {
	seen := map[string]int{}
	var dups []string
	for _, s := range steps {
		id := s.Interface + "." + s.Step
		if seen[id]++; seen[id] == 2 {
			dups = append(dups, id)
		}
	}
	if len(dups) == 0 {
		return ""
	}
	return "deploy steps from all deploy templates matching this node's instance traits cannot have the same interface " +
		"and step. Duplicate deploy steps for " + strings.Join(dups, ", ")
}

// deployingInterfacePriority is Ironic's DEPLOYING_INTERFACE_PRIORITY: the
// order of deploy steps of equal priority (higher first).
var deployingInterfacePriority = map[string]int{"power": 5, "management": 4, "deploy": 3, "bios": 2, "raid": 1}

// mergeDeploySteps is Ironic's _get_all_deployment_steps: the driver's
// enabled steps not overridden by a user step (same interface and step),
// then the user steps but those disabled (priority set to zero), sorted by
// priority and interface, highest first. A user step that gave no priority
// (Anvil's API lets deploy_steps omit it) is kept.
func mergeDeploySteps(drv, user []driver.Step, disabled map[[2]string]bool) []driver.Step {
	overridden := map[[2]string]bool{}
	for _, s := range user {
		overridden[[2]string{s.Interface, s.Step}] = true
	}
	var out []driver.Step
	for _, s := range drv {
		if !overridden[[2]string{s.Interface, s.Step}] {
			out = append(out, s)
		}
	}
	for _, s := range user {
		if !disabled[[2]string{s.Interface, s.Step}] {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return deployingInterfacePriority[out[i].Interface] > deployingInterfacePriority[out[j].Interface]
	})
	return out
}
