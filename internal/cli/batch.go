package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// batchOpts select the nodes an action applies to and how it runs.
type batchOpts struct {
	all         bool
	state       string
	maintenance bool
	rc          string
	concurrency int
	yes         bool         // do not ask before a destructive batch
	dryRun      bool         // list the nodes, act on none
	wait        *optionalArg // nil when the action cannot be waited for
	out         outputOpts
}

// actionTimeout bounds one node's request (its retries included) once it
// has started, so an interrupt never leaves a request half sent.
const actionTimeout = 5 * time.Minute

func (b *batchOpts) addFlags(cmd *cobra.Command, canWait bool) {
	f := cmd.Flags()
	f.BoolVar(&b.all, "all", false, "act on every node")
	f.StringVar(&b.state, "provision-state", "", "act on the nodes in this provision state")
	f.BoolVar(&b.maintenance, "maintenance", false, "act on the nodes in maintenance mode")
	f.StringVar(&b.rc, "resource-class", "", "act on the nodes of this resource class")
	f.IntVar(&b.concurrency, "concurrency", 8, "how many nodes are acted on at once")
	f.BoolVarP(&b.yes, "yes", "y", false, "do not ask for confirmation before acting on several nodes")
	f.BoolVar(&b.dryRun, "dry-run", false, "list the nodes the command would act on, and act on none")
	if canWait {
		b.wait = newOptionalArg(f, "wait", "seconds", "0",
			"wait for the node(s) to reach the expected state, at most this many seconds (0: no limit)")
	}
	_ = cmd.RegisterFlagCompletionFunc("provision-state", completeStates)
	addListOutput(cmd, &b.out)
}

func (b *batchOpts) selecting() bool {
	return b.all || b.state != "" || b.maintenance || b.rc != ""
}

// target is one node of a batch: ident is sent to the API, show printed.
type target struct{ ident, show string }

// nodeResult is the outcome of an action on one node.
type nodeResult struct {
	started  bool
	accepted bool // the API accepted the request (a later error is the wait's)
	retries  int  // requests retried because the node was locked or the API busy
	state    string
	err      error
}

var errSkipped = errors.New("not started: interrupted")

// execute applies act to the nodes named in args or selected by b. One
// node named on the command line behaves as python-ironicclient: silent
// on success, the API's error otherwise. Several nodes or a selector run
// as a batch: bounded concurrency, progress on stderr, a per-node result
// table, exit status 1 when any node failed.
func (a *app) execute(ctx context.Context, b *batchOpts, act action, args []string) error {
	waiting := false
	if b.wait != nil && b.wait.set {
		var s string
		s, args = b.wait.take(args, isSeconds)
		t, err := waitTimeout(s)
		if err != nil {
			return err
		}
		act.want.Timeout, waiting = t, true
	}
	if b.concurrency < 1 {
		return usageErrorf("--concurrency must be at least 1")
	}
	switch {
	case b.selecting() && len(args) > 0:
		return usageErrorf("name nodes or select them (--all, --provision-state, --maintenance, --resource-class), not both")
	case !b.selecting() && len(args) == 0:
		return usageErrorf("missing <node>: name one or more nodes, or select them with --all, --provision-state, --maintenance or --resource-class")
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	if !b.selecting() && len(args) == 1 && !b.dryRun {
		return a.single(ctx, c, act, args[0], waiting)
	}
	targets := make([]target, len(args))
	for i, n := range args {
		targets[i] = target{ident: n, show: n}
	}
	if b.selecting() {
		if targets, err = b.selected(ctx, c); err != nil {
			return err
		}
		if len(targets) == 0 {
			fmt.Fprintln(a.env.Stderr, "No node matches the selection.")
			return nil
		}
	}
	if b.dryRun {
		fmt.Fprintf(a.env.Stdout, "Would %s %s (dry run; nothing done):\n", act.name, nodeCount(len(targets)))
		for _, t := range targets {
			fmt.Fprintf(a.env.Stdout, "  %s\n", t.show)
		}
		return nil
	}
	if err := a.confirm(b, act, targets); err != nil {
		return err
	}
	results := a.runBatch(ctx, c, act, targets, b.concurrency, waiting)
	return a.report(b, act, targets, results)
}

func nodeCount(n int) string {
	if n == 1 {
		return "1 node"
	}
	return strconv.Itoa(n) + " nodes"
}

// confirm asks on a terminal before a destructive action on more than one
// node, unless --yes: anything but y or yes is a refusal. Without a
// terminal (scripts, pipes) it does not ask.
func (a *app) confirm(b *batchOpts, act action, targets []target) error {
	if !act.destructive || len(targets) < 2 || b.yes || !a.env.IsTerminal(a.env.Stderr) {
		return nil
	}
	names := make([]string, 0, 5)
	for _, t := range targets[:min(len(targets), 5)] {
		names = append(names, t.show)
	}
	more := ""
	if len(targets) > len(names) {
		more = fmt.Sprintf(" and %d more", len(targets)-len(names))
	}
	fmt.Fprintf(a.env.Stderr, "%s %s (%s%s)? [y/N] ", act.name, nodeCount(len(targets)), strings.Join(names, ", "), more)
	answer, _ := bufio.NewReader(a.env.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%s not confirmed: nothing done (--yes skips the question)", act.name)
}

// single runs act on one node, python-ironicclient style.
func (a *app) single(ctx context.Context, c *Client, act action, node string, waiting bool) error {
	if err := act.do(ctx, c, node); err != nil {
		return err
	}
	if !waiting {
		return nil
	}
	if act.want.Provision != "" {
		fmt.Fprintf(a.env.Stdout, "Waiting for provision state %s on node %s\n", act.want.Provision, node)
	} else {
		fmt.Fprintf(a.env.Stdout, "Waiting for power state %s on node %s\n", act.want.Power, node)
	}
	want := act.want
	want.Progress = func(_ int, msg string) { fmt.Fprintf(a.env.Stderr, "node %s: %s\n", node, msg) }
	return a.waiter(c).Wait(ctx, []string{node}, want)[0].Err
}

// selected lists the nodes matching the selectors.
func (b *batchOpts) selected(ctx context.Context, c *Client) ([]target, error) {
	q := url.Values{"fields": {"uuid,name"}}
	if b.state != "" {
		q.Set("provision_state", b.state)
	}
	if b.maintenance {
		q.Set("maintenance", "true")
	}
	if b.rc != "" {
		q.Set("resource_class", b.rc)
	}
	nodes, err := c.List(ctx, "/v1/nodes", "nodes", q, 0)
	if err != nil {
		return nil, err
	}
	out := make([]target, 0, len(nodes))
	for _, n := range nodes {
		uuid, _ := n["uuid"].(string)
		name, _ := n["name"].(string)
		out = append(out, target{ident: uuid, show: firstNonEmpty(name, uuid)})
	}
	return out, nil
}

// runBatch acts on every target with at most conc requests in flight,
// then (when waiting) waits for all accepted nodes at once. An interrupt
// stops new nodes from starting; started requests finish.
func (a *app) runBatch(ctx context.Context, c *Client, act action, targets []target, conc int, waiting bool) []nodeResult {
	prog := newProgress(a.env.Stderr, a.env.IsTerminal(a.env.Stderr), act.name, len(targets))
	results := make([]nodeResult, len(targets))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(conc, len(targets)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if ctx.Err() != nil {
					results[i].err = errSkipped
					prog.done(targets[i].show, errSkipped)
					continue
				}
				var retries int
				actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actionTimeout)
				err := act.do(withRetryCounter(actx, &retries), c, targets[i].ident)
				cancel()
				results[i] = nodeResult{started: true, accepted: err == nil, err: err, retries: retries}
				if err != nil || !waiting {
					prog.done(targets[i].show, err)
				}
			}
		}()
	}
	for i := range targets {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if waiting {
		a.waitBatch(ctx, c, act, targets, results, prog)
	}
	prog.finish()
	return results
}

