package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/pkg/events"
)

// The watch stream (an Anvil extension, not part of Ironic's API): GET
// /v1/events/stream answers server-sent events of node changes published on
// the store's broker (Store.Broker). It takes no microversion gate; the
// standard headers are set as on every response.

// streamWriteTimeout bounds one write to a stream: a reader that stops
// reading for this long is disconnected instead of holding a goroutine.
const streamWriteTimeout = 30 * time.Second

// What one stream holds: it takes at most streamBatch events at a time
// from its subscription (a resume's backlog stays in the broker's ring
// until taken) and writes whenever streamFlushBytes are encoded, so a
// reader that does not read holds a bounded buffer, not its backlog.
const (
	streamBatch      = 64
	streamFlushBytes = 16 << 10
)

// Defaults of Config.MaxStreamsPerClient and Config.MaxStreams.
const (
	DefaultMaxStreamsPerClient = 32
	DefaultMaxStreams          = 512
)

func (s *Server) eventRoutes() {
	s.handle(endpoint{"GET": {s.streamEvents, nodeList}}, events.StreamPath)
}

// GET /v1/events/stream?node=&fields=&types=&snapshot=&project= (Last-Event-ID header)
func (s *Server) streamEvents(rc *call) error {
	b := s.cfg.Nodes.Broker()
	if err := rc.checkQuery(events.ParamNode, events.ParamFields, events.ParamTypes,
		events.ParamSnapshot, events.ParamLastEventID, events.ParamProject); err != nil {
		return err
	}
	f, err := events.ParseFilter(rc.query)
	if err != nil {
		return invalid("%s", err.Error())
	}
	after, resume, err := rc.lastEventID()
	if err != nil {
		return err
	}
	if f.Nodes, err = rc.streamNodes(f.Nodes, f.Project, resume); err != nil {
		return err
	}
	client := streamClient(rc.r)
	switch s.streams.open(client, s.cfg.MaxStreamsPerClient, s.cfg.MaxStreams) {
	case streamClientFull:
		rc.w.Header().Set("Retry-After", "1")
		WriteError(rc.w, http.StatusTooManyRequests, fmt.Sprintf(
			"Too many open event streams for this client (at most %d); close one and retry.", s.cfg.MaxStreamsPerClient))
		return nil
	case streamServerFull:
		rc.w.Header().Set("Retry-After", "5")
		WriteError(rc.w, http.StatusServiceUnavailable, fmt.Sprintf(
			"Too many open event streams on this server (at most %d); retry later.", s.cfg.MaxStreams))
		return nil
	}
	defer s.streams.close(client)
	var sub *eventbus.Subscription
	reset := false
	if resume {
		// The ID may come from another process that is ahead of this one.
		if err := b.Sync(rc.ctx); err != nil {
			s.log.Warn("event stream: catching up with the shared log", "request_id", rc.reqID, "err", err)
		}
		var ok bool
		sub, ok = b.Resume(f, after)
		reset = !ok
	} else {
		sub = b.Subscribe(f)
	}
	defer sub.Close()
	h := rc.w.Header()
	h.Set("Content-Type", events.ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	rc.w.WriteHeader(http.StatusOK)
	if rc.r.Method == http.MethodHead {
		return nil
	}
	st := &sseStream{rc: rc, ctl: http.NewResponseController(rc.w)}
	defer func() { _ = st.ctl.SetWriteDeadline(time.Time{}) }()
	st.buf = append(st.buf, "retry: 1000\n"...)
	switch {
	case reset:
		st.buf = events.AppendSSE(st.buf, &events.Event{ID: sub.Start(), Type: events.TypeReset, Time: s.cfg.Now().UTC()})
	case !resume:
		st.buf = events.AppendHeartbeat(st.buf, sub.Start()) // the reader's first position
	}
	if f.Snapshot && (!resume || reset) {
		if err := st.snapshot(f.Nodes, f.Project, sub.Start()); err != nil {
			s.log.Error("event stream snapshot failed", "request_id", rc.reqID, "err", err)
			return nil // the response has started: just end it
		}
	}
	if !st.flush() {
		return nil
	}
	st.follow(sub, b.Heartbeat())
	return nil
}

// lastEventID reads the resume point: the Last-Event-ID header or the
// last_event_id parameter. ok is false when there is none.
func (rc *call) lastEventID() (id uint64, ok bool, err error) {
	raw := strings.TrimSpace(rc.r.Header.Get("Last-Event-ID"))
	if raw == "" {
		raw, _ = rc.param(events.ParamLastEventID)
	}
	if raw == "" {
		return 0, false, nil
	}
	id, perr := strconv.ParseUint(raw, 10, 64)
	if perr != nil {
		return 0, false, invalid("Invalid Last-Event-ID %q: expected an event id", raw)
	}
	return id, true, nil
}

// streamNodes checks the node identifiers of a filter and adds the UUID
// and name of each node that exists, so that a node followed by name is
// still followed after a rename. A new stream naming an unknown node (or,
// with a project, a node neither owned nor leased by it) is answered 404,
// as GET /v1/nodes/{node} is; a resumed one keeps unknown identifiers (the
// node may have been deleted, and its deletion is among the events to
// deliver).
func (rc *call) streamNodes(idents []string, project string, resume bool) ([]string, error) {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, raw := range idents {
		ident := raw
		switch {
		case isUUIDLike(raw):
			ident = canonicalUUID(raw)
		case !isValidLogicalName(raw):
			return nil, invalid("Expected UUID or name for node: %s", raw)
		}
		add(ident)
		n, err := rc.projectNode(ident, project)
		switch {
		case errors.Is(err, store.ErrNotFound) && !resume:
			return nil, fault.NodeNotFound(raw)
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			add(n.UUID)
			add(n.Name)
		}
	}
	return out, nil
}

// sseStream writes one stream.
type sseStream struct {
	rc  *call
	ctl *http.ResponseController
	buf []byte
}

// flush writes the buffer and flushes it; false means the reader is gone.
func (st *sseStream) flush() bool {
	if len(st.buf) == 0 {
		return true
	}
	_ = st.ctl.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err := st.rc.w.Write(st.buf)
	st.buf = st.buf[:0]
	if err == nil {
		err = st.ctl.Flush()
	}
	return err == nil
}

// projectNode reads a node as project sees it (when set): one it neither
// owns nor leases is store.ErrNotFound.
func (rc *call) projectNode(ident, project string) (*model.Node, error) {
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, ident)
	if err == nil && project != "" && n.Owner != project && n.Lessee != project {
		return nil, store.ErrNotFound
	}
	return n, err
}

