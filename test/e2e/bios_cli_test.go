package e2e

import (
	"strings"
	"testing"
)

// TestCLIBIOSSettings: the real `baremetal` CLI applies BIOS settings to a
// fake-hardware node by manual cleaning (the fake bios keeps them, as
// Ironic's), lists and shows them (with the registry columns at 1.74), and
// gets Ironic's answers for a missing setting and for step arguments
// failing the steps schema.
func TestCLIBIOSSettings(t *testing.T) {
	requireCLI(t)
	t.Parallel()
	base := startServer(t)
	bm := newCLI(t, base)
	uuid := strings.TrimSpace(bm.ok("node", "create", "--driver", "fake-hardware", "--name", "bios-1", "-f", "value", "-c", "uuid"))
	bm.silent("node", "manage", "bios-1")
	waitState(t, base, uuid, "manageable")
	bm.silent("node", "clean", "bios-1", "--clean-steps",
		`[{"interface": "bios", "step": "apply_configuration", "args": {"settings": [{"name": "LogicalProc", "value": "Enabled"}, {"name": "Numa", "value": "On"}]}}]`)
	waitState(t, base, uuid, "manageable")
	bm.expect("LogicalProc Enabled\nNuma On\n", "node", "bios", "setting", "list", "bios-1", "-f", "value")
	bm.expect("On\n", "node", "bios", "setting", "show", "bios-1", "Numa", "-f", "value", "-c", "value")
	long := bm.ok("--os-baremetal-api-version", "1.74", "node", "bios", "setting", "list", "bios-1", "--long", "-f", "value", "-c", "Name", "-c", "Read Only")
	if long != "LogicalProc None\nNuma None\n" {
		t.Errorf("--long = %q", long)
	}
	bm.fails("Node "+uuid+" doesn't have a BIOS setting 'Nope' (HTTP 404)", "node", "bios", "setting", "show", "bios-1", "Nope")
	bm.fails("Invalid clean_steps: 'x' is not of type 'object' (HTTP 400)", "node", "clean", "bios-1", "--clean-steps",
		`[{"interface": "bios", "step": "apply_configuration", "args": "x"}]`)
}