// waitBatch waits for the accepted nodes of a batch.
func (a *app) waitBatch(ctx context.Context, c *Client, act action, targets []target, results []nodeResult, prog *progress) {
	var idx []int
	var idents []string
	for i, r := range results {
		if r.started && r.err == nil {
			idx = append(idx, i)
			idents = append(idents, targets[i].ident)
		}
	}
	if len(idx) == 0 {
		return
	}
	want := act.want
	want.Done = func(j int, o Outcome) { prog.done(targets[idx[j]].show, o.Err) }
	for j, o := range a.waiter(c).Wait(ctx, idents, want) {
		results[idx[j]].state, results[idx[j]].err = o.State, o.Err
	}
}

// report prints the per-node result table and sets the exit status.
func (a *app) report(b *batchOpts, act action, targets []target, results []nodeResult) error {
	l := listing{columns: []string{"Node", "Result", "State", "Retries", "Error"}}
	failed := 0
	for i, r := range results {
		res, msg := "ok", ""
		switch {
		case errors.Is(r.err, errSkipped):
			res, msg = "skipped", "not started: interrupted"
			failed++
		case r.accepted && errors.Is(r.err, context.Canceled):
			// Accepted, then the wait was interrupted: the conductor
			// carries on with the node. A request that failed in the
			// HTTP client with context canceled was not accepted: it
			// fails below.
			res, msg = "interrupted", "accepted; the wait was interrupted"
			failed++
		case r.err != nil:
			res, msg = "failed", errorLine(r.err)
			failed++
		}
		l.rows = append(l.rows, []any{targets[i].show, res, r.state, json.Number(strconv.Itoa(r.retries)), msg})
	}
	if err := b.out.writeList(a.env.Stdout, l); err != nil {
		return err
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s failed on %d of %d nodes", act.name, failed, len(targets))}
	}
	return nil
}

// progress shows how far a batch is: a redrawn bar on a terminal, one
// line per finished node otherwise.
type progress struct {
	mu           sync.Mutex
	w            interface{ Write([]byte) (int, error) }
	tty          bool
	name         string
	total        int
	ok, failed   int
	lastDrawn    time.Time
	drawInterval time.Duration
}

func newProgress(w interface{ Write([]byte) (int, error) }, tty bool, name string, total int) *progress {
	return &progress{w: w, tty: tty, name: name, total: total, drawInterval: 50 * time.Millisecond}
}

func (p *progress) done(node string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
	} else {
		p.ok++
	}
	if !p.tty {
		if err != nil {
			fmt.Fprintf(p.w, "%s %s: failed: %s\n", p.name, node, errorLine(err))
		} else {
			fmt.Fprintf(p.w, "%s %s: ok\n", p.name, node)
		}
		return
	}
	if now := time.Now(); now.Sub(p.lastDrawn) >= p.drawInterval || p.ok+p.failed == p.total {
		p.lastDrawn = now
		p.draw()
	}
}

func (p *progress) draw() {
	const width = 30
	n := p.ok + p.failed
	filled := 0
	if p.total > 0 {
		filled = n * width / p.total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	fmt.Fprintf(p.w, "\r%s [%s] %d/%d  ok %d  failed %d ", p.name, bar, n, p.total, p.ok, p.failed)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.draw()
		fmt.Fprintln(p.w)
	}
}
