package conductor

import (
	"context"
	"reflect"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/inspectrule"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Inspection rules (Ironic's inspection_rule, API 1.96) are not tied to a
// node, so they change without a node lock; an inspection reads them when
// it has stored its data (applyInspectionRules).

// storedInventory returns the inventory in driver_internal_info (nil if
// none), to tell whether an inspection stored a new one.
func storedInventory(n *model.Node) map[string]any {
	inv, _ := n.DriverInternalInfo[driver.KeyInventory].(map[string]any)
	return inv
}

// sameMap reports whether a and b are the same map (not equal contents).
func sameMap(a, b map[string]any) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// applyInspectionRules runs the main-phase rules on the inventory and
// plugin data an inspection just stored in driver_internal_info, as
// Ironic's apply_rules after inspection data is stored (agent and redfish
// inspection). The rules change t.node (saved with the inspection's
// outcome) and the stored plugin data. A rule's failure is returned with
// Ironic's text; the caller fails the inspection with it.
func (t *task) applyInspectionRules(ctx context.Context) error {
	c := t.c
	n := t.node
	inv := storedInventory(n)
	if inv == nil {
		return nil
	}
	rules, err := c.store.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{Phase: inspectrule.Phases[0]})
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		return nil
	}
	pd, _ := n.DriverInternalInfo[driver.KeyPluginData].(map[string]any)
	if pd == nil {
		pd = map[string]any{}
		n.DriverInternalInfo[driver.KeyPluginData] = pd
	}
	c.log.Info("applying inspection rules", "node", n.UUID, "count", len(rules))
	if err := inspectrule.Apply(ctx, rules, inv, &inspectrule.Target{Node: n, PluginData: pd, Log: c.log}); err != nil {
		return err
	}
	// An attribute action rewrites the node's maps: put the plugin data
	// the rules changed back where the inspection stored it.
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSON{}
	}
	n.DriverInternalInfo[driver.KeyPluginData] = pd
	return nil
}
