package inspectrule

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
)

// The node as rules see it: Ironic's node fields by name, with
// <kind>_interface fields (not Anvil's nested interfaces) and every dict
// field present ({} when unset, as Ironic's defaults).

// dictFields are the node's dict fields ({} when unset, as Ironic's
// defaults); scalarFields the others a rule may read (None when unset):
// model.Node's JSON names, so a field added to the model is a field rules
// see.
var dictFields, scalarFields = nodeJSONFields()

func nodeJSONFields() (dicts, scalars []string) {
	t := reflect.TypeFor[model.Node]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" || name == "-" || name == "interfaces":
		case f.Type == reflect.TypeFor[model.JSON]():
			dicts = append(dicts, name)
		default:
			scalars = append(scalars, name)
		}
	}
	return dicts, scalars
}

// conductorFields are node fields the conductor owns: rules may read them
// but not change them (Ironic would let a rule write them; in Anvil the
// state machine and the traits API would then disagree with the node).
var conductorFields = []string{"uuid", "provision_state", "target_provision_state", "provision_updated_at",
	"power_state", "target_power_state", "inspection_started_at", "inspection_finished_at", "created_at",
	"updated_at", "traits", "allocation_uuid"}

// nodeDoc is n as a document of Ironic's node fields.
func nodeDoc(n *model.Node) (map[string]any, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	ifaces, _ := doc["interfaces"].(map[string]any)
	delete(doc, "interfaces")
	for _, k := range model.InterfaceNames {
		doc[k+"_interface"] = ifaces[k]
	}
	for _, f := range dictFields {
		if doc[f] == nil {
			doc[f] = map[string]any{}
		}
	}
	for _, f := range scalarFields {
		if _, ok := doc[f]; !ok {
			doc[f] = nil
		}
	}
	return doc, nil
}

// knownField reports whether name is a node field a rule may name.
func knownField(name string) bool {
	if slices.Contains(dictFields, name) || slices.Contains(scalarFields, name) {
		return true
	}
	kind, ok := strings.CutSuffix(name, "_interface")
	return ok && slices.Contains(model.InterfaceNames, kind)
}

// writeDoc stores doc back into n; changed lists the top-level fields a
// rule changed, which must be node fields the conductor does not own.
// n is unchanged on error.
func writeDoc(n *model.Node, doc map[string]any, field string) error {
	if !knownField(field) {
		return fmt.Errorf("'Node' object has no attribute '%s'", field)
	}
	if slices.Contains(conductorFields, field) {
		return fmt.Errorf("the conductor owns the node's %s", field)
	}
	flat := make(map[string]any, len(doc))
	ifaces := map[string]any{}
	for k, v := range doc {
		if kind, ok := strings.CutSuffix(k, "_interface"); ok && slices.Contains(model.InterfaceNames, kind) {
			if v != nil {
				ifaces[kind] = v
			}
			continue
		}
		if v == nil {
			continue
		}
		flat[k] = v
	}
	flat["interfaces"] = ifaces
	b, err := json.Marshal(flat)
	if err != nil {
		return err
	}
	var out model.Node
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	out.ID, out.Version, out.Reservation, out.Conductor = n.ID, n.Version, n.Reservation, n.Conductor
	*n = out
	return nil
}
