package console

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
)

// Opener connects to a node's serial console: reading gives the console's
// output, writing types into it, closing ends the BMC session.
type Opener = func(ctx context.Context) (io.ReadWriteCloser, error)

// Errors of Attach and Viewer.Write (match with errors.Is).
var (
	ErrNotHeld  = errors.New("the node's console is not connected on this conductor")
	ErrReadOnly = errors.New("this console viewer is read-only: another viewer holds the keyboard")
	ErrOffline  = errors.New("the console is reconnecting to the BMC")
)

// Config tunes a Service. Zero values take the defaults.
type Config struct {
	PerNode     int           // bytes of output kept per node (1 MiB)
	Total       int           // bytes kept for all nodes together (64 MiB)
	ViewerQueue int           // output chunks queued per viewer before it is cut off (1024)
	RetryMin    time.Duration // first wait before reopening a broken console (1 s)
	RetryMax    time.Duration // longest wait between reopenings (30 s)
	Log         *slog.Logger
}

// Service holds nodes' consoles, their logs and viewers. It is safe for
// concurrent use.
type Service struct {
	cfg Config

	mu     sync.Mutex // guards the fields below; taken after a session's mu
	logs   map[string]*nodeLog
	held   map[string]*session
	total  int
	clock  uint64
	closed bool
}

type nodeLog struct {
	ring      ringBuf
	lastWrite uint64
}

// New returns a service with cfg's settings.
func New(cfg Config) *Service {
	if cfg.PerNode <= 0 {
		cfg.PerNode = 1 << 20
	}
	if cfg.Total <= 0 {
		cfg.Total = 64 << 20
	}
	cfg.Total = max(cfg.Total, cfg.PerNode)
	if cfg.ViewerQueue <= 0 {
		cfg.ViewerQueue = 1024
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = time.Second
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(30*time.Second, cfg.RetryMin)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, logs: map[string]*nodeLog{}, held: map[string]*session{}}
}

// Hold connects to node's console with open, unless it is held already,
// and records its output until Stop; why is logged. It reports whether it
// started a session.
func (s *Service) Hold(node, why string, open Opener) bool {
	return s.HoldListen(node, why, open, "")
}

// HoldListen is Hold that also serves the console on the TCP address
// listen (when not ""): each connection is a viewer, its bytes typed into
// the console when it holds the keyboard. A listen address that cannot be
// bound is logged and the console held without it.
func (s *Service) HoldListen(node, why string, open Opener, listen string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	started := false
	ss := s.held[node]
	if ss == nil {
		ctx, cancel := context.WithCancel(context.Background())
		ss = &session{s: s, node: node, cancel: cancel, done: make(chan struct{})}
		s.held[node] = ss
		s.cfg.Log.Info("console held", "node", node, "why", why)
		go ss.run(ctx, open)
		started = true
	}
	if listen != "" {
		ss.mu.Lock()
		if ss.ln == nil && ss.ended == "" {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				s.cfg.Log.Warn("console TCP port unavailable", "node", node, "listen", listen, "err", err)
			} else {
				ss.ln = ln
				go ss.serveTCP(ln)
			}
		}
		ss.mu.Unlock()
	}
	return started
}

// EndViewers ends node's viewers with reason and closes its TCP console,
// keeping the BMC session and the recording (the console was disabled
// while the node's state is still recorded).
func (s *Service) EndViewers(node, reason string) {
	s.mu.Lock()
	ss := s.held[node]
	s.mu.Unlock()
	if ss == nil {
		return
	}
	ss.mu.Lock()
	vs, ln := ss.viewers, ss.ln
	ss.viewers, ss.ln = nil, nil
	ss.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, v := range vs {
		v.end(reason)
	}
}

// Stop ends node's console session, if held: its viewers end with reason
// and the BMC session is closed. The log stays.
func (s *Service) Stop(node, reason string) {
	s.mu.Lock()
	ss := s.held[node]
	delete(s.held, node)
	s.mu.Unlock()
	if ss == nil {
		return
	}
	s.cfg.Log.Info("console released", "node", node, "reason", reason)
	ss.stop(reason)
}

// Wait blocks until node's last stopped session has closed its BMC
// session, or ctx ends (tests and shutdown).
func (s *Service) wait(ctx context.Context, ss *session) error {
	select {
	case <-ss.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops every session and waits for them (until ctx ends).
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.held))
	for _, ss := range s.held {
		all = append(all, ss)
	}
	clear(s.held)
	s.mu.Unlock()
	var err error
	for _, ss := range all {
		ss.stop("the conductor is shutting down")
		err = errors.Join(err, s.wait(ctx, ss))
	}
	return err
}

