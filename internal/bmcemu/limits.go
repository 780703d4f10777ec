package bmcemu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// A BMC in the emulator is a Redfish endpoint: the shared HTTP server (every
// machine's system behind one service, as sushy-tools serves them) or, with
// Config.BMCPorts, one loopback port per machine. Each endpoint keeps its
// own sessions, rate bucket and counters, so the limits real BMCs put on a
// client (iDRAC's "RAC0218" session exhaustion, 503 under load, idle session
// expiry) hold per BMC.

// endpoint is one BMC's sessions, rate bucket and counters.
type endpoint struct {
	m *Machine // the machine whose BMC this is; nil for the shared endpoint

	mu       sync.Mutex
	sessions map[string]*session // by token
	nextID   int
	stats    SessionStats
	tokens   float64   // rate bucket (Knobs.RateLimit)
	filled   time.Time // when tokens was last topped up
}

type session struct {
	id   string
	c    creds
	used time.Time // last call made with it (Knobs.SessionTimeout)
}

// SessionStats are a BMC's counters: Redfish sessions opened, open now and
// the most open at any one time, logins refused for too many sessions, and
// calls answered 503 by the rate limit or as injected transient failures.
type SessionStats struct {
	Opened       int64 `json:"sessions_opened"`
	Open         int   `json:"sessions_open"`
	MaxOpen      int   `json:"max_sessions_open"`
	Refused      int64 `json:"sessions_refused"`
	Expired      int64 `json:"sessions_expired"`
	RateLimited  int64 `json:"rate_limited"`
	Transient503 int64 `json:"transient_failures"`
}

func newEndpoint(m *Machine) *endpoint { return &endpoint{m: m, sessions: map[string]*session{}} }

// Stats returns the endpoint's counters.
func (p *endpoint) Stats() SessionStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Open = len(p.sessions)
	return p.stats
}

// expire drops sessions idle longer than timeout; p.mu is held.
func (p *endpoint) expire(now time.Time, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	for tok, s := range p.sessions {
		if now.Sub(s.used) > timeout {
			delete(p.sessions, tok)
			p.stats.Expired++
		}
	}
}

// get returns the credentials of session tok, marking it used.
func (p *endpoint) get(tok string, k Knobs) (creds, bool) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire(now, k.SessionTimeout)
	s, ok := p.sessions[tok]
	if !ok {
		return creds{}, false
	}
	s.used = now
	return s.c, true
}

// errTooManySessions is a login refused because the BMC holds MaxSessions.
var errTooManySessions = errors.New("RAC0218: The maximum number of user sessions is reached.")

// add opens a session unless the BMC already holds k.MaxSessions.
func (p *endpoint) add(c creds, k Knobs) (id, tok string, err error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok = hex.EncodeToString(b[:])
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire(now, k.SessionTimeout)
	if k.MaxSessions > 0 && len(p.sessions) >= k.MaxSessions {
		p.stats.Refused++
		return "", "", errTooManySessions
	}
	p.nextID++
	id = strconv.Itoa(p.nextID)
	p.sessions[tok] = &session{id: id, c: c, used: now}
	p.stats.Opened++
	p.stats.MaxOpen = max(p.stats.MaxOpen, len(p.sessions))
	return id, tok, nil
}

// remove closes session id.
func (p *endpoint) remove(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for tok, s := range p.sessions {
		if s.id == id {
			delete(p.sessions, tok)
			return true
		}
	}
	return false
}

// list returns the ids of the open sessions.
func (p *endpoint) list(k Knobs) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire(time.Now(), k.SessionTimeout)
	ids := make([]string, 0, len(p.sessions))
	for _, s := range p.sessions {
		ids = append(ids, s.id)
	}
	return ids
}

// admit takes a token from the rate bucket (k.RateLimit calls a second,
// bursts of up to max(1, RateLimit)); when none is left it returns how long
// until one is.
func (p *endpoint) admit(k Knobs) (ok bool, wait time.Duration) {
	if k.RateLimit <= 0 {
		return true, 0
	}
	burst := math.Max(1, k.RateLimit)
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.filled.IsZero() {
		p.tokens = burst
	} else {
		p.tokens = math.Min(burst, p.tokens+now.Sub(p.filled).Seconds()*k.RateLimit)
	}
	p.filled = now
	if p.tokens >= 1 {
		p.tokens--
		return true, 0
	}
	p.stats.RateLimited++
	return false, time.Duration((1 - p.tokens) / k.RateLimit * float64(time.Second))
}

func (p *endpoint) countTransient() {
	p.mu.Lock()
	p.stats.Transient503++
	p.mu.Unlock()
}

