package conductor_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

var rewrite = flag.Bool("rewrite", false, "rewrite internal/conductor/testdata/*.txt with the actual output")

// TestTranscript replays each testdata/*.txt: a list of commands, each
// followed by "----" and the output it must produce, in the style of etcd
// raft's interaction tests. The output is every transition (node: from
// --event--> to/target), every driver call with its outcome, an error
// answered to the caller, and then every node's state. Regenerate with
//
//	go test ./internal/conductor -run Transcript -rewrite
//
// and read the diff: it is the behaviour change.
//
// Commands (node names stand for nodes; their UUIDs never appear):
//
//	create NODE [key=value ...]        a fake-hardware node with driver_info knobs
//	set NODE key=value ...             change driver_info knobs ("key=" removes one)
//	maintenance NODE on|off            set or clear maintenance
//	VERB NODE [steps=i.s,...] [password=P] [minor=N]
//	                                   a provision verb (manage, provide, active,
//	                                   deploy, deleted, undeploy, clean, inspect,
//	                                   rescue, unrescue, abort, unhold, ...)
//	heartbeat NODE                     an agent heartbeat
//	tick DURATION                      advance the clock, run the timeout check
func TestTranscript(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runTranscript(t, f)
		})
	}
}

// item is one command of a transcript with the comment lines before it.
type item struct {
	pre  []string
	cmd  string
	want []string
}

func parseTranscript(t *testing.T, path string) (items []item, tail []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	var pre []string
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			pre = append(pre, line)
			continue
		}
		it := item{pre: pre, cmd: line}
		pre = nil
		if !sc.Scan() || sc.Text() != "----" {
			t.Fatalf("%s: command %q is not followed by ----", path, line)
		}
		for sc.Scan() && sc.Text() != "" {
			it.want = append(it.want, sc.Text())
		}
		items = append(items, it)
	}
	return items, pre
}

