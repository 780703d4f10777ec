package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNodeCreateShowList(t *testing.T) {
	f, url := startFake(t)
	r := runCLI(t, url, "", "node", "create", "--driver", "fake-hardware", "--name", "node-01",
		"--driver-info", "ipmi_address=fake-bmc", "--property", "cpus=24", "--property", "cpu_arch=x86_64",
		"--resource-class", "gold", "--deploy-interface", "fake", "-f", "json")
	if r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	var created map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil {
		t.Fatalf("create -f json: %v\n%s", err, r.stdout)
	}
	n := f.node("node-01")
	if n["properties"].(map[string]any)["cpus"].(json.Number) != "24" || n["resource_class"] != "gold" || n["deploy_interface"] != "fake" {
		t.Errorf("create sent %v", n)
	}
	if r := runCLI(t, url, "", "node", "show", "node-01", "-f", "value", "-c", "provision_state"); r.stdout != "enroll\n" {
		t.Errorf("show -f value -c provision_state = %q", r.stdout)
	}
	if r := runCLI(t, url, "", "node", "show", "node-01", "-c", "last_error"); !strings.Contains(r.stdout, "| last_error | None  |") {
		t.Errorf("show -c last_error:\n%s", r.stdout)
	}
	r = runCLI(t, url, "", "node", "list", "--fields", "uuid", "name", "provision_state", "-f", "value")
	if r.code != 0 || !strings.HasSuffix(r.stdout, " node-01 enroll\n") {
		t.Errorf("list --fields a b c: %+v", r)
	}
	if got := f.calls[len(f.calls)-1]; got != "GET /v1/nodes" {
		t.Errorf("last call %q", got)
	}
	r = runCLI(t, url, "", "node", "create", "--driver", "fake-hardware", "--name", "node-01")
	if r.code != 1 || r.stderr != "A node with name node-01 already exists. (HTTP 409)\n" {
		t.Errorf("duplicate create: %+v", r)
	}
}

func TestErrorLineAndExitCode(t *testing.T) {
	_, url := startFake(t)
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown node", []string{"node", "show", "nope"}, "Node nope could not be found. (HTTP 404)\n"},
		{"bad column", []string{"node", "list", "-c", "bogus"},
			"No recognized column names in ['bogus']. Recognized columns are ('UUID', 'Name', 'Instance UUID', 'Power State', 'Provisioning State', 'Maintenance').\n"},
		{"negative limit", []string{"node", "list", "--limit", "-2"}, "Expected non-negative --limit, got -2\n"},
		{"bad sort direction", []string{"node", "list", "--sort", "name:up"}, "up is not a valid sort direction for sort key name, use asc or desc instead\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, url, "", tt.args...)
			if r.code != 1 || r.stderr != tt.stderr || r.stdout != "" {
				t.Errorf("got %+v, want exit 1 and %q", r, tt.stderr)
			}
		})
	}
}

func TestProvisionSingleNode(t *testing.T) {
	f, url := startFake(t)
	uuid := f.addNode("n1", "enroll", nil)
	if r := runCLI(t, url, "", "node", "manage", "n1"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("manage prints nothing on acceptance: %+v", r)
	}
	// --wait 30 (argparse style: the value is the next word).
	f.node("n1")["provision_state"] = "manageable"
	f.node("n1")["reservation"] = nil
	f.pending[uuid] = nil
	r := runCLI(t, url, "", "node", "provide", "n1", "--wait", "30")
	if r.code != 0 || r.stdout != "Waiting for provision state available on node n1\n" {
		t.Fatalf("provide --wait 30: %+v", r)
	}
	if n := f.node("n1"); n["provision_state"] != "available" || n["reservation"] != nil {
		t.Errorf("after the wait: %v / %v", n["provision_state"], n["reservation"])
	}
	r = runCLI(t, url, "", "node", "provide", "n1")
	want := `The requested action "provide" can not be performed on node "` + uuid + `" while it is in state "available". (HTTP 400)` + "\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("provide from available: %+v", r)
	}
	f.locked[uuid] = 2
	if r := runCLI(t, url, "", "node", "deploy", "n1", "--instance-info", "image_source=glance://img", "--instance-info", "root_gb=20"); r.code != 0 {
		t.Fatalf("deploy through two locked answers: %+v", r)
	}
	ii := f.node("n1")["instance_info"].(map[string]any)
	if ii["image_source"] != "glance://img" || ii["root_gb"] != json.Number("20") {
		t.Errorf("instance_info = %v", ii)
	}
}

