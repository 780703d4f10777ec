package console

import (
	"context"
	"log/slog"
	"time"
)

// Decision is whether this process should hold a node's console.
type Decision struct {
	Hold bool
	// Attachable: viewers may attach (the console is enabled); a console
	// held only to be recorded ends its viewers.
	Attachable bool
	Open       Opener // when Hold
	Reason     string // why it is held, or why not
	// Listen, if set, is a TCP address where the console is also served
	// raw, one viewer per connection (Ironic's socat console).
	Listen string
}

// Resolver decides which consoles this process holds: the conductor
// answers it from the node, the node's console interface and the hash
// ring.
type Resolver interface {
	// ConsoleDecision decides for one node (a node that does not exist is
	// not held).
	ConsoleDecision(ctx context.Context, node string) (Decision, error)
	// ConsoleCandidates lists the nodes that may need to be held now
	// (console enabled or in a state whose output is recorded), for the
	// periodic sweep.
	ConsoleCandidates(ctx context.Context) ([]string, error)
}

// Controller keeps a Service's held consoles in line with a Resolver: at
// once for the nodes it is told changed (Kick, e.g. from the event
// broker), and in a periodic sweep for the rest (other processes' writes,
// ring changes).
type Controller struct {
	svc      *Service
	r        Resolver
	interval time.Duration
	log      *slog.Logger
	kicks    chan string
	overflow chan struct{}
}

// NewController returns a controller sweeping every interval (10 s when 0).
func NewController(svc *Service, r Resolver, interval time.Duration, log *slog.Logger) *Controller {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Controller{svc: svc, r: r, interval: interval, log: log,
		kicks: make(chan string, 4096), overflow: make(chan struct{}, 1)}
}

// Kick asks for node's console to be decided again soon. It never blocks:
// when too many are queued, the next sweep comes at once instead.
func (c *Controller) Kick(node string) {
	select {
	case c.kicks <- node:
	default:
		select {
		case c.overflow <- struct{}{}:
		default:
		}
	}
}

// Run decides until ctx ends, then stops every held console.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	c.Sweep(ctx)
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = c.svc.Close(cctx)
			cancel()
			return
		case n := <-c.kicks:
			c.Decide(ctx, n)
		case <-c.overflow:
			c.Sweep(ctx)
		case <-t.C:
			c.Sweep(ctx)
		}
	}
}

// Decide applies the resolver's decision for node.
func (c *Controller) Decide(ctx context.Context, node string) {
	d, err := c.r.ConsoleDecision(ctx, node)
	if err != nil {
		c.log.Warn("console decision failed", "node", node, "err", err)
		return
	}
	if d.Hold && d.Open != nil {
		c.svc.HoldListen(node, d.Reason, d.Open, d.Listen)
		if !d.Attachable {
			c.svc.EndViewers(node, "the console was disabled")
		}
		return
	}
	c.svc.Stop(node, d.Reason)
}

// Sweep decides for every held console and every candidate.
func (c *Controller) Sweep(ctx context.Context) {
	seen := map[string]bool{}
	cands, err := c.r.ConsoleCandidates(ctx)
	if err != nil {
		c.log.Warn("console sweep failed", "err", err)
	}
	for _, n := range append(c.svc.HeldNodes(), cands...) {
		if seen[n] || ctx.Err() != nil {
			continue
		}
		seen[n] = true
		c.Decide(ctx, n)
	}
}