// Held reports whether node's console is held, and the nodes held.
func (s *Service) Held(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[node] != nil
}

// HeldNodes lists the nodes whose consoles are held.
func (s *Service) HeldNodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.held))
	for n := range s.held {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Log returns the last n bytes of node's console output (all kept when
// n <= 0), and whether there is a log.
func (s *Service) Log(node string, n int) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[node]
	if l == nil {
		return nil, false
	}
	return l.ring.tail(n), true
}

// LogBytes is the size of all logs together.
func (s *Service) LogBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// record appends p to node's log and keeps the global bound by dropping
// the least recently written logs of nodes not held (then of any other
// node). Called with s.mu held.
func (s *Service) record(node string, p []byte) {
	l := s.logs[node]
	if l == nil {
		l = &nodeLog{ring: ringBuf{cap: s.cfg.PerNode}}
		s.logs[node] = l
	}
	before := l.ring.size()
	l.ring.write(p)
	s.clock++
	l.lastWrite = s.clock
	s.total += l.ring.size() - before
	for s.total > s.cfg.Total {
		victim := ""
		var oldest uint64
		heldToo := false
		for id, o := range s.logs {
			if id == node {
				continue
			}
			_, h := s.held[id]
			if victim == "" || (heldToo && !h) || (heldToo == h && o.lastWrite < oldest) {
				victim, oldest, heldToo = id, o.lastWrite, h
			}
		}
		if victim == "" {
			return // only this node's log, at most PerNode <= Total
		}
		s.total -= s.logs[victim].ring.size()
		delete(s.logs, victim)
	}
}

// Attach adds a viewer to node's held console: read-write if it is the
// only one, read-only otherwise. replay > 0 queues that many of the last
// bytes of output first (what was on the screen).
func (s *Service) Attach(node string, replay int) (*Viewer, error) {
	s.mu.Lock()
	ss := s.held[node]
	s.mu.Unlock()
	if ss == nil {
		return nil, ErrNotHeld
	}
	v := &Viewer{ss: ss, out: make(chan []byte, s.cfg.ViewerQueue), done: make(chan struct{}), promoted: make(chan struct{}, 1)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ended != "" {
		return nil, ErrNotHeld
	}
	if replay > 0 {
		s.mu.Lock()
		var tail []byte
		if l := s.logs[node]; l != nil {
			tail = l.ring.tail(replay)
		}
		s.mu.Unlock()
		if len(tail) > 0 {
			v.out <- tail
		}
	}
	v.writer.Store(len(ss.viewers) == 0)
	ss.viewers = append(ss.viewers, v)
	return v, nil
}

// session is one held console.
type session struct {
	s      *Service
	node   string
	cancel context.CancelFunc
	done   chan struct{} // closed when run has closed the source

	wmu sync.Mutex // serialises writes to the source

	mu      sync.Mutex // guards the fields below; taken before s.mu
	src     io.ReadWriteCloser
	ln      net.Listener // the raw TCP console, if any
	viewers []*Viewer    // in attach order; the writer is among them
	ended   string       // why the session ended, once it has
}

func (ss *session) stop(reason string) {
	ss.cancel()
	ss.mu.Lock()
	ss.ended = reason
	src, ln := ss.src, ss.ln
	vs := ss.viewers
	ss.viewers, ss.ln = nil, nil
	ss.mu.Unlock()
	if src != nil {
		_ = src.Close() // unblocks the reader
	}
	if ln != nil {
		_ = ln.Close()
	}
	for _, v := range vs {
		v.end(reason)
	}
}

func (ss *session) run(ctx context.Context, open Opener) {
	defer close(ss.done)
	log := ss.s.cfg.Log.With("node", ss.node)
	backoff := ss.s.cfg.RetryMin
	buf := make([]byte, 4096)
	for ctx.Err() == nil {
		src, err := open(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("console connection failed, retrying", "err", err, "in", backoff)
			if clock.Sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, ss.s.cfg.RetryMax)
			continue
		}
		ss.mu.Lock()
		if ss.ended != "" {
			ss.mu.Unlock()
			_ = src.Close()
			return
		}
		ss.src = src
		ss.mu.Unlock()
		backoff = ss.s.cfg.RetryMin
		for {
			n, err := src.Read(buf)
			if n > 0 {
				ss.output(buf[:n])
			}
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("console connection lost, reconnecting", "err", err)
				}
				break
			}
		}
		ss.mu.Lock()
		ss.src = nil
		ss.mu.Unlock()
		_ = src.Close()
		if clock.Sleep(ctx, backoff) != nil {
			return
		}
	}
}