func TestWaitReportsFailure(t *testing.T) {
	f, url := startFake(t)
	uuid := f.addNode("bad", "enroll", nil)
	f.failing[uuid] = true
	r := runCLI(t, url, "", "node", "manage", "bad", "--wait")
	want := "Node bad failed to reach state manageable. It's in unexpected stable state enroll, and has error: fake manage failure\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("got %+v\nwant stderr %q", r, want)
	}
	r = runCLI(t, url, "", "node", "wait", "bad", "--for", "bogus")
	if r.code != 1 || !strings.Contains(r.stderr, `unknown state "bogus"`) {
		t.Errorf("wait --for bogus: %+v", r)
	}
}

func TestBatchLockedAndFailing(t *testing.T) {
	f, url := startFake(t)
	var names []string
	for i := range 30 {
		name := "b" + string(rune('a'+i/10)) + string(rune('0'+i%10))
		uuid := f.addNode(name, "enroll", nil)
		names = append(names, name)
		switch {
		case i%10 == 3:
			f.locked[uuid] = 3 // locked: retried until it goes through
		case i%10 == 7:
			f.failing[uuid] = true // fails while the batch waits
		}
	}
	f.addNode("done", "manageable", nil) // not selected: wrong state
	r := runCLI(t, url, "", "node", "manage", "--provision-state", "enroll", "--wait", "--concurrency", "4", "-f", "json")
	if r.code != 1 || r.stderr == "" {
		t.Fatalf("a batch with failures exits 1: %+v", r)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("result table -f json: %v\n%s", err, r.stdout)
	}
	if len(rows) != 30 {
		t.Fatalf("%d result rows, want 30", len(rows))
	}
	for i, row := range rows {
		wantResult, wantState := "ok", "manageable"
		if i%10 == 7 {
			wantResult, wantState = "failed", "enroll"
		}
		if row["Node"] != names[i] || row["Result"] != wantResult || row["State"] != wantState {
			t.Errorf("row %d = %v, want %s %s %s", i, row, names[i], wantResult, wantState)
		}
		if wantResult == "failed" && !strings.Contains(row["Error"].(string), "fake manage failure") {
			t.Errorf("row %d error %q lacks last_error", i, row["Error"])
		}
		if wantRetries := map[bool]float64{true: 3, false: 0}[i%10 == 3]; row["Retries"] != wantRetries {
			t.Errorf("row %d retries %v, want %v", i, row["Retries"], wantRetries)
		}
		n := f.node(names[i])
		if n["reservation"] != nil || n["target_provision_state"] != nil {
			t.Errorf("node %s left half-done: %v/%v", names[i], n["target_provision_state"], n["reservation"])
		}
	}
	if !strings.Contains(r.stderr, "manage failed on 3 of 30 nodes") {
		t.Errorf("summary line missing:\n%s", r.stderr)
	}
	if strings.Count(r.stderr, ": ok\n") != 27 {
		t.Errorf("plain progress lines expected without a terminal:\n%s", r.stderr)
	}
}

func TestBatchNeedsNodesOrSelectors(t *testing.T) {
	_, url := startFake(t)
	if r := runCLI(t, url, "", "node", "manage"); r.code != 1 || !strings.Contains(r.stderr, "missing <node>") {
		t.Errorf("no node: %+v", r)
	}
	if r := runCLI(t, url, "", "node", "manage", "x", "--all"); r.code != 1 || !strings.Contains(r.stderr, "not both") {
		t.Errorf("node and selector: %+v", r)
	}
	if r := runCLI(t, url, "", "node", "manage", "--all"); r.code != 0 || !strings.Contains(r.stderr, "No node matches") {
		t.Errorf("empty selection: %+v", r)
	}
}

