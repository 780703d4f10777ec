package api

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// changedTable is the node field table with one field changed.
func changedTable(t *testing.T, name string, change func(f *nodeField)) *nodeTable {
	t.Helper()
	fields := nodeFieldTable()
	i := slices.IndexFunc(fields, func(f nodeField) bool { return f.name == name })
	if i < 0 {
		t.Fatalf("no field %s", name)
	}
	change(&fields[i])
	return newNodeTable(fields)
}

// renderWith renders n at minor with the full plan of table.
func renderWith(t *testing.T, table *nodeTable, minor int, n *model.Node) map[string]any {
	t.Helper()
	rc := &call{s: newEnv(t).h.(*Server), minor: minor, base: "http://" + testHost, ctx: context.Background()}
	w := &jw{}
	rc.writeNode(w, n, table.plans[minor])
	var out map[string]any
	if err := json.Unmarshal(w.b, &out); err != nil {
		t.Fatalf("%s: %v", w.b, err)
	}
	return out
}

// TestNodeFieldTableDrives changes one fact of one field in the table
// and sees each of its readers follow: rendering and the version gates,
// the body's validation, PATCH's allowed fields and document, and the
// PATCH's policy rule.
func TestNodeFieldTableDrives(t *testing.T) {
	n := richNode(1)
	t.Run("version gate of rendering and bodies", func(t *testing.T) {
		later := changedTable(t, "description", func(f *nodeField) { f.minor = 60 })
		if _, ok := renderWith(t, nodeFields, 55, n)["description"]; !ok {
			t.Fatal("description not shown at 1.55 by the API's table")
		}
		if _, ok := renderWith(t, later, 55, n)["description"]; ok {
			t.Error("description shown at 1.55 after its version moved to 1.60")
		}
		if got := renderWith(t, later, 60, n)["description"]; got != n.Description {
			t.Errorf("description at 1.60 = %v", got)
		}
		if later.minor("description") != 60 || nodeFields.minor("description") != 51 {
			t.Error("the version gate of POST, PATCH, ?fields= and sort keys does not follow the table")
		}
	})
	t.Run("rendering", func(t *testing.T) {
		hidden := changedTable(t, "owner", func(f *nodeField) {
			f.write = func(w *jw, _ *call, _ *model.Node) { w.strOrNull("") }
		})
		if got := renderWith(t, hidden, MaxMinor, n)["owner"]; got != nil {
			t.Errorf("owner = %v, want the table's writer's null", got)
		}
	})
	t.Run("validation", func(t *testing.T) {
		body := func() map[string]any { return map[string]any{"driver": "fake-hardware", "resource_class": "abcdefg"} }
		if _, err := validateObject("node", body(), nodeFields.createProps, "driver"); err != nil {
			t.Fatal(err)
		}
		short := changedTable(t, "resource_class", func(f *nodeField) { f.prop.maxLen = 5 })
		if _, err := validateObject("node", body(), short.createProps, "driver"); err == nil || !strings.Contains(err.Error(), "is too long") {
			t.Errorf("err = %v, want too long", err)
		}
		words := map[string]any{"retired": "yes"}
		if err := nodeFields.runExtraChecks(words); err != nil || words["retired"] != true {
			t.Fatalf("retired = %#v (%v)", words["retired"], err)
		}
		unchecked := changedTable(t, "retired", func(f *nodeField) { f.extra = 0 })
		words = map[string]any{"retired": "yes"}
		if err := unchecked.runExtraChecks(words); err != nil || words["retired"] != "yes" {
			t.Errorf("retired = %#v (%v), want the word left as is", words["retired"], err)
		}
		if slices.ContainsFunc(nodeFields.createProps, func(p nodeProp) bool { return p.name == "protected" }) ||
			!slices.ContainsFunc(nodeFields.patchProps, func(p nodeProp) bool { return p.name == "protected" }) {
			t.Error("protected: a PATCH may set it, a POST may not")
		}
	})
	t.Run("PATCH", func(t *testing.T) {
		ops := []patchOp{{Op: "replace", Path: "/description", Value: "x"}}
		if err := checkAllowedFields(ops, nodeFields.patchAllowed); err != nil {
			t.Fatal(err)
		}
		fixed := changedTable(t, "description", func(f *nodeField) { f.patch = patchNo })
		if err := checkAllowedFields(ops, fixed.patchAllowed); err == nil {
			t.Error("description PATCHed after the table stopped allowing it")
		}
		if got := nodeFields.patchAllowed[len(nodeFields.patchAllowed)-2:]; !slices.Equal(got, []string{"parent_node", "firmware_interface"}) {
			t.Errorf("PATCH_ALLOWED_FIELDS ends with %v, Ironic appends parent_node, firmware_interface", got)
		}
		readOnly := changedTable(t, "lessee", func(f *nodeField) { f.body = false })
		if _, ok := readOnly.doc(n)["lessee"]; ok {
			t.Error("a field that is no body property is in the PATCH document")
		}
		m := &model.Node{Lessee: "before"}
		readOnly.apply(m, map[string]any{"lessee": "after"})
		if m.Lessee != "before" {
			t.Error("a field that is no body property was written from a document")
		}
	})
	t.Run("list filter", func(t *testing.T) {
		filterOf := func(table *nodeTable, name string) *nodeField {
			i := slices.IndexFunc(table.filters, func(f *nodeField) bool { return f.name == name })
			if i < 0 {
				return nil
			}
			return table.filters[i]
		}
		if f := filterOf(nodeFields, "owner"); f == nil || f.filter != 50 {
			t.Fatalf("owner filter = %+v", f)
		}
		later := changedTable(t, "owner", func(f *nodeField) { f.filter = 99 })
		if got := later.filters[len(later.filters)-1]; got.name != "owner" || got.filter != 99 {
			t.Errorf("last filter = %s from 1.%d, want owner from 1.99 (filters are checked by version)", got.name, got.filter)
		}
		none := changedTable(t, "owner", func(f *nodeField) { f.where = nil })
		if filterOf(none, "owner") != nil {
			t.Error("owner still a filter after the table dropped it")
		}
	})
	t.Run("sort key", func(t *testing.T) {
		if !nodeFields.unsortable("extra") || nodeFields.unsortable("name") {
			t.Fatal("extra is no sort key, name is")
		}
		if changedTable(t, "extra", func(f *nodeField) { f.noSort = false }).unsortable("extra") {
			t.Error("extra still refused as a sort key after the table allowed it")
		}
	})
	t.Run("PATCH rule", func(t *testing.T) {
		op := patchOp{Op: "replace", Path: "/shard", Value: "s1"}
		if got := nodePatchRule(op); got != "baremetal:node:update:shard" {
			t.Fatalf("rule = %s", got)
		}
		moved := changedTable(t, "shard", func(f *nodeField) { f.rule = "" })
		if got := moved.patchRule("shard"); got != "" {
			t.Errorf("rule = %q after the table dropped it", got)
		}
	})
}