func runTranscript(t *testing.T, path string) {
	items, tail := parseTranscript(t, path)
	h := newHarness(t)
	var out strings.Builder
	failed := false
	for _, it := range items {
		got := h.run(it.cmd)
		for _, l := range it.pre {
			out.WriteString(l + "\n")
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", it.cmd, strings.Join(got, "\n"))
		if !*rewrite && strings.Join(got, "\n") != strings.Join(it.want, "\n") {
			failed = true
			t.Errorf("%s: %s\nwant:\n\t%s\ngot:\n\t%s", path, it.cmd,
				strings.Join(it.want, "\n\t"), strings.Join(got, "\n\t"))
		}
	}
	for _, l := range tail {
		out.WriteString(l + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if failed {
		t.Log("if the change is intended: go test ./internal/conductor -run Transcript -rewrite")
	}
}

// harness is a conductor on a fresh store with a recording fake driver and
// an injected clock.
type harness struct {
	t     *testing.T
	ctx   context.Context
	c     *conductor.Conductor
	st    store.Store
	clk   *clock
	sink  *sink
	nodes map[string]string // name → UUID
	seen  map[string]int    // UUID → history entries already checked
}

func newHarness(t *testing.T) *harness {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &sink{}
	rec := &recorder{Hardware: fake.New(), sink: s}
	reg := driver.NewRegistry()
	reg.AddHardwareType(driver.HardwareType{Name: fake.Name, Supported: fake.Kinds()})
	for kind, names := range fake.Kinds() {
		for _, name := range names {
			if kind == "boot" { // fake boot only sets the boot device, through rec
				reg.AddInterface(kind, name, fake.NewBoot())
				continue
			}
			reg.AddInterface(kind, name, rec)
		}
	}
	clk := &clock{now: time.Now().UTC()} // the store stamps conductors with real time
	d := 30 * time.Minute
	c, err := conductor.New(conductor.Config{Store: st, Drivers: reg, Host: "conductor-1", AutomatedClean: true,
		Log: slog.New(s), Now: clk.Now,
		DeployCallbackTimeout: d, CleanCallbackTimeout: d, InspectWaitTimeout: d,
		RescueCallbackTimeout: d, ServiceCallbackTimeout: d,
		// Periodic tasks run only when a transcript says so.
		CheckProvisionStateInterval: -1, SyncPowerStateInterval: -1, ConductorDeadAfter: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := c.Start(cctx); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ctx: ctx, c: c, st: st, clk: clk, sink: s, nodes: map[string]string{}, seen: map[string]int{}}
}

// run executes one command and returns its output lines.
func (h *harness) run(cmd string) []string {
	h.sink.take()
	f := strings.Fields(cmd)
	err := h.exec(f[0], f[1:])
	h.c.WaitIdle()
	out := h.sink.take()
	h.checkHistory(cmd, out)
	if err != nil {
		out = append(out, errorLine(err))
	}
	out = append(out, h.states()...)
	for i := range out {
		for name, id := range h.nodes {
			out[i] = strings.ReplaceAll(out[i], id, name)
		}
	}
	return out
}

func (h *harness) exec(verb string, args []string) error {
	switch verb {
	case "tick":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			h.t.Fatalf("tick %s: %v", args[0], err)
		}
		h.clk.Advance(d)
		return h.c.CheckTimeouts(h.ctx)
	case "create":
		n := &model.Node{Name: args[0], Driver: fake.Name, DriverInfo: knobs(args[1:])}
		if err := h.c.Nodes().CreateNode(h.ctx, n, false); err != nil {
			return err
		}
		h.nodes[args[0]] = n.UUID
		return nil
	}
	id, ok := h.nodes[args[0]]
	if !ok {
		h.t.Fatalf("%s: unknown node %q (create it first)", verb, args[0])
	}
	switch verb {
	case "set":
		_, err := h.c.Nodes().UpdateNode(h.ctx, id, func(n *model.Node) error {
			if n.DriverInfo == nil {
				n.DriverInfo = model.JSON{}
			}
			for k, v := range knobs(args[1:]) {
				if v == "" {
					delete(n.DriverInfo, k)
				} else {
					n.DriverInfo[k] = v
				}
			}
			return nil
		})
		return err
	case "maintenance":
		return h.c.Nodes().SetMaintenance(h.ctx, id, args[1] == "on", "")
	case "heartbeat":
		return h.c.Agents().Heartbeat(h.ctx, id, ipa.Heartbeat{})
	}
	return h.c.Provision(h.ctx, id, provisionRequest(h.t, verb, args[1:]))
}

func knobs(args []string) model.JSON {
	m := model.JSON{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func provisionRequest(t *testing.T, verb string, args []string) conductor.ProvisionRequest {
	req := conductor.ProvisionRequest{Target: verb, Minor: 110, User: "transcript"}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "minor":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("minor=%s: %v", v, err)
			}
			req.Minor = n
		case "password":
			req.RescuePassword = &v
		case "steps":
			var steps []model.JSON
			for _, s := range strings.Split(v, ",") {
				iface, step, _ := strings.Cut(s, ".")
				steps = append(steps, model.JSON{"interface": iface, "step": step})
			}
			switch verb {
			case "clean":
				req.CleanSteps = steps
			case "service":
				req.ServiceSteps = steps
			default:
				req.DeploySteps = steps
			}
		default:
			t.Fatalf("%s: unknown argument %q", verb, a)
		}
	}
	return req
}

// checkHistory holds the transitions a command logged against the history
// it saved: a transcript shows what the conductor persisted, not only what
// it logged.
func (h *harness) checkHistory(cmd string, out []string) {
	var logged, saved []string
	for _, l := range out {
		if strings.Contains(l, " --") {
			from, rest, _ := strings.Cut(l, " --")
			event, to, _ := strings.Cut(rest, "--> ")
			to = to[:strings.LastIndex(to, "/")]
			logged = append(logged, from+" "+event+" "+to)
		}
	}
	ids := make([]string, 0, len(h.nodes))
	for _, id := range h.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		hist, err := h.st.Nodes().ListHistory(h.ctx, id)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range hist[h.seen[id]:] {
			if e.EventType == "provisioning" {
				saved = append(saved, id+": "+e.FromState+" "+e.Trigger+" "+e.ToState)
			}
		}
		h.seen[id] = len(hist)
	}
	sort.Strings(logged)
	sort.Strings(saved)
	if strings.Join(logged, "\n") != strings.Join(saved, "\n") {
		h.t.Errorf("%s: logged transitions %q, saved history %q", cmd, logged, saved)
	}
}

// states describes every node, sorted by name: state/target, then what is
// set among last_error, maintenance and a lock left behind.
func (h *harness) states() []string {
	names := make([]string, 0, len(h.nodes))
	for name := range h.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, name := range names {
		n, err := h.st.Nodes().GetNode(h.ctx, h.nodes[name])
		if err != nil {
			h.t.Fatal(err)
		}
		line := fmt.Sprintf("= %s %s/%s", name, n.ProvisionState, orDash(n.TargetProvisionState))
		if n.PowerState != "" {
			line += " power=" + strconv.Quote(n.PowerState)
		}
		if n.Maintenance {
			line += " maintenance fault=" + strconv.Quote(n.Fault)
		}
		if n.Reservation != "" {
			line += " locked-by=" + n.Reservation
		}
		if n.LastError != "" {
			line += " last_error=" + strconv.Quote(n.LastError)
		}
		out = append(out, line)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func errorLine(err error) string {
	status := map[fault.Kind]int{fault.Invalid: 400, fault.Unauthorized: 401, fault.NotFound: 404,
		fault.NotAllowed: 405, fault.NotAcceptable: 406, fault.Conflict: 409, fault.TooLarge: 413,
		fault.Unsupported: 415, fault.Unavailable: 503}[fault.KindOf(err)]
	return fmt.Sprintf("error %d: %v", status, err)
}

// sink collects the output lines of a command, in the order things happen.
// It is the conductor's slog handler: the "provision state changed" and
// forbidden-event records become lines, the rest is dropped.
type sink struct {
	mu    sync.Mutex
	lines []string
}

func (s *sink) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, line)
}

func (s *sink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.lines
	s.lines = nil
	return out
}

func (s *sink) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs drops the attributes: the conductor's host name is no part of a
// transcript.
func (s *sink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *sink) WithGroup(string) slog.Handler      { return s }
func (s *sink) Handle(_ context.Context, r slog.Record) error {
	a := map[string]string{}
	r.Attrs(func(at slog.Attr) bool { a[at.Key] = at.Value.String(); return true })
	switch r.Message {
	case "provision state changed":
		s.add(fmt.Sprintf("%s: %s --%s--> %s/%s", a["node"], a["from"], a["event"], a["to"], orDash(a["target"])))
	case "conductor raised a forbidden event":
		s.add(fmt.Sprintf("BUG %s: event %s forbidden in %s", a["node"], a["event"], a["state"]))
	}
	return nil
}

// recorder is fake-hardware with every action reported to the sink. It
// embeds the fake, so it offers the fake's capabilities, plus one the fake
// lacks: driver.RamdiskCleaner, as an agent-based interface (direct) has
// it, so transcripts show when the conductor tears an agent ramdisk down
// and whether it has the node powered off.
type recorder struct {
	*fake.Hardware
	sink *sink
}

func (r *recorder) call(n *model.Node, what, result string, err error) {
	line := "driver: " + n.UUID + " " + what
	if result != "" {
		line += " -> " + result
	}
	if err != nil {
		line += " -> error: " + err.Error()
	}
	r.sink.add(line)
}

func resultName(res driver.Result, err error) string {
	if err != nil {
		return ""
	}
	if res == driver.Wait {
		return "wait"
	}
	return "done"
}

func (r *recorder) Verify(ctx context.Context, t *driver.Task) error {
	err := r.Hardware.Verify(ctx, t)
	r.call(t.Node, "power.verify", "", err)
	return err
}

func (r *recorder) PowerState(ctx context.Context, t *driver.Task) (string, error) {
	s, err := r.Hardware.PowerState(ctx, t)
	r.call(t.Node, "power.get", s, err)
	return s, err
}

func (r *recorder) SetPowerState(ctx context.Context, t *driver.Task, target string) error {
	err := r.Hardware.SetPowerState(ctx, t, target)
	r.call(t.Node, "power.set "+target, "", err)
	return err
}

func (r *recorder) Deploy(ctx context.Context, t *driver.Task) (driver.Result, error) {
	res, err := r.Hardware.Deploy(ctx, t)
	r.call(t.Node, "deploy.deploy", resultName(res, err), err)
	return res, err
}

func (r *recorder) TearDown(ctx context.Context, t *driver.Task) error {
	err := r.Hardware.TearDown(ctx, t)
	r.call(t.Node, "deploy.tear_down", "", err)
	return err
}

func (r *recorder) Adopt(ctx context.Context, t *driver.Task) error {
	err := r.Hardware.Adopt(ctx, t)
	r.call(t.Node, "deploy.adopt", "", err)
	return err
}

func (r *recorder) Inspect(ctx context.Context, t *driver.Task) (driver.Result, error) {
	res, err := r.Hardware.Inspect(ctx, t)
	r.call(t.Node, "inspect.inspect", resultName(res, err), err)
	return res, err
}

func (r *recorder) Rescue(ctx context.Context, t *driver.Task) (driver.Result, error) {
	res, err := r.Hardware.Rescue(ctx, t)
	r.call(t.Node, "rescue.rescue", resultName(res, err), err)
	return res, err
}

func (r *recorder) Unrescue(ctx context.Context, t *driver.Task) error {
	err := r.Hardware.Unrescue(ctx, t)
	r.call(t.Node, "rescue.unrescue", "", err)
	return err
}

func (r *recorder) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	res, err := r.Hardware.Continue(ctx, t, op)
	r.call(t.Node, "continue "+op, resultName(res, err), err)
	return res, err
}

func (r *recorder) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	res, err := r.Hardware.ExecuteStep(ctx, t, kind, s)
	r.call(t.Node, fmt.Sprintf("%s step %s.%s", kind, s.Interface, s.Step), resultName(res, err), err)
	return res, err
}

func (r *recorder) CleanUpRamdisk(ctx context.Context, t *driver.Task, powerOff bool) error {
	what := "clean_up_ramdisk"
	if !powerOff {
		what += " (power kept)"
	}
	r.call(t.Node, what+" in "+t.Node.ProvisionState, "", nil)
	if !powerOff || t.Node.DisablePowerOff {
		return nil
	}
	if err := r.SetPowerState(ctx, t, fsm.PowerOff); err != nil {
		return err
	}
	t.Node.PowerState = fsm.PowerOff
	return nil
}