// snapshot queues a node.snapshot event per followed node (every node, of
// project when set, if the filter names none), read after the
// subscription began.
func (st *sseStream) snapshot(idents []string, project string, pos uint64) error {
	rc := st.rc
	var nodes []*model.Node
	if len(idents) == 0 {
		all, err := rc.s.cfg.Nodes.Nodes().ListNodes(rc.ctx, store.NodeQuery{Project: project})
		if err != nil {
			return err
		}
		nodes = all
	}
	seen := map[string]bool{}
	for _, ident := range idents {
		n, err := rc.projectNode(ident, project)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !seen[n.UUID] {
			seen[n.UUID] = true
			nodes = append(nodes, n)
		}
	}
	now := rc.s.cfg.Now().UTC()
	for _, n := range nodes {
		state := eventbus.StateOf(n)
		st.append(&events.Event{ID: pos, Type: events.TypeSnapshot,
			Time: now, Node: n.UUID, Name: n.Name, State: &state})
		if len(st.buf) >= streamFlushBytes && !st.flush() {
			return nil
		}
	}
	return nil
}

// follow writes the subscription's events as they come, and a heartbeat
// carrying the reader's position every interval, until the reader leaves or
// the subscription ends (after its final overflow event, if any).
func (st *sseStream) follow(sub *eventbus.Subscription, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var batch []events.Event
	heartbeat := false
	for {
		var (
			pos uint64
			err error
		)
		batch, pos, err = sub.TakeUpTo(batch[:0], streamBatch)
		for i := range batch {
			st.append(&batch[i])
			if len(st.buf) >= streamFlushBytes && !st.flush() {
				return
			}
		}
		clear(batch)
		if heartbeat {
			st.buf = events.AppendHeartbeat(st.buf, pos)
			heartbeat = false
		}
		if !st.flush() || err != nil {
			return
		}
		select {
		case <-sub.Ready():
		case <-tick.C:
			heartbeat = true
		case <-st.rc.ctx.Done():
			return
		}
	}
}

// append queues e, with the node fields the reader may not see (the
// request's Redactor) replaced as a node rendering replaces them.
func (st *sseStream) append(e *events.Event) {
	if red := st.rc.redact; red != nil && (e.State != nil || e.Previous != nil) {
		e = redactEvent(e, red)
	}
	st.buf = events.AppendSSE(st.buf, e)
}

// redactEvent returns e, or a copy with last_error and reservation
// replaced where red hides them (the other fields an event carries are
// visible to every reader of the node).
func redactEvent(e *events.Event, red Redactor) *events.Event {
	var out *events.Event
	for i, s := range []*events.NodeState{e.State, e.Previous} {
		if s == nil {
			continue
		}
		n := &model.Node{Owner: s.Owner, Lessee: s.Lessee}
		c := *s
		changed := false
		for _, f := range []struct {
			name string
			val  *string
		}{{events.FieldLastError, &c.LastError}, {events.FieldReservation, &c.Reservation}} {
			if *f.val == "" {
				continue
			}
			if shown, hidden := red(n, f.name); hidden {
				*f.val, _ = shown.(string)
				changed = true
			}
		}
		if !changed {
			continue
		}
		if out == nil {
			cp := *e
			out = &cp
		}
		if i == 0 {
			out.State = &c
		} else {
			out.Previous = &c
		}
	}
	if out == nil {
		return e
	}
	out.Encode()
	return out
}

// streamClient is whom a stream counts against: its principal, or under
// noauth its client address.
func streamClient(r *http.Request) string {
	if p, ok := auth.PrincipalOf(r.Context()); ok {
		return "user\x00" + p.User
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr\x00" + host
}

// streamCounts counts the open streams, in all and of each client. The
// zero value is ready.
type streamCounts struct {
	mu    sync.Mutex
	total int
	n     map[string]int
}

// Answers of streamCounts.open.
const (
	streamOpened = iota
	streamClientFull
	streamServerFull
)

// open counts a stream of client unless it has perClient open already or
// the server total ones.
func (c *streamCounts) open(client string, perClient, total int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.n[client] >= perClient:
		return streamClientFull
	case c.total >= total:
		return streamServerFull
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[client]++
	c.total++
	return streamOpened
}

func (c *streamCounts) close(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.n[client]--; c.n[client] <= 0 {
		delete(c.n, client)
	}
}
