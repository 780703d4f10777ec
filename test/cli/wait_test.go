package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// nodeGETs sums anvil_api_requests_total for GET requests on single nodes
// and node lists, read from /metrics: what a polling waiter would inflate.
func nodeGETs(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	total := 0
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "anvil_api_requests_total{") || !strings.Contains(line, `method="GET"`) {
			continue
		}
		if !strings.Contains(line, `route="/v1/nodes/{ident}"`) && !strings.Contains(line, `route="/v1/nodes"`) &&
			!strings.Contains(line, `route="/v1/nodes/detail"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("bad metrics line %q", line)
		}
		total += int(v)
	}
	return total
}

// --wait and `node wait` listen to the watch stream: however long the
// operation takes, they read each node once and never poll.
func TestWaitUsesTheStream(t *testing.T) {
	base := startServer(t)
	anvil(t, base, "node", "create", "--driver", "fake-hardware", "--name", "slow",
		"--driver-info", "fake_verify_delay=1.5", "--driver-info", "fake_deploy_delay=1.5")
	before := nodeGETs(t, base)
	start := time.Now()
	anvil(t, base, "node", "manage", "slow", "--wait", "30")
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("--wait returned after %s, before the 1.5 s verification ended", d)
	}
	anvil(t, base, "node", "provide", "slow", "--wait", "30")
	if got := strings.TrimSpace(anvil(t, base, "node", "show", "slow", "-f", "value", "-c", "provision_state")); got != "available" {
		t.Fatalf("after provide --wait: %q", got)
	}
	reads := nodeGETs(t, base) - before
	t.Logf("%d node GETs for manage --wait, provide --wait and show", reads)
	// manage/provide each read the node to act on it and once to start
	// waiting, and `node show` reads it: a poller would have made dozens.
	if reads > 5 {
		t.Fatalf("%d node GETs for two waits of 1.5 s+: the waiter is polling", reads)
	}

	// node wait reports a failure with last_error, still without polling.
	anvil(t, base, "node", "set", "slow", "--driver-info", "fake_fail=deploy")
	before = nodeGETs(t, base)
	anvil(t, base, "node", "deploy", "slow")
	r := run(t, base, "", anvilBin, "node", "wait", "slow", "--for", "active", "--timeout", "30")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "deploy failed") || !strings.Contains(r.stdout+r.stderr, "fake deploy failure") {
		t.Fatalf("node wait on a failing deploy: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if reads := nodeGETs(t, base) - before; reads > 4 {
		t.Fatalf("%d node GETs for one wait: the waiter is polling", reads)
	}
}

// `anvil node watch` prints each change as it happens.
func TestNodeWatch(t *testing.T) {
	base := startServer(t)
	anvil(t, base, "node", "create", "--driver", "fake-hardware", "--name", "watched")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, anvilBin, "node", "watch", "watched", "--fields", "provision_state")
	cmd.Env = testEnv(base)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The watcher says so on stderr once its subscription is live.
	if l, err := bufio.NewReader(errPipe).ReadString('\n'); err != nil || !strings.HasPrefix(l, "Watching watched") {
		t.Fatalf("watch did not start: %q %v", l, err)
	}
	anvil(t, base, "node", "manage", "watched", "--wait")
	want := []string{"provision_state: enroll -> verifying", "provision_state: verifying -> manageable"}
	var got []string
	for len(want) > 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("watch ended early; saw %q", got)
			}
			got = append(got, l)
			if strings.Contains(l, "watched") && strings.Contains(l, want[0]) {
				want = want[1:]
			}
		case <-ctx.Done():
			t.Fatalf("watch printed %q, still missing %q", got, want)
		}
	}
}

// TestWaitShowsBMCProgress: `node manage --wait` on a node whose IPMI BMC
// does not answer says so on stderr while the conductor still retries
// (Ironic retries for a minute in silence), naming the BMC, never the
// password; the BMC coming back ends the wait in manageable.
func TestWaitShowsBMCProgress(t *testing.T) {
	base := startServer(t)
	const password = "progress-pw-51"
	e, err := bmcemu.Start(t.Context(), bmcemu.Config{Count: 1, IPMI: true, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := e.Machine("node-01")
	port := strconv.Itoa(m.Status().IPMIPort)
	e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = true })
	anvil(t, base, "node", "create", "--driver", "ipmi", "--name", "silent",
		"--driver-info", "ipmi_address=127.0.0.1", "--driver-info", "ipmi_port="+port,
		"--driver-info", "ipmi_username="+m.Username, "--driver-info", "ipmi_password="+password)
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, anvilBin, "node", "manage", "silent", "--wait", "120")
	cmd.Env = testEnv(base)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := "node silent: IPMI BMC 127.0.0.1:" + port + " has not completed"
	sc := bufio.NewScanner(stderr)
	var all []string
	seen := false
	for sc.Scan() {
		line := sc.Text()
		all = append(all, line)
		if strings.Contains(line, password) {
			t.Errorf("stderr shows the BMC password: %q", line)
		}
		if !seen && strings.Contains(line, want) {
			seen = true
			if !strings.Contains(line, "retrying for up to") {
				t.Errorf("progress line %q does not say it retries", line)
			}
			e.SetKnobs("node-01", func(k *bmcemu.Knobs) { k.Dead = false })
		}
	}
	err = cmd.Wait()
	if !seen {
		t.Fatalf("no progress line %q before the CLI ended (%v)\nstderr: %s", want, err, strings.Join(all, "\n"))
	}
	if err != nil {
		t.Fatalf("manage --wait after the BMC came back: %v\nstdout: %s\nstderr: %s", err, stdout.String(), strings.Join(all, "\n"))
	}
}