func TestPowerAndMaintenanceBatch(t *testing.T) {
	f, url := startFake(t)
	f.addNode("p1", "available", nil)
	f.addNode("p2", "available", nil)
	r := runCLI(t, url, "", "node", "power", "on", "p1", "p2", "ghost", "--wait", "-f", "value")
	want := "p1 ok power on 0 \np2 ok power on 0 \nghost failed  0 Node ghost could not be found. (HTTP 404)\n"
	if r.code != 1 || r.stdout != want {
		t.Errorf("power on: %+v\nwant stdout %q", r, want)
	}
	if r := runCLI(t, url, "", "node", "power", "show", "p1", "-f", "value", "-c", "power_state"); r.stdout != "power on\n" {
		t.Errorf("power show: %+v", r)
	}
	if r := runCLI(t, url, "", "node", "maintenance", "set", "--all", "--reason", "Batch maintenance", "-f", "value"); r.code != 0 {
		t.Errorf("maintenance set --all: %+v", r)
	}
	if f.node("p2")["maintenance_reason"] != "Batch maintenance" {
		t.Errorf("reason not sent: %v", f.node("p2"))
	}
	r = runCLI(t, url, "", "node", "maintenance", "unset", "--maintenance", "-f", "value", "-c", "Node")
	if r.code != 0 || r.stdout != "p1\np2\n" {
		t.Errorf("maintenance unset --maintenance: %+v", r)
	}
}

func TestPortCreateSeedGrammar(t *testing.T) {
	f, url := startFake(t)
	uuid := f.addNode("node-01", "manageable", nil)
	// The guide writes --pxe-enabled before the address; python-ironicclient
	// would read the address as the flag's value.
	r := runCLI(t, url, "", "port", "create", "--node", "node-01", "--pxe-enabled", "00:11:22:33:44:55", "-f", "value", "-c", "node_uuid", "-c", "pxe_enabled", "-c", "address")
	if r.code != 0 || r.stdout != "00:11:22:33:44:55\n"+uuid+"\nTrue\n" {
		t.Errorf("port create: %+v", r)
	}
	r = runCLI(t, url, "", "port", "create", "--node", "node-01", "--pxe-enabled", "false", "00:11:22:33:44:56", "-f", "value", "-c", "pxe_enabled")
	if r.code != 0 || r.stdout != "False\n" {
		t.Errorf("port create --pxe-enabled false: %+v", r)
	}
}

func TestCleanStepsSources(t *testing.T) {
	f, url := startFake(t)
	f.addNode("c1", "manageable", nil)
	steps := `[{"interface": "deploy", "step": "erase_devices_metadata"}]`
	for _, arg := range []string{steps, "-"} {
		r := runCLI(t, url, steps, "node", "clean", "c1", "--clean-steps", arg)
		// The fake knows no clean: a 400 after the body was read is enough.
		if r.code != 1 || !strings.Contains(r.stderr, `The requested action "clean"`) {
			t.Errorf("clean --clean-steps %s: %+v", arg, r)
		}
	}
	r := runCLI(t, url, "", "node", "clean", "c1", "--clean-steps", "[not json")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot be parsed as JSON") {
		t.Errorf("bad clean steps: %+v", r)
	}
	if r := runCLI(t, url, "", "node", "clean", "c1"); r.code != 1 || !strings.Contains(r.stderr, "clean-steps") {
		t.Errorf("clean without steps: %+v", r)
	}
}

