package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/api"
)

// TestNodeFieldsAgainstTheAPI checks the CLI's node field lists against
// the API's node field table: `node list --long` names fields a node
// shows, `--fields` takes every one of them, and every field `node set`
// and `node unset` change is one a PATCH may change.
func TestNodeFieldsAgainstTheAPI(t *testing.T) {
	shown, patchable := api.NodeFields()
	for _, f := range nodeDetailFields {
		if !slices.Contains(shown, f) {
			t.Errorf("the CLI lists node field %s, which the API does not show", f)
		}
	}
	if err := checkNodeFields(shown); err != nil {
		t.Errorf("--fields refuses a field the API shows: %v", err)
	}
	if err := checkNodeFields([]string{"uuid", "no_such_field"}); err == nil || err.Error() != "argument --fields: invalid choice: 'no_such_field'" {
		t.Errorf("--fields no_such_field: %v", err)
	}

	on := func() *string { s := "x"; return &s }
	o := &nodeSetOpts{strs: map[string]*string{}, ifaces: map[string]*string{}, resetIfaces: map[string]*bool{},
		properties: []string{"k=v"}, extra: []string{"k=v"}, driverInfo: []string{"k=v"}, instInfo: []string{"k=v"},
		automatedClean: true, protected: true, retired: true, networkData: "{}"}
	for _, s := range nodeSetStringFlags {
		o.strs[s[1]] = on()
	}
	for _, i := range supportedIfaces {
		o.ifaces[i], o.resetIfaces[i] = on(), new(bool)
	}
	ops, err := o.patch(&app{})
	if err != nil {
		t.Fatal(err)
	}
	var set []string
	for _, op := range ops {
		set = append(set, strings.SplitN(strings.TrimPrefix(op.Path, "/"), "/", 2)[0])
	}
	if len(set) < len(nodeSetStringFlags)+len(supportedIfaces) {
		t.Fatalf("node set patched only %v", set)
	}
	for _, f := range append(set, nodeUnsetFields...) {
		if !slices.Contains(patchable, f) {
			t.Errorf("node set or unset changes %s, which the API's PATCH refuses", f)
		}
	}
}
