package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/api"
)

// TestNodeFieldsAgainstTheAPI checks the CLI's node field lists against
// the API's node field table: `node list --fields` and `--long` name
// exactly the fields a node shows, and every field `node set` and
// `node unset` change is one a PATCH may change.
func TestNodeFieldsAgainstTheAPI(t *testing.T) {
	shown, patchable := api.NodeFields()
	cli := append(slices.Clone(nodeDetailFields), nodeExtraFields...)
	for _, f := range cli {
		if !slices.Contains(shown, f) {
			t.Errorf("the CLI lists node field %s, which the API does not show", f)
		}
	}
	for _, f := range shown {
		if !slices.Contains(cli, f) {
			t.Errorf("the API shows node field %s, which the CLI's --fields refuses (add it to nodeExtraFields)", f)
		}
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