// TestRunbookFlag: node clean and node service send --runbook as the
// request's runbook (API 1.92), instead of steps and never with them.
func TestRunbookFlag(t *testing.T) {
	f, url := startFake(t)
	f.addNode("c1", "manageable", nil)
	for v, version := range map[string]string{"clean": "1.92", "service": "1.108"} {
		r := runCLI(t, url, "", "node", v, "c1", "--runbook", "CUSTOM_RB")
		f.mu.Lock()
		last, sent := f.bodies[len(f.bodies)-1], f.version[len(f.version)-1]
		f.mu.Unlock()
		if r.code != 1 || last["runbook"] != "CUSTOM_RB" || last["target"] != v || len(last) != 2 || sent != version {
			t.Errorf("node %s --runbook: %+v sent %v at %s, want at %s", v, r, last, sent, version)
		}
		r = runCLI(t, url, "", "node", v, "c1", "--runbook", "CUSTOM_RB", "--"+v+"-steps", "[]")
		if r.code != 1 || !strings.Contains(r.stderr, "runbook") || strings.Count(r.stderr, "\n") > 1 {
			t.Errorf("node %s --runbook with steps: %+v", v, r)
		}
	}
	if r := runCLI(t, url, "", "node", "service", "c1"); r.code != 1 || !strings.Contains(r.stderr, "service-steps") {
		t.Errorf("service without steps or runbook: %+v", r)
	}
	// A version the user pinned is sent as is (the server refuses it).
	runCLI(t, url, "", "--os-baremetal-api-version", "1.89", "node", "clean", "c1", "--runbook", "CUSTOM_RB")
	runCLI(t, url, "", "node", "clean", "c1", "--clean-steps", "[]")
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.version[len(f.version)-2:]; got[0] != "1.89" || got[1] != DefaultAPIVersion {
		t.Errorf("versions sent %v, want the pinned 1.89, then the default for steps", got)
	}
}

