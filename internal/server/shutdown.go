package server

import (
	"context"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/store"
)

// shutdownReport is how often a shutdown says what it still waits for.
const shutdownReport = 5 * time.Second

// shutdownNodes is how many of the nodes being worked on a message names.
const shutdownNodes = 10

// watchShutdown says what the shutdown waits for (the conductor's running
// work, by node), says it again every shutdownReport while it waits, and
// cancels the grace (cancel) when cfg.Hurry is closed. It returns the
// function that stops it.
func watchShutdown(ctx context.Context, cancel context.CancelFunc, cfg Config, cond *conductor.Conductor, st store.Store) func() {
	say := func(msg string) {
		busy, _ := cond.Workers()
		args := []any{"running_work", busy}
		if nodes := lockedNodes(st, cfg.HostID); nodes != "" {
			args = append(args, "nodes", nodes)
		}
		if deadline, ok := ctx.Deadline(); ok {
			args = append(args, "grace_left", time.Until(deadline).Round(time.Second).String())
		}
		cfg.Log.Info(msg, args...)
	}
	say("shutting down: no new requests; waiting for running work to finish (interrupt again to stop now)")
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(shutdownReport)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-cfg.Hurry:
				cfg.Log.Warn("interrupted again: stopping now; running work is interrupted and recorded on its nodes")
				cancel()
				return
			case <-tick.C:
				say("still shutting down")
			}
		}
	}()
	return func() { close(done) }
}

// lockedNodes names the nodes host holds locks on (the work under way),
// at most shutdownNodes of them.
func lockedNodes(st store.Store, host string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	nodes, err := st.Nodes().ListNodes(ctx, store.NodeQuery{ReservedBy: host, Limit: shutdownNodes + 1})
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(nodes))
	for i, n := range nodes {
		if i == shutdownNodes {
			names = append(names, "...")
			break
		}
		names = append(names, firstNonEmpty(n.Name, n.UUID))
	}
	return strings.Join(names, ", ")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
