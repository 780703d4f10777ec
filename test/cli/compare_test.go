package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// requireBaremetal skips the test when python-ironicclient's `baremetal`
// is missing, and fails it in CI, where it must be installed.
func requireBaremetal(t *testing.T) {
	t.Helper()
	testbin.Need(t, "baremetal", "python3-ironicclient")
}

// lifecycleSteps is one node's life, with the mistakes an operator makes
// on the way. {node} is the node's name. Each step runs through both
// clients, on two nodes in the same states, and must print the same.
var lifecycleSteps = [][]string{
	{"node", "create", "--driver", "fake-hardware", "--name", "{node}", "--property", "cpus=24", "-f", "value", "-c", "provision_state", "-c", "properties"},
	{"node", "deploy", "{node}"},
	{"node", "provide", "{node}"},
	{"node", "show", "{node}", "-f", "value", "-c", "provision_state"},
	{"node", "manage", "{node}", "--wait"},
	{"node", "show", "{node}", "-f", "json", "-c", "provision_state", "-c", "target_provision_state"},
	{"node", "inspect", "{node}", "--wait", "60"},
	{"node", "abort", "{node}"},
	{"node", "clean", "{node}", "--clean-steps", `[{"interface": "deploy", "step": "no_such_step"}]`, "--wait"},
	{"node", "show", "{node}", "-f", "yaml", "-c", "last_error", "-c", "provision_state"},
	{"node", "clean", "{node}", "--clean-steps", `[{"interface": "deploy", "step": "erase_devices_metadata"}]`},
	{"node", "manage", "{node}", "--wait"},
	{"node", "provide", "{node}", "--wait"},
	{"node", "provide", "{node}"},
	{"node", "inspect", "{node}"},
	{"node", "deploy", "{node}", "--wait"},
	{"node", "manage", "{node}"},
	{"--max-retries", "0", "node", "delete", "{node}"},
	{"node", "rescue", "{node}", "--rescue-password", "s3cret", "--wait"},
	{"node", "unrescue", "{node}", "--wait"},
	{"node", "rebuild", "{node}", "--wait"},
	{"node", "maintenance", "set", "{node}", "--reason", "anchor test"},
	{"node", "show", "{node}", "-f", "value", "-c", "maintenance", "-c", "maintenance_reason", "-c", "fault"},
	{"node", "undeploy", "{node}"},
	{"node", "maintenance", "unset", "{node}"},
	{"node", "undeploy", "{node}", "--wait"},
	{"node", "show", "{node}", "-c", "provision_state", "-c", "maintenance", "-c", "last_error"},
	{"node", "set", "{node}", "--name", "bad name!"},
	{"node", "set", "{node}", "--property", "memory_mb=65536", "--extra", "rack=r1", "--driver-info", "ipmi_password=secret"},
	{"node", "show", "{node}", "-c", "properties", "-c", "extra", "-c", "driver_info"},
	{"node", "show", "{node}", "-f", "yaml", "-c", "properties", "-c", "driver_info", "-c", "traits"},
	{"node", "unset", "{node}", "--extra", "rack", "--property", "cpus"},
	{"node", "show", "{node}", "-f", "shell", "-c", "properties", "-c", "extra", "-c", "name"},
	{"port", "create", "{mac}", "--node", "{uuid}", "-f", "value", "-c", "address", "-c", "pxe_enabled", "-c", "node_uuid"},
	{"--max-retries", "0", "port", "create", "{mac}", "--node", "{uuid}"},
	{"port", "create", "not-a-mac", "--node", "{uuid}"},
	{"port", "list", "--node", "{node}", "-f", "value", "-c", "Address"},
	{"port", "show", "{mac}", "--address", "-f", "json", "-c", "address", "-c", "extra", "-c", "pxe_enabled"},
	{"node", "power", "on", "{node}"},
	{"node", "show", "{node}", "-f", "value", "-c", "power_state"},
	{"node", "reboot", "{node}"},
	{"node", "power", "off", "{node}", "--soft"},
	{"node", "show", "{node}", "-f", "value", "-c", "power_state", "-c", "target_power_state"},
	{"node", "boot", "device", "set", "{node}", "pxe", "--persistent"},
	{"node", "boot", "device", "show", "{node}", "-f", "json"},
	{"node", "boot", "device", "show", "{node}", "--supported"},
	{"node", "validate", "{node}", "-f", "value", "-c", "Interface", "-c", "Result"},
	{"node", "list", "--provision-state", "available", "-f", "value", "-c", "Provisioning State"},
	{"node", "list", "--provision-state", "bogus"},
	{"node", "show", "does-not-exist"},
	{"node", "delete", "{node}"},
}