// latency draws one call's latency: Latency plus a uniform share of
// LatencyJitter.
func (e *Emulator) latency(k Knobs) time.Duration {
	if k.LatencyJitter <= 0 {
		return k.Latency
	}
	e.randMu.Lock()
	defer e.randMu.Unlock()
	return k.Latency + time.Duration(e.rnd.Int64N(int64(k.LatencyJitter)))
}

// unavailable answers 503 with Retry-After (whole seconds, at least 1).
func unavailable(w http.ResponseWriter, after time.Duration) {
	secs := int(math.Ceil(after.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	rfError(w, http.StatusServiceUnavailable, "Base.1.8.ServiceTemporarilyUnavailable",
		fmt.Sprintf("The service is temporarily unavailable. Retry in %d seconds.", secs))
}

// tooManySessions answers a refused login as iDRAC does.
func tooManySessions(w http.ResponseWriter) {
	rfError(w, http.StatusBadRequest, "IDRAC.2.8.RAC0218", errTooManySessions.Error())
}

// portMachineKey marks requests that came in on a machine's own BMC port.
type portMachineKey struct{}

// portMachine is the machine whose own port r came in on, or nil.
func portMachine(r *http.Request) *Machine {
	m, _ := r.Context().Value(portMachineKey{}).(*Machine)
	return m
}

// endpointFor is the BMC that r reached.
func (h redfishAPI) endpointFor(r *http.Request) *endpoint {
	e := h.e
	if m := portMachine(r); m != nil {
		return m.bmc
	}
	return e.shared
}

// bmcPorts are the machines' own Redfish ports (Config.BMCPorts).
type bmcPorts struct{ e *Emulator }

// startBMCPorts gives every machine a Redfish listener of its own on the
// shared listener's host, on consecutive ports from Config.BMCBasePort (0:
// a free port each); all are served by one http.Server.
func (p bmcPorts) startBMCPorts(ctx context.Context) error {
	e := p.e
	host, _, err := net.SplitHostPort(e.ln.Addr().String())
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	for i, m := range e.machines {
		port := 0
		if e.cfg.BMCBasePort > 0 {
			port = e.cfg.BMCBasePort + i
		}
		ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			p.closeBMCPorts()
			return fmt.Errorf("bmc emulator: redfish port of %s: %w", m.ID, err)
		}
		m.bmcLn = ln
	}
	return nil
}

// serveBMCPorts serves every machine's own listener until srv shuts down.
func (p bmcPorts) serveBMCPorts(srv *http.Server) {
	e := p.e
	for _, m := range e.machines {
		if m.bmcLn == nil {
			continue
		}
		e.bmcServing.Add(1)
		go func(m *Machine) {
			defer e.bmcServing.Done()
			_ = srv.Serve(machineListener{m.bmcLn, m})
		}(m)
	}
}

func (p bmcPorts) closeBMCPorts() {
	e := p.e
	for _, m := range e.machines {
		if m.bmcLn != nil {
			m.bmcLn.Close()
		}
	}
}

// machineListener tags its connections with their machine (see
// connContext).
type machineListener struct {
	net.Listener
	m *Machine
}

type machineConn struct {
	net.Conn
	m *Machine
}

func (l machineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return machineConn{c, l.m}, nil
}

// connContext puts the machine of a connection made to its own port into
// its requests' context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if mc, ok := c.(machineConn); ok {
		return context.WithValue(ctx, portMachineKey{}, mc.m)
	}
	return ctx
}

// RedfishURL is the Redfish endpoint of m's BMC: its own port with
// Config.BMCPorts, else the shared one.
func (e *Emulator) RedfishURL(m *Machine) string {
	if m.bmcLn != nil {
		return "http://" + m.bmcLn.Addr().String()
	}
	return e.URL()
}

// SessionStats are the counters of machine id's BMC (with Config.BMCPorts),
// or of the shared endpoint when id is "" or the machines share it.
func (e *Emulator) SessionStats(id string) SessionStats {
	if m := e.byID[id]; m != nil && m.bmcLn != nil {
		return m.bmc.Stats()
	}
	return e.shared.Stats()
}

// FleetSessionStats sums the counters of every BMC, except MaxOpen, which
// is the largest of any one BMC.
func (e *Emulator) FleetSessionStats() SessionStats {
	eps := []*endpoint{e.shared}
	for _, m := range e.machines {
		if m.bmcLn != nil {
			eps = append(eps, m.bmc)
		}
	}
	var t SessionStats
	for _, p := range eps {
		s := p.Stats()
		t.Opened += s.Opened
		t.Open += s.Open
		t.MaxOpen = max(t.MaxOpen, s.MaxOpen)
		t.Refused += s.Refused
		t.Expired += s.Expired
		t.RateLimited += s.RateLimited
		t.Transient503 += s.Transient503
	}
	return t
}