func TestFleetReport(t *testing.T) {
	f, url := startFake(t)
	f.addNode("ok-1", "active", map[string]any{"power_state": "power on"})
	f.addNode("broken", "deploy failed", map[string]any{"last_error": "disk on fire"})
	f.addNode("maint", "available", map[string]any{"maintenance": true, "maintenance_reason": "Hardware upgrade", "fault": "power failure"})
	f.addNode("perr", "active", map[string]any{"power_state": "error", "last_error": "BMC gone"})
	f.addNode("slow", "deploying", map[string]any{"target_provision_state": "active", "provision_updated_at": "2026-01-01T00:10:00+00:00"})
	f.addNode("fresh", "cleaning", map[string]any{"provision_updated_at": "2026-01-01T01:59:00+00:00"})
	r := runCLI(t, url, "", "fleet", "report", "--stuck-after", "30m")
	for _, want := range []string{"Total nodes: 6", "  deploy failed    1", "Failed nodes: 1", "disk on fire",
		"Nodes in maintenance: 1", "Hardware upgrade", "power failure", "Power errors: 1", "BMC gone",
		"more than 30m0s: 1", "| slow ", "Conductors: 2", "| c2       |                 | False |"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 0 || strings.Contains(r.stdout, "| fresh") {
		t.Errorf("report: code %d\n%s", r.code, r.stdout)
	}
	r = runCLI(t, url, "", "fleet", "report", "-f", "json", "--fail-on", "failed>=2,stuck,dead-conductor")
	if r.code != 2 || !strings.Contains(r.stderr, "stuck: 1 (threshold 1)") || strings.Contains(r.stderr, "failed:") {
		t.Errorf("--fail-on: %+v", r)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-f json: %v\n%s", err, r.stdout)
	}
	if doc["total_nodes"] != float64(6) || len(doc["stuck_nodes"].([]any)) != 1 || len(doc["alerts"].([]any)) != 2 {
		t.Errorf("json report: %v", doc)
	}
	if r := runCLI(t, url, "", "fleet", "report", "--fail-on", "bogus"); r.code != 1 {
		t.Errorf("--fail-on bogus: %+v", r)
	}
}

func TestGlobalFlagsBeforeCommand(t *testing.T) {
	_, url := startFake(t)
	r := runCLI(t, "http://127.0.0.1:1", "", "--os-endpoint", url, "conductor", "list", "-f", "value")
	if r.code != 0 || r.stdout != "c1  True\nc2  False\n" {
		t.Errorf("conductor list with --os-endpoint first: %+v", r)
	}
}

// TestBatchInterrupted cancels a batch while its first node is in flight:
// that request completes, the other nodes are not started, and the table
// says so.
func TestBatchInterrupted(t *testing.T) {
	f, url := startFake(t)
	for _, n := range []string{"i1", "i2", "i3"} {
		f.addNode(n, "enroll", nil)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.onPut = cancel
	r := runCLICtx(t, ctx, url, "", "node", "manage", "i1", "i2", "i3", "--wait", "--concurrency", "1", "-f", "value", "-c", "Node", "-c", "Result")
	if r.code != 1 || r.stdout != "i1 interrupted\ni2 skipped\ni3 skipped\n" {
		t.Errorf("interrupted batch: %+v", r)
	}
	if f.node("i1")["provision_state"] == "enroll" || f.node("i2")["provision_state"] != "enroll" {
		t.Errorf("the started request must complete and no other start: i1 %v, i2 %v",
			f.node("i1")["provision_state"], f.node("i2")["provision_state"])
	}
}

func TestProgressBar(t *testing.T) {
	var b strings.Builder
	p := newProgress(&b, true, "manage", 4)
	p.drawInterval = 0
	for i := range 4 {
		var err error
		if i == 2 {
			err = errors.New("boom")
		}
		p.done("n", err)
	}
	p.finish()
	out := b.String()
	if !strings.HasPrefix(out, "\rmanage [#######-----------------------] 1/4  ok 1  failed 0 ") ||
		!strings.HasSuffix(out, "\rmanage [##############################] 4/4  ok 3  failed 1 \n") {
		t.Errorf("progress bar:\n%q", out)
	}
	b.Reset()
	p = newProgress(&b, false, "power on", 2)
	p.done("a", nil)
	p.done("b", errors.New("boom"))
	p.finish()
	if b.String() != "power on a: ok\npower on b: failed: boom\n" {
		t.Errorf("plain progress: %q", b.String())
	}
}

// TestBatchConfirmation: a destructive action on several nodes asks on a
// terminal (anything but y is a refusal, --yes skips the question), never
// in a script, and --dry-run lists the nodes and acts on none.
func TestBatchConfirmation(t *testing.T) {
	f, url := startFake(t)
	f.addNode("c1", "available", nil)
	f.addNode("c2", "available", nil)
	power := func() (any, any) { return f.node("c1")["power_state"], f.node("c2")["power_state"] }
	runCLI(t, url, "", "node", "power", "on", "--all", "--wait")
	cases := []struct {
		name     string
		terminal bool
		stdin    string
		args     []string
		code     int
		acted    bool
		output   string
	}{
		{"refused on a terminal", true, "n\n", []string{"--all"}, 1, false, "power off 2 nodes (c1, c2)? [y/N] "},
		{"no answer is a refusal", true, "", []string{"--all"}, 1, false, "not confirmed"},
		{"dry run", true, "", []string{"--all", "--dry-run"}, 0, false, "Would power off 2 nodes (dry run; nothing done):\n  c1\n  c2\n"},
		{"dry run of named nodes", false, "", []string{"c1", "--dry-run"}, 0, false, "Would power off 1 node"},
		{"confirmed", true, "y\n", []string{"--all", "-f", "value", "-c", "Node"}, 0, true, "c1\nc2\n"},
		{"--yes skips the question", true, "", []string{"c1", "c2", "--yes", "-f", "value", "-c", "Node"}, 0, true, "c1\nc2\n"},
		{"no question in a script", false, "", []string{"--all", "-f", "value", "-c", "Node"}, 0, true, "c1\nc2\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runCLI(t, url, "", "node", "power", "on", "c1", "c2", "--wait")
			r := runCLIEnv(t, t.Context(), url, c.stdin, c.terminal, append([]string{"node", "power", "off", "--wait"}, c.args...)...)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.output) {
				t.Fatalf("code %d (want %d), output %q, want %q", r.code, c.code, r.stdout+r.stderr, c.output)
			}
			p1, p2 := power()
			if acted := p1 == "power off" && p2 == "power off"; acted != c.acted || (!acted && (p1 != "power on" || p2 != "power on")) {
				t.Errorf("power states %v, %v; acted want %t", p1, p2, c.acted)
			}
		})
	}
	if r := runCLIEnv(t, t.Context(), url, "", true, "node", "power", "on", "--all"); r.code != 0 || strings.Contains(r.stderr, "[y/N]") {
		t.Errorf("power on is not destructive, yet: %+v", r)
	}
}