// TestLifecycleSameAsBaremetal walks two nodes through the same life, one
// with the real `baremetal` CLI and one with `anvil`, and requires the
// same output, the same error lines and the same exit codes, once the
// node's name and UUID are masked.
func TestLifecycleSameAsBaremetal(t *testing.T) {
	requireBaremetal(t)
	t.Parallel()
	base := startServer(t)
	clients := []struct{ bin, node, mac string }{
		{"baremetal", "bm-node", "52:54:00:aa:bb:01"}, {anvilBin, "anvil-node", "52:54:00:aa:bb:02"}}
	uuids := map[string]string{}
	for i, step := range lifecycleSteps {
		var outs [2]result
		for c, cl := range clients {
			args := []string{"--os-baremetal-api-version", "1.78"}
			fill := strings.NewReplacer("{node}", cl.node, "{uuid}", uuids[cl.node], "{mac}", cl.mac)
			for _, a := range step {
				args = append(args, fill.Replace(a))
			}
			r := run(t, base, "", cl.bin, args...)
			if uuids[cl.node] == "" && i > 0 {
				uuids[cl.node] = strings.TrimSpace(anvil(t, base, "node", "show", cl.node, "-f", "value", "-c", "uuid"))
			}
			mask := strings.NewReplacer(uuids[cl.node], "<uuid>", cl.node, "<node>", cl.mac, "<mac>")
			r.stdout, r.stderr = mask.Replace(r.stdout), mask.Replace(dropRetryLog(r.stderr))
			outs[c] = r
		}
		bm, av := outs[0], outs[1]
		if bm != av {
			t.Errorf("step %d %v differs:\n baremetal: exit %d\n  stdout %q\n  stderr %q\n anvil: exit %d\n  stdout %q\n  stderr %q",
				i, step, bm.code, bm.stdout, bm.stderr, av.code, av.stdout, av.stderr)
		}
		// The next step must not meet a lock either client would wait on.
		for _, cl := range clients {
			if uuids[cl.node] != "" && step[len(step)-1] != "delete" {
				settle(t, base, cl.node)
			}
		}
	}
}

// dropRetryLog removes the log line python-ironicclient writes when it
// gives up retrying a 409 or 503 ("Error contacting Ironic server: ...
// Attempt N of M"): anvil does not retry conflicts retrying cannot fix,
// and prints one error line.
func dropRetryLog(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, "Error contacting Ironic server: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// settle waits until the conductor has let go of the node: its power
// change done and its provision state settled.
func settle(t *testing.T, base, node string) {
	t.Helper()
	r := run(t, base, "", anvilBin, "node", "show", node, "-f", "value", "-c", "provision_state", "-c", "target_power_state")
	if r.code != 0 {
		return // deleted
	}
	states := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(states) != 2 {
		t.Fatalf("node show %s: %q", node, r.stdout)
	}
	if states[0] != "None" && states[0] != "" {
		anvil(t, base, "node", "wait", node, "--for", states[0], "--timeout", "30")
	}
	if states[1] != "None" {
		anvil(t, base, "node", "wait", node, "--for", states[1], "--timeout", "30")
	}
}

// TestOutputSameAsBaremetal prints the same fleet through both clients in
// every output format and requires byte-identical output.
func TestOutputSameAsBaremetal(t *testing.T) {
	requireBaremetal(t)
	t.Parallel()
	base := startServer(t)
	anvil(t, base, "node", "create", "--driver", "fake-hardware", "--name", "plain", "-f", "value", "-c", "uuid")
	anvil(t, base, "node", "create", "--driver", "fake-hardware", "--name", "rich", "--property", "cpus=24",
		"--property", "cpu_arch=x86_64", "--extra", "note=it's \"quoted\"", "--driver-info", "ipmi_password=pw",
		"--resource-class", "gold", "-f", "value", "-c", "uuid")
	anvil(t, base, "node", "create", "--driver", "fake-hardware", "--name", "broken", "--driver-info", "fake_fail=clean",
		"-f", "value", "-c", "uuid")
	anvil(t, base, "node", "manage", "rich", "broken", "--wait", "-f", "value")
	anvil(t, base, "node", "maintenance", "set", "rich", "--reason", "Hardware upgrade: fan")
	run(t, base, "", anvilBin, "node", "clean", "broken", "--clean-steps", `[{"interface": "deploy", "step": "nope"}]`, "--wait")
	rich := strings.TrimSpace(anvil(t, base, "node", "show", "rich", "-f", "value", "-c", "uuid"))
	anvil(t, base, "port", "create", "52:54:00:00:00:01", "--node", "rich", "--extra", "a=1", "--extra", "b=x")
	commands := [][]string{{"node", "list"}, {"node", "list", "--long"}, {"node", "list", "--fields", "uuid", "name", "properties", "last_error"},
		{"node", "list", "--maintenance"}, {"node", "list", "--provision-state", "manageable", "--sort", "name:desc"},
		{"port", "list", "--long"}, {"conductor", "list", "--long"}, {"driver", "list", "--long"}}
	shows := [][]string{{"node", "show", "rich"}, {"node", "show", "broken"}, {"node", "show", "plain", "--fields", "uuid", "name", "extra"},
		{"port", "show", "52:54:00:00:00:01", "--address"}, {"driver", "show", "fake-hardware"}, {"node", "validate", rich}}
	var cases [][]string
	for _, cmd := range commands {
		for _, f := range []string{"table", "json", "value", "yaml", "csv"} {
			cases = append(cases, append(append([]string(nil), cmd...), "-f", f))
		}
	}
	for _, cmd := range shows {
		for _, f := range []string{"table", "json", "value", "yaml"} {
			cases = append(cases, append(append([]string(nil), cmd...), "-f", f))
		}
	}
	// Read-only commands: run them side by side (each costs a Python start).
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			sameOutput(t, base, args)
		})
	}
}

// sameOutput runs one command through both clients at API 1.78.
func sameOutput(t *testing.T, base string, args []string) {
	t.Helper()
	full := append([]string{"--os-baremetal-api-version", "1.78"}, args...)
	bm := run(t, base, "", "baremetal", full...)
	av := run(t, base, "", anvilBin, full...)
	if args[0] == "conductor" {
		// The conductor heartbeats every 10 s: its updated_at may move
		// between the two commands.
		for _, r := range []*result{&bm, &av} {
			r.stdout = timestampRE.ReplaceAllString(r.stdout, "<time>")
		}
	}
	if bm != av {
		t.Errorf("%v differs:\n baremetal (exit %d):\n%s%s\n anvil (exit %d):\n%s%s", args, bm.code, bm.stdout, bm.stderr, av.code, av.stdout, av.stderr)
	}
}

var timestampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00`)