// TestNodeFieldTableConsistent: every body field reads and writes the
// model, a document round-trips, and what PATCH may change is in the
// document.
func TestNodeFieldTableConsistent(t *testing.T) {
	for _, f := range nodeFields.fields {
		if f.body != (f.get != nil && f.set != nil) {
			t.Errorf("%s: a body field needs get and set, and only a body field has them", f.name)
		}
		if f.patch != patchNo && !f.body {
			t.Errorf("%s: PATCH may change it but it is no property of the PATCH document", f.name)
		}
		if f.extra > 0 && !f.body {
			t.Errorf("%s: NODE_VALIDATE_EXTRA checks a field no body carries", f.name)
		}
		if f.minor < 1 || f.minor > MaxMinor {
			t.Errorf("%s: version 1.%d out of range", f.name, f.minor)
		}
	}
	n := richNode(2)
	n.Name, n.Lessee, n.Shard, n.ParentNode, n.InstanceName = "n", "l", "s", "p", "i"
	n.NetworkData, n.Protected, n.ProtectedReason, n.Retired, n.RetiredReason = model.JSON{"links": []any{}}, true, "pr", true, "rr"
	n.ChassisUUID, n.DisablePowerOff, n.ConsoleEnabled = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", true, true
	for _, kind := range model.InterfaceNames {
		n.Interfaces.Set(kind, kind+"-x")
	}
	doc := nodeFields.doc(n)
	var back model.Node
	nodeFields.apply(&back, doc)
	if got := nodeFields.doc(&back); !reflect.DeepEqual(got, doc) {
		t.Errorf("document round trip:\n got %v\nwant %v", got, doc)
	}
}

// TestNodeFieldsInTheModel: every field a node shows is a JSON name of
// model.Node (or a <kind>_interface), which is how inspection rules
// (internal/inspectrule) see the node; only the API's own conductor and
// the node's lock are not.
func TestNodeFieldsInTheModel(t *testing.T) {
	names := map[string]bool{}
	typ := reflect.TypeFor[model.Node]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	for _, kind := range model.InterfaceNames {
		names[kind+"_interface"] = true
	}
	shown, _ := NodeFields()
	for _, f := range shown {
		if !names[f] && f != "conductor" && f != "reservation" {
			t.Errorf("the API shows node field %s, which model.Node has no JSON name for", f)
		}
	}
}