// output records p and queues one copy of it for every viewer, cutting off
// those whose queue is full.
func (ss *session) output(p []byte) {
	chunk := append([]byte(nil), p...)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.s.mu.Lock()
	ss.s.record(ss.node, chunk)
	ss.s.mu.Unlock()
	kept := ss.viewers[:0]
	var slow []*Viewer
	for _, v := range ss.viewers {
		select {
		case v.out <- chunk:
			kept = append(kept, v)
		default:
			slow = append(slow, v)
		}
	}
	clear(ss.viewers[len(kept):])
	ss.viewers = kept
	for _, v := range slow {
		v.end("the viewer did not keep up with the console output")
	}
	ss.promoteLocked()
}

// promoteLocked gives the keyboard to the longest attached viewer when
// none has it. Called with ss.mu held.
func (ss *session) promoteLocked() {
	if len(ss.viewers) == 0 {
		return
	}
	for _, v := range ss.viewers {
		if v.writer.Load() {
			return
		}
	}
	v := ss.viewers[0]
	v.writer.Store(true)
	select {
	case v.promoted <- struct{}{}:
	default:
	}
}

func (ss *session) detach(v *Viewer) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i, o := range ss.viewers {
		if o == v {
			ss.viewers = append(ss.viewers[:i], ss.viewers[i+1:]...)
			break
		}
	}
	v.writer.Store(false)
	ss.promoteLocked()
}

func (ss *session) write(v *Viewer, p []byte) (int, error) {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	ss.mu.Lock()
	src, ended := ss.src, ss.ended
	ss.mu.Unlock()
	switch {
	case ended != "":
		return 0, ErrNotHeld
	case !v.writer.Load():
		return 0, ErrReadOnly
	case src == nil:
		return 0, ErrOffline
	}
	return src.Write(p)
}

// Viewer is one client attached to a console.
type Viewer struct {
	ss       *session
	out      chan []byte
	done     chan struct{}
	promoted chan struct{} // a token when the viewer is given the keyboard
	once     sync.Once
	reason   atomic.Pointer[string]
	writer   atomic.Bool
}

// Output delivers the console's output; read it until Done.
func (v *Viewer) Output() <-chan []byte { return v.out }

// Done is closed when the viewer has ended (Reason says why).
func (v *Viewer) Done() <-chan struct{} { return v.done }

// Reason is why the viewer ended ("" while it runs or after Close).
func (v *Viewer) Reason() string {
	if r := v.reason.Load(); r != nil {
		return *r
	}
	return ""
}

// Promoted receives when the viewer is given the keyboard (another viewer
// left): tell the client it may type now.
func (v *Viewer) Promoted() <-chan struct{} { return v.promoted }

// ReadWrite reports whether the viewer holds the keyboard now.
func (v *Viewer) ReadWrite() bool { return v.writer.Load() }

// Write types p into the console: ErrReadOnly unless the viewer holds the
// keyboard.
func (v *Viewer) Write(p []byte) (int, error) {
	select {
	case <-v.done:
		return 0, ErrNotHeld
	default:
	}
	return v.ss.write(v, p)
}

// Close detaches the viewer; the keyboard passes to the next one.
func (v *Viewer) Close() {
	v.ss.detach(v)
	v.end("")
}

func (v *Viewer) end(reason string) {
	v.once.Do(func() {
		v.writer.Store(false)
		v.reason.Store(&reason)
		close(v.done)
	})
}

// serveTCP serves the raw console on ln until it is closed.
func (ss *session) serveTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		v, err := ss.s.Attach(ss.node, 0)
		if err != nil {
			_ = c.Close()
			return
		}
		go Pipe(v, c)
	}
}

// Pipe joins v and a raw byte stream c until either ends: output to c,
// c's bytes typed into the console (dropped while v is read-only).
func Pipe(v *Viewer, c io.ReadWriteCloser) {
	defer c.Close()
	defer v.Close()
	go func() {
		buf := make([]byte, 1024)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				_, _ = v.Write(buf[:n])
			}
			if err != nil {
				v.Close()
				return
			}
		}
	}()
	for {
		select {
		case p := <-v.Output():
			if _, err := c.Write(p); err != nil {
				return
			}
		case <-v.Done():
			return
		}
	}
}
